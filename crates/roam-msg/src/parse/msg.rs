//! `.msg`, `.srv` and `.action` text, read as rosidl_adapter reads it (`parser.py`): tabs are
//! spaces, `#` starts a comment anywhere on a line (string constants included), a line is
//! `TYPE NAME`, `TYPE NAME DEFAULT` or `TYPE NAME=VALUE`, and `---` alone on a line separates
//! the parts of a service or action.

use crate::error::ParseError;
use crate::names::{is_member_name, is_package_name, is_type_name, Kind, TypeName};
use crate::parse::literal::{parse_scalar, parse_value};
use crate::schema::{BaseType, Constant, Field, FieldType, MessageDef, Multiplicity, Primitive};

/// Sizes and bounds above this are refused: no real interface comes near it, and it keeps
/// every later size computation far from overflow.
pub const MAX_BOUND: u32 = 1 << 30;

/// Parses one message definition.
pub fn parse_msg(name: &TypeName, text: &str) -> Result<MessageDef, ParseError> {
    parse_lines(name, text, 0)
}

/// Parses a `.srv`: gives `X_Request` and `X_Response` (in the service's package, kind `srv`).
pub fn parse_srv(name: &TypeName, text: &str) -> Result<[MessageDef; 2], ParseError> {
    let parts = split_parts(name, text, 2)?;
    Ok([
        parse_lines(
            &name.sibling(format!("{}_Request", name.name)),
            &parts[0].1,
            parts[0].0,
        )?,
        parse_lines(
            &name.sibling(format!("{}_Response", name.name)),
            &parts[1].1,
            parts[1].0,
        )?,
    ])
}

/// Parses a `.action`: gives `X_Goal`, `X_Result` and `X_Feedback`; the derived types come
/// from [`crate::parse::derive::action_types`].
pub fn parse_action(name: &TypeName, text: &str) -> Result<[MessageDef; 3], ParseError> {
    let parts = split_parts(name, text, 3)?;
    Ok([
        parse_lines(
            &name.sibling(format!("{}_Goal", name.name)),
            &parts[0].1,
            parts[0].0,
        )?,
        parse_lines(
            &name.sibling(format!("{}_Result", name.name)),
            &parts[1].1,
            parts[1].0,
        )?,
        parse_lines(
            &name.sibling(format!("{}_Feedback", name.name)),
            &parts[2].1,
            parts[2].0,
        )?,
    ])
}

/// Splits at lines that are exactly `---`; returns (first line index, text) per part.
fn split_parts(
    name: &TypeName,
    text: &str,
    want: usize,
) -> Result<Vec<(usize, String)>, ParseError> {
    let mut parts = vec![(0usize, String::new())];
    for (i, line) in text.lines().enumerate() {
        if line == "---" {
            parts.push((i + 1, String::new()));
        } else if let Some(last) = parts.last_mut() {
            last.1.push_str(line);
            last.1.push('\n');
        }
    }
    if parts.len() != want {
        return Err(ParseError {
            ty: name.full(),
            line: 0,
            message: format!(
                "expected {} parts separated by '---' lines, found {}",
                want,
                parts.len()
            ),
        });
    }
    Ok(parts)
}

