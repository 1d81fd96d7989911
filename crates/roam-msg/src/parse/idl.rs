//! The `.idl` subset rosidl emits (`rosidl_adapter`'s `msg.idl.em`, `srv.idl.em`,
//! `action.idl.em`): nested `module pkg { module msg { ... } }`, `struct`s, `typedef`s for
//! fixed arrays, `Type_Constants` modules of `const`s, `sequence<T>`, `sequence<T, N>`,
//! `string<N>`, `wstring`, and the `@default`, `@verbatim`, `@unit`, `@key` annotations
//! (only `@default` changes the type; the others are read and dropped).

use std::collections::HashMap;

use crate::error::ParseError;
use crate::names::{Kind, TypeName};
use crate::parse::derive;
use crate::parse::literal::{check_count, parse_scalar};
use crate::parse::msg::MAX_BOUND;
use crate::schema::{
    BaseType, Constant, Field, FieldType, Literal, MessageDef, Multiplicity, Primitive,
};

use crate::parse::idl_lex::{tokenize, Tok};

struct Parser {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    /// Module path, e.g. ["std_msgs", "msg"].
    scope: Vec<String>,
    typedefs: HashMap<String, FieldType>,
    constants: HashMap<String, Vec<Constant>>,
    defs: Vec<MessageDef>,
}

/// Parses a rosidl `.idl` text into its structures (with constants from `X_Constants` modules
/// attached to `X`); services and actions also get their derived types.
pub fn parse_idl(text: &str) -> Result<Vec<MessageDef>, ParseError> {
    let mut p = Parser {
        toks: tokenize(text)?,
        pos: 0,
        scope: Vec::new(),
        typedefs: HashMap::new(),
        constants: HashMap::new(),
        defs: Vec::new(),
    };
    while p.pos < p.toks.len() {
        p.definition()?;
    }
    let mut defs = std::mem::take(&mut p.defs);
    for def in &mut defs {
        if let Some(c) = p.constants.remove(&def.name.full()) {
            def.constants = c;
        }
    }
    if let Some((name, _)) = p.constants.into_iter().next() {
        return Err(ParseError {
            ty: name.clone(),
            line: 0,
            message: format!("constants module for {name}, which the file does not define"),
        });
    }
    let has = |defs: &[MessageDef], t: &TypeName| defs.iter().any(|d| d.name == *t);
    let mut derived = Vec::new();
    for d in &defs {
        if let Some(base) = d
            .name
            .name
            .strip_suffix("_Request")
            .filter(|_| d.name.kind == Kind::Srv)
        {
            let svc = d.name.sibling(base.to_string());
            if has(&defs, &svc.sibling(format!("{base}_Response")))
                && !base.ends_with("_SendGoal")
                && !base.ends_with("_GetResult")
            {
                derived.push(derive::service_event(&svc));
            }
        }
        if let Some(base) = d
            .name
            .name
            .strip_suffix("_Goal")
            .filter(|_| d.name.kind == Kind::Action)
        {
            let act = d.name.sibling(base.to_string());
            if has(&defs, &act.sibling(format!("{base}_Result")))
                && has(&defs, &act.sibling(format!("{base}_Feedback")))
            {
                derived.extend(derive::action_types(&act));
            }
        }
    }
    for d in derived {
        if !has(&defs, &d.name) {
            defs.push(d);
        }
    }
    Ok(defs)
}

impl Parser {
    fn line(&self) -> usize {
        self.toks
            .get(self.pos)
            .or(self.toks.last())
            .map_or(0, |t| t.1)
    }

    fn err(&self, message: impl Into<String>) -> ParseError {
        ParseError {
            ty: if self.scope.is_empty() {
                "idl".into()
            } else {
                self.scope.join("::")
            },
            line: self.line(),
            message: message.into(),
        }
    }

