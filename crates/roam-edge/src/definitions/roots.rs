//! Search roots: where packages of interface definitions live, and the check of a configured
//! `msg_paths` entry.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use roam_msg::names::is_package_name;

use super::error::{DefinitionError, MsgPathError};
use super::files::{has_interface_dirs, is_absent, is_dir, read_dir_bounded, read_text};

/// How packages sit under a search root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootLayout {
    /// An install prefix: packages at `<root>/share/<pkg>/` (an `AMENT_PREFIX_PATH` entry, a
    /// colcon `install/` folder).
    Prefix,
    /// A folder of packages: `<root>/<pkg>/msg/...` (an install's `share/`, a colcon
    /// workspace's `src/`). Each folder's name is its package's name.
    Share,
    /// One package directory: `<root>/msg/...`, `<root>/srv/...`, `<root>/action/...` (a
    /// workspace's `src/<pkg>`), named by its `package.xml` or else by the folder.
    Package(String),
}

/// One place packages are searched in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchRoot {
    pub path: PathBuf,
    pub layout: RootLayout,
}

impl SearchRoot {
    /// An install prefix (`<path>/share/<pkg>/...`).
    pub fn prefix(path: impl Into<PathBuf>) -> SearchRoot {
        SearchRoot {
            path: path.into(),
            layout: RootLayout::Prefix,
        }
    }

    /// Where package `pkg` would be under this root (`None`: this root holds another package).
    /// `pkg` must be a valid package name (no `/`, no `..`), as every `TypeName`'s is.
    pub fn package_dir(&self, pkg: &str) -> Option<PathBuf> {
        match &self.layout {
            RootLayout::Prefix => Some(self.path.join("share").join(pkg)),
            RootLayout::Share => Some(self.path.join(pkg)),
            RootLayout::Package(name) if name == pkg => Some(self.path.clone()),
            RootLayout::Package(_) => None,
        }
    }

    /// The folder whose entries are package directories (`None` for a package root).
    pub fn packages_dir(&self) -> Option<PathBuf> {
        match &self.layout {
            RootLayout::Prefix => Some(self.path.join("share")),
            RootLayout::Share => Some(self.path.clone()),
            RootLayout::Package(_) => None,
        }
    }
}

/// The roots an `AMENT_PREFIX_PATH` value names, in its order (earlier entries win, as in
/// ROS). Empty entries are skipped; entries that do not exist are kept and simply hold nothing
/// (a sourced but since removed workspace must not stop a proxy).
pub fn ament_prefix_roots(value: &OsStr) -> Vec<SearchRoot> {
    std::env::split_paths(value)
        .filter(|p| !p.as_os_str().is_empty())
        .map(SearchRoot::prefix)
        .collect()
}

/// Checks a `msg_paths` entry and says how it holds packages.
///
/// In this order: a folder with `msg/`, `srv/` or `action/` inside is one package
/// ([`RootLayout::Package`]); a folder whose `share/` holds a package is an install prefix
/// ([`RootLayout::Prefix`]); a folder with a package among its subfolders is a folder of
/// packages ([`RootLayout::Share`]). Anything else is an error: the entry does not exist, is
/// not a folder, or holds no package. Only the entry and its direct subfolders are looked at.
pub fn check_msg_path(path: &Path) -> Result<SearchRoot, MsgPathError> {
    check_msg_path_bounded(path, super::Limits::default().max_dir_entries)
}

pub(crate) fn check_msg_path_bounded(
    path: &Path,
    max_entries: usize,
) -> Result<SearchRoot, MsgPathError> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(MsgPathError::NotADirectory(path.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(MsgPathError::NotFound(path.to_path_buf()))
        }
        Err(source) => {
            return Err(DefinitionError::Io {
                path: path.to_path_buf(),
                source,
            }
            .into())
        }
    }
    let root = |layout| SearchRoot {
        path: path.to_path_buf(),
        layout,
    };
    if has_interface_dirs(path)? {
        return Ok(root(RootLayout::Package(package_name(path)?)));
    }
    let share = path.join("share");
    if is_dir(&share)? && holds_a_package(&share, max_entries)? {
        return Ok(root(RootLayout::Prefix));
    }
    if holds_a_package(path, max_entries)? {
        return Ok(root(RootLayout::Share));
    }
    Err(MsgPathError::NoPackage(path.to_path_buf()))
}