fn parse_lines(name: &TypeName, text: &str, first_line: usize) -> Result<MessageDef, ParseError> {
    let mut def = MessageDef {
        name: name.clone(),
        fields: Vec::new(),
        constants: Vec::new(),
    };
    for (i, raw) in text.lines().enumerate() {
        let err = |message: String| ParseError {
            ty: name.full(),
            line: first_line + i + 1,
            message,
        };
        let line = raw.replace('\t', " ");
        let line = match line.find('#') {
            Some(idx) => &line[..idx],
            None => &line[..],
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let (type_text, rest) = line
            .split_once(' ')
            .ok_or_else(|| err(format!("{line:?} has a type but no name")))?;
        let rest = rest.trim_start();
        if let Some((cname, value)) = rest.split_once('=') {
            let cname = cname.trim_end();
            if !is_member_name(cname) {
                return Err(err(format!("invalid constant name {cname:?}")));
            }
            let ty = parse_field_type(type_text, &name.package).map_err(&err)?;
            if ty.multiplicity != Multiplicity::Single || matches!(ty.base, BaseType::Named(_)) {
                return Err(err(format!(
                    "constant {cname} must have a primitive or string type"
                )));
            }
            let value = parse_scalar(&ty.base, value.trim_start())
                .map_err(|e| err(format!("constant {cname}: {e}")))?;
            if def.constants.iter().any(|c| c.name == cname) {
                return Err(err(format!("constant {cname} defined twice")));
            }
            def.constants.push(Constant {
                name: cname.to_string(),
                ty: ty.base,
                value,
            });
        } else {
            let (fname, default) = match rest.split_once(' ') {
                Some((n, d)) => (n, Some(d.trim())),
                None => (rest, None),
            };
            if !is_member_name(fname) {
                return Err(err(format!("invalid field name {fname:?}")));
            }
            let ty = parse_field_type(type_text, &name.package).map_err(&err)?;
            let default = match default.filter(|d| !d.is_empty()) {
                Some(d) => {
                    Some(parse_value(&ty, d).map_err(|e| err(format!("default of {fname}: {e}")))?)
                }
                None => None,
            };
            if def.fields.iter().any(|f| f.name == fname) {
                return Err(err(format!("field {fname} defined twice")));
            }
            def.fields.push(Field {
                name: fname.to_string(),
                ty,
                default,
            });
        }
    }
    Ok(def)
}

/// Parses a `.msg` field type: `float64`, `string<=8`, `Point[3]`, `pkg/Type[<=5]`, `uint8[]`.
/// A bare type name belongs to `context_package`; a bare `Header` means `std_msgs/Header`
/// (the ROS 1 convention that recorded definitions still use).
pub(crate) fn parse_field_type(text: &str, context_package: &str) -> Result<FieldType, String> {
    let (base_text, multiplicity) = match text.strip_suffix(']') {
        Some(head) => {
            let open = head
                .rfind('[')
                .ok_or_else(|| format!("type {text:?} ends with ']' but has no '['"))?;
            let size = &head[open + 1..];
            let m = if size.is_empty() {
                Multiplicity::Unbounded
            } else if let Some(b) = size.strip_prefix("<=") {
                Multiplicity::Bounded(parse_size(b, text)?)
            } else {
                Multiplicity::Fixed(parse_size(size, text)?)
            };
            (&head[..open], m)
        }
        None => (text, Multiplicity::Single),
    };
    Ok(FieldType {
        base: parse_base_type(base_text, context_package)?,
        multiplicity,
    })
}

fn parse_size(s: &str, whole: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(n) if n > 0 && n <= MAX_BOUND => Ok(n),
        _ => Err(format!(
            "size in {whole:?} must be an integer between 1 and {MAX_BOUND}"
        )),
    }
}

fn parse_base_type(text: &str, context_package: &str) -> Result<BaseType, String> {
    if let Some(p) = Primitive::from_msg_name(text) {
        return Ok(BaseType::Primitive(p));
    }
    match text {
        "string" => return Ok(BaseType::String { bound: None }),
        "wstring" => return Ok(BaseType::WString { bound: None }),
        "time" => return Ok(BaseType::Named(builtin("Time"))),
        "duration" => return Ok(BaseType::Named(builtin("Duration"))),
        "Header" => {
            return Ok(BaseType::Named(TypeName {
                package: "std_msgs".into(),
                kind: Kind::Msg,
                name: "Header".into(),
            }))
        }
        _ => {}
    }
    if let Some(b) = text.strip_prefix("string<=") {
        return Ok(BaseType::String {
            bound: Some(parse_size(b, text)?),
        });
    }
    if let Some(b) = text.strip_prefix("wstring<=") {
        return Ok(BaseType::WString {
            bound: Some(parse_size(b, text)?),
        });
    }
    let name = if text.contains('/') {
        TypeName::parse(text).map_err(|e| e.to_string())?
    } else {
        if !is_package_name(context_package) || !is_type_name(text) {
            return Err(format!("unknown type {text:?}"));
        }
        TypeName {
            package: context_package.to_string(),
            kind: Kind::Msg,
            name: text.to_string(),
        }
    };
    Ok(BaseType::Named(name))
}

