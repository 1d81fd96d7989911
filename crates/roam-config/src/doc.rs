//! A configuration file's text, and errors that point into it: file, line and field.
//!
//! Finding the line: serde_yaml_ng records the position of the value it was reading when a
//! `Deserialize` impl fails. [`line_of`] walks the document to the field a [`FieldPath`] names
//! (`exports[1].as`, `dds.domain`) and fails there on purpose; the error's position is the
//! field's line. The walk uses the same parser as the configuration itself, so flow style
//! (`dds: {domain: 3}`), quoting and repeated values are found exactly where the parser saw
//! them, never at the first line that happens to contain the same text.

use std::fmt;

use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// One step of a path into a YAML document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    Key(String),
    Index(usize),
}

/// Where a field is: `link.idle_timeout_ms`, `exports[1].as`, `realms.warehouse`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldPath(Vec<Seg>);

impl FieldPath {
    /// A path of keys separated by '.', e.g. `"dds.domain"` (no indices; see [`Self::index`]).
    pub fn new(dotted: &str) -> Self {
        Self(
            dotted
                .split('.')
                .filter(|k| !k.is_empty())
                .map(|k| Seg::Key(k.to_string()))
                .collect(),
        )
    }

    pub fn key(mut self, k: &str) -> Self {
        self.0.push(Seg::Key(k.to_string()));
        self
    }

    pub fn index(mut self, i: usize) -> Self {
        self.0.push(Seg::Index(i));
        self
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, s) in self.0.iter().enumerate() {
            match s {
                Seg::Key(k) if n == 0 => write!(f, "{k}")?,
                Seg::Key(k) => write!(f, ".{k}")?,
                Seg::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

/// A mistake in a configuration: which file, which line (when the field is in the file),
/// which field, and what is wrong and what would be valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigError {
    pub origin: String,
    pub line: Option<usize>,
    /// The field's path (`exports[1].as`); empty for mistakes of the whole file.
    pub field: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.origin)?;
        if let Some(l) = self.line {
            write!(f, "line {l}: ")?;
        }
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

impl From<ConfigError> for String {
    fn from(e: ConfigError) -> String {
        e.to_string()
    }
}

/// Why a configuration file was not taken: it could not be read, or it holds a mistake.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Config(#[from] ConfigError),
}

impl LoadError {
    /// Reads `path` as text.
    pub fn read(path: &std::path::Path) -> Result<String, LoadError> {
        std::fs::read_to_string(path).map_err(|source| LoadError::Read {
            path: path.to_owned(),
            source,
        })
    }
}

impl From<LoadError> for String {
    fn from(e: LoadError) -> String {
        e.to_string()
    }
}

/// A configuration file's text and where it came from, to make located errors.
#[derive(Debug, Clone, Copy)]
pub struct Doc<'a> {
    pub text: &'a str,
    pub origin: &'a str,
}

impl<'a> Doc<'a> {
    pub fn new(text: &'a str, origin: &'a str) -> Self {
        Self { text, origin }
    }

    /// An error at `field`, with its line when the field is in the file.
    pub fn err(&self, field: &FieldPath, message: impl Into<String>) -> ConfigError {
        ConfigError {
            origin: self.origin.to_string(),
            line: line_of(self.text, field),
            field: field.to_string(),
            message: message.into(),
        }
    }

    /// An error about the file as a whole.
    pub fn whole(&self, message: impl Into<String>) -> ConfigError {
        ConfigError {
            origin: self.origin.to_string(),
            line: None,
            field: String::new(),
            message: message.into(),
        }
    }

    /// Parses the text, reporting syntax and type mistakes with their line.
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, ConfigError> {
        serde_yaml_ng::from_str(self.text).map_err(|e| ConfigError {
            origin: self.origin.to_string(),
            line: e.location().map(|l| l.line()),
            field: String::new(),
            message: e.to_string(),
        })
    }
}

/// The marker error the locator raises at the field it was looking for.
const FOUND: &str = "\u{0}roam: field found";

