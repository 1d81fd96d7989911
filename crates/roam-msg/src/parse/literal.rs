//! Constant and default values, parsed as rosidl_adapter parses them
//! (`parse_primitive_value_string`, `parse_value_string`).

use crate::schema::{BaseType, FieldType, Literal, Multiplicity, Primitive};

/// Parses the value of a non-array type.
pub(crate) fn parse_scalar(base: &BaseType, text: &str) -> Result<Literal, String> {
    match base {
        BaseType::Primitive(p) => parse_primitive(*p, text),
        BaseType::String { bound } | BaseType::WString { bound } => {
            let s = unquote(text)?;
            check_string_bound(&s, *bound)?;
            Ok(Literal::String(s))
        }
        BaseType::Named(t) => Err(format!("a field of type {t} cannot have a default value")),
    }
}

/// Parses a default value of any field type: arrays are `[a, b, c]`.
pub(crate) fn parse_value(ty: &FieldType, text: &str) -> Result<Literal, String> {
    if ty.multiplicity == Multiplicity::Single {
        return parse_scalar(&ty.base, text);
    }
    let inner = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .ok_or_else(|| format!("array value {text:?} must start with '[' and end with ']'"))?;
    let items = split_items(
        inner,
        matches!(ty.base, BaseType::String { .. } | BaseType::WString { .. }),
    )?;
    check_count(ty.multiplicity, items.len())?;
    items
        .iter()
        .map(|item| {
            parse_scalar(&ty.base, item.trim()).map_err(|e| format!("element {item:?}: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Literal::Array)
}

/// Checks an array literal's length against the field's multiplicity.
pub(crate) fn check_count(m: Multiplicity, n: usize) -> Result<(), String> {
    match m {
        Multiplicity::Fixed(size) if n != size as usize => {
            Err(format!("array must have exactly {size} elements, not {n}"))
        }
        Multiplicity::Bounded(bound) if n > bound as usize => {
            Err(format!("array must have at most {bound} elements, not {n}"))
        }
        _ => Ok(()),
    }
}

pub(crate) fn check_string_bound(s: &str, bound: Option<u32>) -> Result<(), String> {
    match bound {
        Some(b) if s.chars().count() > b as usize => {
            Err(format!("string exceeds its bound of {b} characters"))
        }
        _ => Ok(()),
    }
}

fn parse_primitive(p: Primitive, text: &str) -> Result<Literal, String> {
    match p {
        Primitive::Bool => match text.to_ascii_lowercase().as_str() {
            "true" | "1" => Ok(Literal::Bool(true)),
            "false" | "0" => Ok(Literal::Bool(false)),
            _ => Err(format!("{text:?} is not a bool (true/false/1/0)")),
        },
        Primitive::Float32 | Primitive::Float64 => parse_float(text).map(Literal::Float),
        _ => {
            let v = parse_int(text).ok_or_else(|| format!("{text:?} is not an integer"))?;
            let (lo, hi) = p.int_range().unwrap_or((0, 0));
            if v < lo || v > hi {
                return Err(format!(
                    "{v} is out of range for {} ({lo}..={hi})",
                    p.msg_name()
                ));
            }
            Ok(Literal::Int(v))
        }
    }
}

/// Python's `float()`: decimal, exponent, `inf`, `nan`, optional sign.
pub(crate) fn parse_float(text: &str) -> Result<f64, String> {
    let t = text.trim();
    t.parse::<f64>()
        .map_err(|_| format!("{text:?} is not a floating point number"))
}

/// Python's `int(s)` then `int(s, 0)`: decimal, `0x`, `0o`, `0b`, with a sign.
pub(crate) fn parse_int(text: &str) -> Option<i128> {
    let t = text.trim();
    let (neg, digits) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let lower = digits.to_ascii_lowercase();
    let (radix, body) = if let Some(b) = lower.strip_prefix("0x") {
        (16, b)
    } else if let Some(b) = lower.strip_prefix("0o") {
        (8, b)
    } else if let Some(b) = lower.strip_prefix("0b") {
        (2, b)
    } else {
        (10, lower.as_str())
    };
    if body.is_empty() || body.starts_with(['+', '-']) {
        return None;
    }
    let v = i128::from_str_radix(&body.replace('_', ""), radix).ok()?;
    Some(if neg { -v } else { v })
}

/// Removes one pair of matching outer quotes and unescapes the quote inside, as rosidl does;
/// unquoted text is taken as it is.
pub(crate) fn unquote(text: &str) -> Result<String, String> {
    for q in ['"', '\''] {
        if text.len() >= 2 && text.starts_with(q) && text.ends_with(q) {
            let inner = &text[1..text.len() - 1];
            let bytes = inner.as_bytes();
            for (i, c) in inner.char_indices() {
                if c == q && (i == 0 || bytes[i - 1] != b'\\') {
                    return Err(format!("string {text:?} has an unescaped inner quote"));
                }
            }
            return Ok(inner.replace(&format!("\\{q}"), &q.to_string()));
        }
    }
    Ok(text.to_string())
}

/// Splits the inside of an array literal at commas; string elements may be quoted (and then hold
/// commas).
pub(crate) fn split_items(inner: &str, strings: bool) -> Result<Vec<String>, String> {
    if !strings {
        if inner.trim().is_empty() {
            return Ok(Vec::new());
        }
        return Ok(inner.split(',').map(|s| s.trim().to_string()).collect());
    }
    split_string_array(inner)
}

fn split_string_array(mut rest: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    loop {
        rest = rest.trim_start();
        if rest.is_empty() {
            return Ok(out);
        }
        if rest.starts_with(',') {
            return Err(format!("unexpected ',' at {rest:?}"));
        }
        let quote = rest.chars().next().filter(|c| *c == '"' || *c == '\'');
        if let Some(q) = quote {
            let bytes = rest.as_bytes();
            let end = (1..bytes.len())
                .find(|&i| bytes[i] == q as u8 && bytes[i - 1] != b'\\')
                .ok_or_else(|| format!("string {rest:?} is not closed"))?;
            out.push(rest[..=end].to_string());
            rest = &rest[end + 1..];
        } else {
            let end = rest.find(',').unwrap_or(rest.len());
            out.push(rest[..end].trim_end().to_string());
            rest = &rest[end..];
        }
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix(',') {
            rest = r;
        } else if !rest.is_empty() {
            return Err(format!("expected ',' at {rest:?}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_like_python() {
        assert_eq!(parse_int("0x10"), Some(16));
        assert_eq!(parse_int("-0b101"), Some(-5));
        assert_eq!(parse_int("0o17"), Some(15));
        assert_eq!(parse_int("18446744073709551615"), Some(u64::MAX as i128));
        assert_eq!(parse_int("1.5"), None);
        assert_eq!(parse_int("--1"), None);
    }

    #[test]
    fn string_arrays_keep_quoted_commas() {
        let ty = FieldType {
            base: BaseType::String { bound: None },
            multiplicity: Multiplicity::Unbounded,
        };
        let v = parse_value(&ty, r#"["a,b", 'c', d]"#).unwrap();
        assert_eq!(
            v,
            Literal::Array(vec![
                Literal::String("a,b".into()),
                Literal::String("c".into()),
                Literal::String("d".into())
            ])
        );
    }

    #[test]
    fn bounds_are_checked() {
        let ty = FieldType {
            base: BaseType::Primitive(Primitive::Int8),
            multiplicity: Multiplicity::Fixed(2),
        };
        assert!(parse_value(&ty, "[1, 2, 3]").is_err());
        assert!(parse_value(&ty, "[1, 200]").is_err());
        assert_eq!(
            parse_value(&ty, "[1, -2]").unwrap(),
            Literal::Array(vec![Literal::Int(1), Literal::Int(-2)])
        );
        assert!(parse_scalar(&BaseType::String { bound: Some(2) }, "'abc'").is_err());
    }
}