fn builtin(name: &str) -> TypeName {
    TypeName {
        package: "builtin_interfaces".into(),
        kind: Kind::Msg,
        name: name.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::Literal;

    fn tn(s: &str) -> TypeName {
        TypeName::parse(s).unwrap()
    }

    #[test]
    fn fields_constants_defaults_and_comments() {
        let text = "# a file comment\nint8 A=-2 # trailing\nstring S= hi there #x\n\
                    Header header\nPoint p\ngeometry_msgs/Pose[<=3] poses\nfloat64[3] v [1, 2.5, -inf]\n\
                    string<=5 name \"ab c\"\n\tuint8[] data\nbool flag true\n";
        let def = parse_msg(&tn("my_pkg/msg/T"), text).unwrap();
        assert_eq!(def.constants[0].value, Literal::Int(-2));
        assert_eq!(def.constants[1].value, Literal::String("hi there".into()));
        assert_eq!(
            def.fields[0].ty.base,
            BaseType::Named(tn("std_msgs/msg/Header"))
        );
        assert_eq!(
            def.fields[1].ty.base,
            BaseType::Named(tn("my_pkg/msg/Point"))
        );
        assert_eq!(def.fields[2].ty.multiplicity, Multiplicity::Bounded(3));
        assert_eq!(
            def.fields[3].default,
            Some(Literal::Array(vec![
                Literal::Float(1.0),
                Literal::Float(2.5),
                Literal::Float(f64::NEG_INFINITY)
            ]))
        );
        assert_eq!(def.fields[4].default, Some(Literal::String("ab c".into())));
        assert_eq!(def.fields[4].ty.base, BaseType::String { bound: Some(5) });
        assert_eq!(def.fields[6].default, Some(Literal::Bool(true)));
        // The canonical text parses back to the same definition.
        assert_eq!(parse_msg(&def.name, &def.to_msg_text()).unwrap(), def);
    }

    #[test]
    fn string_constants_that_need_quotes_keep_them_in_the_canonical_text() {
        // Values a bare constant would lose: blanks at its ends, one pair of enclosing quotes.
        let text =
            "string A=' '\nstring B=\" x\"\nstring C=\"'q'\"\nstring D='\"'\nstring E=plain text\n";
        let def = parse_msg(&tn("p/msg/T"), text).unwrap();
        let values: Vec<&Literal> = def.constants.iter().map(|c| &c.value).collect();
        let s = |v: &str| Literal::String(v.into());
        assert_eq!(
            values,
            [&s(" "), &s(" x"), &s("'q'"), &s("\""), &s("plain text")]
        );
        let again = def.to_msg_text();
        assert_eq!(parse_msg(&def.name, &again).unwrap(), def, "{again}");
        assert!(again.contains("string E=plain text\n"), "{again}");
    }

    #[test]
    fn string_array_elements_ending_in_a_backslash_survive_the_canonical_text() {
        // Quoted, `"a\"` would leave its closing quote escaped; bare, it reads back.
        let text = "string[] d [\\, a\\, \"q,\", \"x\\\"y\"]\nstring[<=2] e [b\\]\n";
        let def = parse_msg(&tn("p/msg/T"), text).unwrap();
        let s = |v: &str| Literal::String(v.into());
        assert_eq!(
            def.fields[0].default,
            Some(Literal::Array(vec![s("\\"), s("a\\"), s("q,"), s("x\"y")]))
        );
        let again = def.to_msg_text();
        assert_eq!(parse_msg(&def.name, &again).unwrap(), def, "{again}");
        // Other elements stay quoted as before.
        assert!(again.contains(r#"[\, a\, "q,", "x\"y"]"#), "{again}");
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_msg(&tn("p/msg/T"), "int32 a\nint32\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(parse_msg(&tn("p/msg/T"), "int8 a 300\n").is_err());
        assert!(parse_msg(&tn("p/msg/T"), "int8[0] a\n").is_err());
        assert!(parse_msg(&tn("p/msg/T"), "int8 a\nint8 a\n").is_err());
        assert!(parse_msg(&tn("p/msg/T"), "Point[] P=1\n").is_err());
    }

    #[test]
    fn services_and_actions_split() {
        let [req, res] = parse_srv(
            &tn("example_interfaces/srv/AddTwoInts"),
            "int64 a\nint64 b\n---\nint64 sum\n",
        )
        .unwrap();
        assert_eq!(req.name.full(), "example_interfaces/srv/AddTwoInts_Request");
        assert_eq!(res.fields[0].name, "sum");
        let [g, r, f] = parse_action(
            &tn("example_interfaces/action/Fibonacci"),
            "int32 order\n---\nint32[] sequence\n---\nint32[] sequence\n",
        )
        .unwrap();
        assert_eq!(g.name.full(), "example_interfaces/action/Fibonacci_Goal");
        assert_eq!(r.name.name, "Fibonacci_Result");
        assert_eq!(f.name.name, "Fibonacci_Feedback");
        assert!(parse_srv(&tn("p/srv/S"), "int8 a\n").is_err());
    }
}