    fn next(&mut self) -> Result<Tok, ParseError> {
        let t = self
            .toks
            .get(self.pos)
            .map(|t| t.0.clone())
            .ok_or_else(|| self.err("unexpected end of file"))?;
        self.pos += 1;
        Ok(t)
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.0)
    }

    fn punct(&mut self, c: char) -> Result<(), ParseError> {
        match self.next()? {
            Tok::Punct(p) if p == c => Ok(()),
            other => Err(self.err(format!("expected '{c}', found {other:?}"))),
        }
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(&Tok::Punct(c)) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn ident(&mut self) -> Result<String, ParseError> {
        match self.next()? {
            Tok::Ident(s) => Ok(s),
            other => Err(self.err(format!("expected a name, found {other:?}"))),
        }
    }

    fn definition(&mut self) -> Result<(), ParseError> {
        let annotations = self.annotations()?;
        let kw = self.ident()?;
        match kw.as_str() {
            "module" => {
                let name = self.ident()?;
                self.punct('{')?;
                self.scope.push(name);
                while !self.eat('}') {
                    self.definition()?;
                }
                self.scope.pop();
                self.eat(';');
                Ok(())
            }
            "struct" => self.structure(),
            "typedef" => {
                let base = self.type_spec()?;
                let name = self.ident()?;
                let ty = self.declarator(base)?;
                self.punct(';')?;
                self.typedefs.insert(name, ty);
                Ok(())
            }
            "const" => {
                let ty = self.type_spec()?;
                let name = self.ident()?;
                self.punct('=')?;
                let value = self.literal(&ty.base)?;
                self.punct(';')?;
                let owner = self.constants_owner()?;
                self.constants.entry(owner).or_default().push(Constant {
                    name,
                    ty: ty.base,
                    value,
                });
                Ok(())
            }
            other => Err(self.err(format!(
                "unsupported IDL construct {other:?} {annotations:?}"
            ))),
        }
    }

    /// `module Foo_Constants` inside `pkg::msg` holds the constants of `pkg/msg/Foo`.
    fn constants_owner(&self) -> Result<String, ParseError> {
        match self.scope.as_slice() {
            [pkg, kind, m] if m.ends_with("_Constants") => {
                let kind = kind_of(kind)
                    .ok_or_else(|| self.err(format!("unknown interface kind {kind}")))?;
                let name = TypeName::new(pkg, kind, &m[..m.len() - "_Constants".len()])
                    .map_err(|e| self.err(e.to_string()))?;
                Ok(name.full())
            }
            _ => Err(self.err("constants must sit in a module pkg::msg::Type_Constants")),
        }
    }

    fn structure(&mut self) -> Result<(), ParseError> {
        let name = self.ident()?;
        let tn = match self.scope.as_slice() {
            [pkg, kind] => {
                let kind = kind_of(kind)
                    .ok_or_else(|| self.err(format!("unknown interface kind {kind}")))?;
                TypeName::new(pkg, kind, &name).map_err(|e| self.err(e.to_string()))?
            }
            _ => {
                return Err(self.err(format!(
                    "struct {name} must sit in a module pkg::msg (or srv, action)"
                )))
            }
        };
        self.punct('{')?;
        let mut fields = Vec::new();
        while !self.eat('}') {
            let annotations = self.annotations()?;
            let base = self.type_spec()?;
            let fname = self.ident()?;
            let ty = self.declarator(base)?;
            self.punct(';')?;
            let default = match annotations.into_iter().find(|(n, _)| n == "default") {
                Some((_, Some(text))) => Some(self.default_value(&ty, &text)?),
                _ => None,
            };
            fields.push(Field {
                name: fname,
                ty,
                default,
            });
        }
        self.eat(';');
        // rosidl's placeholder member of an empty struct is not a field of the message.
        if fields.len() == 1 && fields[0].name == "structure_needs_at_least_one_member" {
            fields.clear();
        }
        self.defs.push(MessageDef {
            name: tn,
            fields,
            constants: Vec::new(),
        });
        Ok(())
    }

    /// Reads `@name` or `@name (key=value, ...)`; returns (name, the `value=` literal as text).
    fn annotations(&mut self) -> Result<Vec<(String, Option<String>)>, ParseError> {
        let mut out = Vec::new();
        while self.eat('@') {
            let name = self.ident()?;
            let mut value = None;
            if self.eat('(') {
                // key=value pairs up to the matching ')'; only `value`'s tokens are kept.
                let (mut depth, mut key, mut text) = (1, String::new(), String::new());
                let mut in_value = false;
                while depth > 0 {
                    let t = self.next()?;
                    match (&t, in_value) {
                        (Tok::Punct('('), _) => depth += 1,
                        (Tok::Punct(')'), _) => depth -= 1,
                        (Tok::Punct(','), _) if depth == 1 => in_value = false,
                        (Tok::Punct('='), false) if depth == 1 => in_value = key == "value",
                        (Tok::Ident(k), false) => key = k.clone(),
                        (Tok::Str(s), true) => {
                            text.push_str(&format!("\"{}\"", s.replace('"', "\\\"")))
                        }
                        (Tok::Num(n) | Tok::Ident(n), true) => text.push_str(n),
                        (Tok::Punct(c), true) => text.push(*c),
                        _ => {}
                    }
                }
                if !text.is_empty() {
                    value = Some(text);
                }
            }
            out.push((name, value));
        }
        Ok(out)
    }

    fn type_spec(&mut self) -> Result<FieldType, ParseError> {
        let single = |base| FieldType {
            base,
            multiplicity: Multiplicity::Single,
        };
        let first = self.ident()?;
        let prim = |p| Ok(single(BaseType::Primitive(p)));
        match first.as_str() {
            "boolean" => prim(Primitive::Bool),
            "octet" => prim(Primitive::Byte),
            "char" => prim(Primitive::Char),
            "int8" => prim(Primitive::Int8),
            "uint8" => prim(Primitive::UInt8),
            "int16" | "short" => prim(Primitive::Int16),
            "uint16" => prim(Primitive::UInt16),
            "int32" => prim(Primitive::Int32),
            "uint32" => prim(Primitive::UInt32),
            "int64" => prim(Primitive::Int64),
            "uint64" => prim(Primitive::UInt64),
            "float" => prim(Primitive::Float32),
            "double" => prim(Primitive::Float64),
            "long" => {
                if self.peek() == Some(&Tok::Ident("long".into())) {
                    self.pos += 1;
                    return prim(Primitive::Int64);
                }
                if self.peek() == Some(&Tok::Ident("double".into())) {
                    return Err(self.err("long double has no ROS 2 counterpart"));
                }
                prim(Primitive::Int32)
            }
            "unsigned" => match self.ident()?.as_str() {
                "short" => prim(Primitive::UInt16),
                "long" if self.peek() == Some(&Tok::Ident("long".into())) => {
                    self.pos += 1;
                    prim(Primitive::UInt64)
                }
                "long" => prim(Primitive::UInt32),
                other => Err(self.err(format!("unknown type unsigned {other}"))),
            },
            "string" | "wstring" => {
                let bound = if self.eat('<') {
                    let n = self.size()?;
                    self.punct('>')?;
                    Some(n)
                } else {
                    None
                };
                Ok(single(if first == "string" {
                    BaseType::String { bound }
                } else {
                    BaseType::WString { bound }
                }))
            }
            "sequence" => {
                self.punct('<')?;
                let inner = self.type_spec()?;
                if inner.multiplicity != Multiplicity::Single {
                    return Err(self.err("sequences of arrays have no ROS 2 counterpart"));
                }
                let multiplicity = if self.eat(',') {
                    Multiplicity::Bounded(self.size()?)
                } else {
                    Multiplicity::Unbounded
                };
                self.punct('>')?;
                Ok(FieldType {
                    base: inner.base,
                    multiplicity,
                })
            }
            _ => {
                let mut parts = vec![first];
                while self.peek() == Some(&Tok::Punct(':')) {
                    self.punct(':')?;
                    self.punct(':')?;
                    parts.push(self.ident()?);
                }
                self.named(parts)
            }
        }
    }

    fn named(&self, parts: Vec<String>) -> Result<FieldType, ParseError> {
        if parts.len() == 1 {
            if let Some(t) = self.typedefs.get(&parts[0]) {
                return Ok(t.clone());
            }
        }
        let (pkg, kind, name) = match parts.as_slice() {
            [pkg, kind, name] => (pkg.as_str(), kind.as_str(), name.as_str()),
            [name] => match self.scope.as_slice() {
                [pkg, kind, ..] => (pkg.as_str(), kind.as_str(), name.as_str()),
                _ => return Err(self.err(format!("unknown type {name}"))),
            },
            _ => return Err(self.err(format!("unsupported scoped name {}", parts.join("::")))),
        };
        let kind =
            kind_of(kind).ok_or_else(|| self.err(format!("unknown interface kind {kind}")))?;
        let t = TypeName::new(pkg, kind, name).map_err(|e| self.err(e.to_string()))?;
        Ok(FieldType {
            base: BaseType::Named(t),
            multiplicity: Multiplicity::Single,
        })
    }

    /// An optional `[N]` after a declared name.
    fn declarator(&mut self, base: FieldType) -> Result<FieldType, ParseError> {
        if !self.eat('[') {
            return Ok(base);
        }
        let n = self.size()?;
        self.punct(']')?;
        if base.multiplicity != Multiplicity::Single {
            return Err(self.err("arrays of arrays or sequences have no ROS 2 counterpart"));
        }
        Ok(FieldType {
            base: base.base,
            multiplicity: Multiplicity::Fixed(n),
        })
    }

    fn size(&mut self) -> Result<u32, ParseError> {
        match self.next()? {
            Tok::Num(n) => match n.parse::<u32>() {
                Ok(v) if v > 0 && v <= MAX_BOUND => Ok(v),
                _ => Err(self.err(format!("size {n} must be between 1 and {MAX_BOUND}"))),
            },
            other => Err(self.err(format!("expected a size, found {other:?}"))),
        }
    }

    fn literal(&mut self, base: &BaseType) -> Result<Literal, ParseError> {
        let neg = self.eat('-');
        let text = match self.next()? {
            Tok::Num(n) if neg => format!("-{n}"),
            Tok::Num(n) => n,
            Tok::Ident(s) if s == "TRUE" || s == "FALSE" => s.to_ascii_lowercase(),
            Tok::Str(s) => format!("\"{}\"", s.replace('"', "\\\"")),
            other => return Err(self.err(format!("unsupported constant value {other:?}"))),
        };
        parse_scalar(base, &text).map_err(|e| self.err(e))
    }

    /// `@default (value=...)`: scalars as literals, arrays as a string holding a Python tuple
    /// (`"(1, 2, 3)"`, rosidl's `to_idl_literal`).
    fn default_value(&self, ty: &FieldType, text: &str) -> Result<Literal, ParseError> {
        let text = match text {
            "TRUE" => "true",
            "FALSE" => "false",
            t => t,
        };
        if ty.multiplicity == Multiplicity::Single {
            return parse_scalar(&ty.base, text).map_err(|e| self.err(e));
        }
        let inner = text
            .strip_prefix("\"(")
            .and_then(|t| t.strip_suffix(")\""))
            .ok_or_else(|| {
                self.err(format!("array default {text:?} is not a tuple in a string"))
            })?;
        let inner = inner.replace("\\\"", "\"");
        let inner = inner.trim().trim_end_matches(',');
        let items = crate::parse::literal::split_items(
            inner,
            matches!(ty.base, BaseType::String { .. } | BaseType::WString { .. }),
        )
        .map_err(|e| self.err(e))?;
        check_count(ty.multiplicity, items.len()).map_err(|e| self.err(e))?;
        let items = items
            .iter()
            .map(|i| {
                let i = match i.trim() {
                    "True" => "true",
                    "False" => "false",
                    t => t,
                };
                parse_scalar(&ty.base, i).map_err(|e| self.err(e))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Literal::Array(items))
    }
}

fn kind_of(s: &str) -> Option<Kind> {
    match s {
        "msg" => Some(Kind::Msg),
        "srv" => Some(Kind::Srv),
        "action" => Some(Kind::Action),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::msg::parse_msg;

    #[test]
    fn rosidl_style_idl_matches_msg() {
        let idl = r#"
// generated from rosidl_adapter/resource/msg.idl.em
#include "geometry_msgs/msg/Pose.idl"

module my_pkg {
  module msg {
    typedef double double__36[36];
    typedef geometry_msgs::msg::Pose geometry_msgs__msg__Pose;
    typedef geometry_msgs__msg__Pose geometry_msgs__msg__Pose__2[2];
    module Thing_Constants {
      @verbatim (language="comment", text=
        "a" "\n"
        "b")
      const int8 STATUS_NO_FIX = -1;
      const string NAME = "x y";
    };
    @verbatim (language="comment", text=
      "Doc.")
    struct Thing {
      geometry_msgs::msg::Pose pose;

      @verbatim (language="comment", text=
        "Row-major [m]")
      @unit (value="m")
      double__36 covariance;
      geometry_msgs__msg__Pose__2 two;
      sequence<float, 5> bounded;
      sequence<string<8>> names;
      @default (value=1.5)
      double d;
      @default (value="(1, 2, 3)")
      int32 v[3];
      @default (value="('a', 'b,c')")
      sequence<string> s;
      @default (value=TRUE)
      boolean flag;
      wstring w;
    };
  };
};
"#;
        let defs = parse_idl(idl).unwrap();
        let msg = "int8 STATUS_NO_FIX=-1\nstring NAME=x y\ngeometry_msgs/Pose pose\nfloat64[36] covariance\n\
                   geometry_msgs/Pose[2] two\nfloat32[<=5] bounded\nstring<=8[] names\nfloat64 d 1.5\n\
                   int32[3] v [1, 2, 3]\nstring[] s [\"a\", \"b,c\"]\nbool flag true\nwstring w\n";
        assert_eq!(
            defs,
            vec![parse_msg(&TypeName::parse("my_pkg/msg/Thing").unwrap(), msg).unwrap()]
        );
    }

    #[test]
    fn actions_and_empty_structs() {
        let idl = "module p { module action { struct F_Goal { int32 order; }; struct F_Result { sequence<int32> s; };\
                   struct F_Feedback { uint8 structure_needs_at_least_one_member; }; }; };";
        let defs = parse_idl(idl).unwrap();
        assert_eq!(defs.len(), 8);
        assert!(defs[2].fields.is_empty());
        assert!(parse_idl("module p { module msg { struct X { foo bar; }; }; };").is_ok());
        assert!(parse_idl("module p { struct X { int8 a; }; };").is_err());
        assert!(parse_idl("module p { module msg { struct X { int8 a[0]; }; }; };").is_err());
        assert!(parse_idl("module p { module msg { union X { }; }; };").is_err());
        assert!(parse_idl("module p { module msg { struct X { int8 a; ").is_err());
    }
}