/// The 1-based line where the value at `path` starts, or `None` if the path is not in the
/// document (a default, or a value given by a flag).
pub fn line_of(text: &str, path: &FieldPath) -> Option<usize> {
    if path.0.is_empty() {
        return None;
    }
    let de = serde_yaml_ng::Deserializer::from_str(text);
    match (Seek { path: &path.0 }).deserialize(de) {
        // The message carries serde's own path before the marker.
        Err(e) if e.to_string().contains(FOUND) => e.location().map(|l| l.line()),
        _ => None,
    }
}

/// Walks to the value at `path`; fails there with [`FOUND`], succeeds if it is not there.
struct Seek<'p> {
    path: &'p [Seg],
}

impl<'de> DeserializeSeed<'de> for Seek<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seek<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Some((Seg::Key(want), rest)) = self.path.split_first() else {
            return self.here();
        };
        while let Some(key) = map.next_key::<serde_yaml_ng::Value>()? {
            let matches = match &key {
                serde_yaml_ng::Value::String(s) => s == want,
                serde_yaml_ng::Value::Number(n) => n.to_string() == *want,
                serde_yaml_ng::Value::Bool(b) => b.to_string() == *want,
                _ => false,
            };
            if matches {
                return map.next_value_seed(Seek { path: rest });
            }
            map.next_value::<IgnoredAny>()?;
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let Some((Seg::Index(want), rest)) = self.path.split_first() else {
            return self.here();
        };
        let mut i = 0;
        loop {
            if i == *want {
                return seq.next_element_seed(Seek { path: rest }).map(|_| ());
            }
            if seq.next_element::<IgnoredAny>()?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.here()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.here()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.here()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.here()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.here()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.here()
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.here()
    }
}

impl Seek<'_> {
    /// At the end of the path: the value is here. Elsewhere: the path does not exist.
    fn here<E: de::Error>(&self) -> Result<(), E> {
        if self.path.is_empty() {
            Err(E::custom(FOUND))
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
id: robot
dds: {domain: 3, interfaces: [lo, eth0]}
exports:
  - topic: /a
    as: /same
  - topic: /b
    realm: w
    as: /same
  - {topic: /c, as: /same}
link:
  idle_timeout_ms: 0
'quoted key': 1
";

    fn at(path: FieldPath) -> Option<usize> {
        line_of(TEXT, &path)
    }

    #[test]
    fn the_same_value_on_different_lines_is_found_where_the_path_says() {
        let e = FieldPath::new("exports");
        assert_eq!(at(e.clone().index(0).key("as")), Some(5));
        assert_eq!(at(e.clone().index(1).key("as")), Some(8));
        assert_eq!(at(e.clone().index(2).key("as")), Some(9));
        assert_eq!(at(e.clone().index(1)), Some(6));
        assert_eq!(at(FieldPath::new("link.idle_timeout_ms")), Some(11));
        assert_eq!(at(FieldPath::new("dds.domain")), Some(2));
        assert_eq!(at(FieldPath::new("dds.interfaces").index(1)), Some(2));
        assert_eq!(at(FieldPath::new("quoted key")), Some(12));
        assert_eq!(at(FieldPath::new("id")), Some(1));
    }

    #[test]
    fn absent_paths_have_no_line() {
        assert_eq!(at(FieldPath::new("link.keepalive_ms")), None);
        assert_eq!(at(FieldPath::new("exports").index(7)), None);
        assert_eq!(at(FieldPath::new("id.deeper")), None);
        assert_eq!(at(FieldPath::default()), None);
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let doc = Doc::new(TEXT, "robot.yaml");
        let e = doc.err(
            &FieldPath::new("exports").index(1).key("as"),
            "already taken",
        );
        assert_eq!(
            e.to_string(),
            "robot.yaml: line 8: exports[1].as: already taken"
        );
        let e = doc.err(&FieldPath::new("link.keepalive_ms"), "too long");
        assert_eq!(e.to_string(), "robot.yaml: link.keepalive_ms: too long");
        assert_eq!(doc.whole("empty").to_string(), "robot.yaml: empty");
        let e = Doc::new("id: r1\nbogus: 1\n", "r.yaml")
            .parse::<std::collections::BTreeMap<String, u8>>()
            .unwrap_err();
        assert_eq!(e.line, Some(1), "{e}");
    }
}
