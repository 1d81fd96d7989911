//! Typed errors: every one names the type, the file or the folder it is about.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use roam_msg::{NameError, RegistryError, TypeName};
use thiserror::Error;

/// Why a type's definition could not be given.
///
/// Type names and registry errors are boxed: errors stay small for the `Result`s of the hot
/// cached path.
#[derive(Debug, Error)]
pub enum DefinitionError {
    #[error("{0}")]
    BadName(#[from] NameError),
    #[error(
        "{0} is {kind}, not a message: look up one of its structures ({0}_{first}, ...)",
        kind = kind_word(.0), first = first_structure(.0)
    )]
    NotAMessage(Box<TypeName>),
    #[error("type {ty} not found; {}", Looked(.looked_in))]
    Unknown {
        ty: Box<TypeName>,
        looked_in: Vec<PathBuf>,
    },
    #[error("type {ty} (needed by {needed_by}) not found; {}", Looked(.looked_in))]
    MissingDependency {
        ty: Box<TypeName>,
        needed_by: Box<TypeName>,
        looked_in: Vec<PathBuf>,
    },
    /// A definition file that does not parse, or that contradicts one already loaded.
    #[error("{}", InvalidText(.path, .source))]
    Invalid {
        path: PathBuf,
        source: Box<RegistryError>,
    },
    #[error("{}: does not define {ty}", .path.display())]
    FileLacksType { path: PathBuf, ty: Box<TypeName> },
    #[error("{}: {size} bytes, more than the {limit} a definition file may have", .path.display())]
    TooLarge {
        path: PathBuf,
        size: u64,
        limit: u64,
    },
    #[error("{}: not a regular file", .path.display())]
    NotAFile { path: PathBuf },
    #[error("{}: not UTF-8 text", .path.display())]
    NotUtf8 { path: PathBuf },
    #[error("{}: {source}", .path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("{}: more than {limit} entries; not searched", .dir.display())]
    TooManyEntries { dir: PathBuf, limit: usize },
    #[error("type {ty} needs more than {limit} definition files")]
    TooManyFiles { ty: Box<TypeName>, limit: usize },
    /// The files loaded, but the type they make cannot be used (it contains itself, nests too
    /// deep, or is too large).
    #[error("type {ty}: {source}")]
    Unusable {
        ty: Box<TypeName>,
        source: Box<RegistryError>,
    },
}

impl DefinitionError {
    /// The 1-based line of a definition file that does not parse.
    pub fn line(&self) -> Option<usize> {
        match self {
            DefinitionError::Invalid { source, .. } => match &**source {
                RegistryError::Parse(p) => Some(p.line),
                _ => None,
            },
            _ => None,
        }
    }

    /// The file the error is about, if any.
    pub fn path(&self) -> Option<&Path> {
        use DefinitionError::*;
        match self {
            Invalid { path, .. }
            | FileLacksType { path, .. }
            | TooLarge { path, .. }
            | NotAFile { path }
            | NotUtf8 { path }
            | Io { path, .. } => Some(path),
            TooManyEntries { dir, .. } => Some(dir),
            _ => None,
        }
    }
}

/// A `msg_paths` entry that cannot serve definitions.
#[derive(Debug, Error)]
pub enum MsgPathError {
    #[error("msg_paths entry {} does not exist", .0.display())]
    NotFound(PathBuf),
    #[error("msg_paths entry {} is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error(
        "msg_paths entry {} holds no ROS interface package: expected a package directory \
         (with msg/, srv/ or action/ inside), a directory of such packages, or an install \
         prefix (share/<pkg>/msg/...)",
        .0.display()
    )]
    NoPackage(PathBuf),
    #[error("{}: package name {name:?} is not a valid ROS package name", .path.display())]
    BadPackageName { path: PathBuf, name: String },
    #[error("{}: {source}", .path.display())]
    PackageXml {
        path: PathBuf,
        source: roxmltree::Error,
    },
    #[error("{}: no <package><name> element", .path.display())]
    PackageXmlNoName { path: PathBuf },
    /// `package.xml` itself could not be read (too large, not a file, not UTF-8, I/O).
    #[error(transparent)]
    File(#[from] DefinitionError),
}

fn kind_word(t: &TypeName) -> &'static str {
    match t.kind {
        roam_msg::Kind::Srv => "a service",
        roam_msg::Kind::Action => "an action",
        roam_msg::Kind::Msg => "a message",
    }
}

fn first_structure(t: &TypeName) -> &'static str {
    match t.kind {
        roam_msg::Kind::Action => "Goal",
        _ => "Request",
    }
}

/// Where a lookup looked, shortened: an `AMENT_PREFIX_PATH` of an isolated colcon install has
/// one entry per package.
struct Looked<'a>(&'a [PathBuf]);

impl fmt::Display for Looked<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const SHOWN: usize = 4;
        if self.0.is_empty() {
            return write!(
                f,
                "there are no search roots (set AMENT_PREFIX_PATH or configure msg_paths)"
            );
        }
        write!(f, "looked in ")?;
        for (i, p) in self.0.iter().take(SHOWN).enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{}", p.display())?;
        }
        if self.0.len() > SHOWN {
            write!(f, " and {} more", self.0.len() - SHOWN)?;
        }
        Ok(())
    }
}

/// `path:line: message` for a parse error, as compilers print it; `path: error` otherwise.
struct InvalidText<'a>(&'a Path, &'a RegistryError);

impl fmt::Display for InvalidText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.1 {
            RegistryError::Parse(p) => {
                write!(
                    f,
                    "{}:{}: {} ({})",
                    self.0.display(),
                    p.line,
                    p.message,
                    p.ty
                )
            }
            other => write!(f, "{}: {other}", self.0.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_what_and_where() {
        let ty = TypeName::parse("a_msgs/msg/Inner").unwrap();
        let e = DefinitionError::MissingDependency {
            ty: Box::new(ty.clone()),
            needed_by: Box::new(TypeName::parse("b_msgs/msg/Outer").unwrap()),
            looked_in: (0..6).map(|i| PathBuf::from(format!("/p{i}"))).collect(),
        };
        assert_eq!(
            e.to_string(),
            "type a_msgs/msg/Inner (needed by b_msgs/msg/Outer) not found; \
             looked in /p0, /p1, /p2, /p3 and 2 more"
        );
        let e = DefinitionError::Unknown {
            ty: Box::new(ty),
            looked_in: vec![],
        };
        assert!(e.to_string().contains("no search roots"), "{e}");
        let e = DefinitionError::NotAMessage(Box::new(TypeName::parse("p/action/Dock").unwrap()));
        assert_eq!(
            e.to_string(),
            "p/action/Dock is an action, not a message: look up one of its structures \
             (p/action/Dock_Goal, ...)"
        );
    }
}