/// Whether some direct subfolder of `dir` is an interface package. A subfolder that cannot be
/// read (a symlink loop, no permission) is passed over here; lookups that need it report it.
fn holds_a_package(dir: &Path, max_entries: usize) -> Result<bool, DefinitionError> {
    let names = read_dir_bounded(dir, max_entries)?.unwrap_or_default();
    Ok(names.iter().any(|name| {
        name.to_str()
            .filter(|n| is_package_name(n))
            .is_some_and(|n| has_interface_dirs(&dir.join(n)).unwrap_or(false))
    }))
}

/// The package's name: `<name>` in its `package.xml` (what colcon and ament use), else the
/// folder's name.
fn package_name(dir: &Path) -> Result<String, MsgPathError> {
    let xml_path = dir.join("package.xml");
    let name = match std::fs::metadata(&xml_path) {
        Ok(m) if m.is_file() => {
            let text = read_text(&xml_path, super::Limits::default().max_file_size)?;
            name_in_package_xml(&text).map_err(|e| match e {
                Some(source) => MsgPathError::PackageXml {
                    path: xml_path.clone(),
                    source,
                },
                None => MsgPathError::PackageXmlNoName {
                    path: xml_path.clone(),
                },
            })?
        }
        Err(source) if !is_absent(&source) => {
            return Err(DefinitionError::Io {
                path: xml_path,
                source,
            }
            .into())
        }
        _ => folder_name(dir),
    };
    if !is_package_name(&name) {
        return Err(MsgPathError::BadPackageName {
            path: dir.to_path_buf(),
            name,
        });
    }
    Ok(name)
}

/// The last component of `dir` as written, or of its canonical form (`.`, `pkg/..`).
fn folder_name(dir: &Path) -> String {
    let name = |d: &Path| d.file_name().map(|n| n.to_string_lossy().into_owned());
    name(dir)
        .or_else(|| dir.canonicalize().ok().and_then(|d| name(&d)))
        .unwrap_or_default()
}

/// `<package><name>NAME</name>...</package>` (REP 149); `Err(None)` when there is no name.
fn name_in_package_xml(text: &str) -> Result<String, Option<roxmltree::Error>> {
    let doc = roxmltree::Document::parse(text).map_err(Some)?;
    let root = doc.root_element();
    if root.tag_name().name() != "package" {
        return Err(None);
    }
    root.children()
        .find(|n| n.is_element() && n.tag_name().name() == "name")
        .and_then(|n| n.text())
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .ok_or(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn package_dirs_follow_the_layout() {
        let p = SearchRoot::prefix("/opt/ros/jazzy");
        assert_eq!(
            p.package_dir("std_msgs"),
            Some(PathBuf::from("/opt/ros/jazzy/share/std_msgs"))
        );
        let s = SearchRoot {
            path: "/ws/src".into(),
            layout: RootLayout::Share,
        };
        assert_eq!(
            s.package_dir("my_msgs"),
            Some(PathBuf::from("/ws/src/my_msgs"))
        );
        let one = SearchRoot {
            path: "/ws/src/robot".into(),
            layout: RootLayout::Package("my_msgs".into()),
        };
        assert_eq!(
            one.package_dir("my_msgs"),
            Some(PathBuf::from("/ws/src/robot"))
        );
        assert_eq!(one.package_dir("std_msgs"), None);
    }

    #[test]
    fn ament_prefix_path_keeps_order_and_skips_empty_entries() {
        let roots = ament_prefix_roots(OsStr::new("/ws/install::/opt/ros/jazzy:"));
        assert_eq!(
            roots,
            [
                SearchRoot::prefix("/ws/install"),
                SearchRoot::prefix("/opt/ros/jazzy")
            ]
        );
        assert!(ament_prefix_roots(OsStr::new("")).is_empty());
    }

    #[test]
    fn package_xml_names_the_package() {
        let xml = r#"<?xml version="1.0"?>
<?xml-model href="http://download.ros.org/schema/package_format3.xsd"?>
<package format="3">
  <!-- <name>not_this</name> -->
  <name> my_robot_msgs </name>
  <version>0.1.0</version>
</package>"#;
        assert_eq!(name_in_package_xml(xml).unwrap(), "my_robot_msgs");
        assert!(matches!(
            name_in_package_xml("<package><version/></package>"),
            Err(None)
        ));
        assert!(matches!(
            name_in_package_xml("<package><name>"),
            Err(Some(_))
        ));
    }
}
