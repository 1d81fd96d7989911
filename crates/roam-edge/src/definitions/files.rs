//! The only I/O of definition finding: bounded file reads and bounded listings of one folder.
//!
//! Nothing here walks a tree: callers name the folder (`<pkg>/msg`, a `share/`), so symlink
//! loops cost one failed `stat` and a huge tree costs at most `max_entries` names.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use roam_msg::names::is_type_name;
use roam_msg::Kind;

use super::error::DefinitionError;
use super::names::native_extension;

/// How an interface file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// `.msg`
    Msg,
    /// `.srv`
    Srv,
    /// `.action`
    Action,
    /// rosidl `.idl` (what `rosidl_adapter` generates from the above, or written by hand).
    Idl,
}

impl Format {
    fn native(kind: Kind) -> Format {
        match kind {
            Kind::Msg => Format::Msg,
            Kind::Srv => Format::Srv,
            Kind::Action => Format::Action,
        }
    }
}

/// The interface files of one package directory, by (kind, type stem).
#[derive(Debug)]
pub struct PackageFiles {
    /// `<prefix>/share/<pkg>` or a `msg_paths` package directory.
    pub dir: PathBuf,
    files: HashMap<(Kind, String), (PathBuf, Format)>,
}

impl PackageFiles {
    /// The file defining `stem` in the `kind` folder; `.msg`/`.srv`/`.action` over `.idl`.
    pub fn get(&self, kind: Kind, stem: &str) -> Option<(&Path, Format)> {
        self.files
            .get(&(kind, stem.to_string()))
            .map(|(p, f)| (p.as_path(), *f))
    }

    /// Every interface file: (kind, stem, path, format).
    pub fn iter(&self) -> impl Iterator<Item = (Kind, &str, &Path, Format)> {
        self.files
            .iter()
            .map(|((k, s), (p, f))| (*k, s.as_str(), p.as_path(), *f))
    }
}

/// Whether an I/O error means "nothing there" rather than a problem worth reporting.
pub fn is_absent(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// The names in `dir`, at most `max_entries` of them; `None` if `dir` does not exist or is not
/// a folder.
pub fn read_dir_bounded(
    dir: &Path,
    max_entries: usize,
) -> Result<Option<Vec<OsString>>, DefinitionError> {
    let io_err = |source| DefinitionError::Io {
        path: dir.to_path_buf(),
        source,
    };
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if is_absent(&e) => return Ok(None),
        Err(e) => return Err(io_err(e)),
    };
    let mut names = Vec::new();
    for entry in entries {
        if names.len() >= max_entries {
            return Err(DefinitionError::TooManyEntries {
                dir: dir.to_path_buf(),
                limit: max_entries,
            });
        }
        names.push(entry.map_err(io_err)?.file_name());
    }
    Ok(Some(names))
}

/// Whether `path` is a folder (following symlinks); a symlink loop or a permission problem is
/// an error, not a "no".
pub fn is_dir(path: &Path) -> Result<bool, DefinitionError> {
    match fs::metadata(path) {
        Ok(m) => Ok(m.is_dir()),
        Err(e) if is_absent(&e) => Ok(false),
        Err(source) => Err(DefinitionError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Whether `dir` has a `msg`, `srv` or `action` folder: what makes it an interface package.
pub fn has_interface_dirs(dir: &Path) -> Result<bool, DefinitionError> {
    for kind in [Kind::Msg, Kind::Srv, Kind::Action] {
        if is_dir(&dir.join(kind.as_str()))? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Lists the `msg`, `srv` and `action` folders of a package directory; `None` if it has none
/// (then it is no interface package, e.g. a `share/<pkg>` of launch files only).
///
/// Names that are not `<Type>.<kind>` or `<Type>.idl` are ignored; where both exist the
/// `.msg`/`.srv`/`.action` file wins, since rosidl generates the `.idl` from it.
pub fn list_package(
    dir: &Path,
    max_entries: usize,
) -> Result<Option<PackageFiles>, DefinitionError> {
    let mut found = false;
    let mut files: HashMap<(Kind, String), (PathBuf, Format)> = HashMap::new();
    for kind in [Kind::Msg, Kind::Srv, Kind::Action] {
        let kind_dir = dir.join(kind.as_str());
        let Some(names) = read_dir_bounded(&kind_dir, max_entries)? else {
            continue;
        };
        found = true;
        for name in names {
            let Some((stem, format)) = interface_file_name(&name, kind) else {
                continue;
            };
            let path = kind_dir.join(&name);
            match files.entry((kind, stem)) {
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert((path, format));
                }
                std::collections::hash_map::Entry::Occupied(mut o) => {
                    if o.get().1 == Format::Idl && format != Format::Idl {
                        o.insert((path, format));
                    }
                }
            }
        }
    }
    Ok(found.then(|| PackageFiles {
        dir: dir.to_path_buf(),
        files,
    }))
}

/// `LaserScan.msg` in `msg/` -> (`LaserScan`, Msg); `LaserScan.idl` -> (`LaserScan`, Idl).
fn interface_file_name(name: &OsString, kind: Kind) -> Option<(String, Format)> {
    let name = name.to_str()?;
    let (stem, ext) = name.rsplit_once('.')?;
    if !is_type_name(stem) {
        return None;
    }
    let format = if ext == native_extension(kind) {
        Format::native(kind)
    } else if ext == "idl" {
        Format::Idl
    } else {
        return None;
    };
    Some((stem.to_string(), format))
}

/// A definition file's text: a regular file (a FIFO named `X.msg` would block a read forever),
/// at most `limit` bytes, UTF-8 (a leading byte-order mark is dropped).
pub fn read_text(path: &Path, limit: u64) -> Result<String, DefinitionError> {
    let io_err = |source| DefinitionError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = fs::metadata(path).map_err(io_err)?;
    if !meta.is_file() {
        return Err(DefinitionError::NotAFile {
            path: path.to_path_buf(),
        });
    }
    let too_large = |size| DefinitionError::TooLarge {
        path: path.to_path_buf(),
        size,
        limit,
    };
    if meta.len() > limit {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The file may have grown since the stat: read one byte past the limit to notice.
    fs::File::open(path)
        .map_err(io_err)?
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io_err)?;
    if bytes.len() as u64 > limit {
        return Err(too_large(bytes.len() as u64));
    }
    let mut text = String::from_utf8(bytes).map_err(|_| DefinitionError::NotUtf8 {
        path: path.to_path_buf(),
    })?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_give_type_and_format() {
        let n = |s: &str| OsString::from(s);
        assert_eq!(
            interface_file_name(&n("LaserScan.msg"), Kind::Msg),
            Some(("LaserScan".into(), Format::Msg))
        );
        assert_eq!(
            interface_file_name(&n("LaserScan.idl"), Kind::Msg),
            Some(("LaserScan".into(), Format::Idl))
        );
        assert_eq!(
            interface_file_name(&n("AddTwoInts.srv"), Kind::Srv),
            Some(("AddTwoInts".into(), Format::Srv))
        );
        for bad in [
            "AddTwoInts.srv~",
            "x.msg.bak",
            ".msg",
            "1A.msg",
            "A-B.msg",
            "README",
        ] {
            assert_eq!(interface_file_name(&n(bad), Kind::Msg), None, "{bad}");
        }
        // A .srv in msg/ is not a message.
        assert_eq!(interface_file_name(&n("A.srv"), Kind::Msg), None);
    }
}
