//! Finding ROS 2 interface definitions on disk, so topics can describe themselves.
//!
//! Whoever has a type's definition announces it with the topic; this module is the finding
//! part: from a type name in any spelling (`sensor_msgs/msg/LaserScan`, `sensor_msgs/LaserScan`,
//! `sensor_msgs::msg::dds_::LaserScan_`, a service's or action's structure such as
//! `example_interfaces/srv/AddTwoInts_Request`) to the full ros2msg text (the type and all its
//! dependencies, as Foxglove and MCAP carry it) and the resolved schema.
//!
//! ```text
//!  msg_paths entries (checked: check_msg_path)  ┐   search roots, in order:
//!  AMENT_PREFIX_PATH entries                     ┘   the first root holding a package wins
//!        │  lookup("pkg/msg/T"): list <pkg>/{msg,srv,action} of the winning root (cached),
//!        ▼  read T's file, then each missing dependency's, into a fresh TypeRegistry
//!  Definition { name, ros2msg, schema, registry, files }  (cached)
//! ```
//!
//! Nothing walks a tree: a lookup touches the folders of the packages it needs, each listed at
//! most once per cache lifetime; files are at most [`Limits::max_file_size`]; folders are
//! listed up to [`Limits::max_dir_entries`]; a type needs at most [`Limits::max_files`] files.
//! So symlink loops and huge trees cost a bounded amount. The module is blocking (file reads):
//! async callers use `spawn_blocking`.
//!
//! See docs/messages.md, "Where definitions are found".

mod error;
mod files;
mod load;
mod names;
mod roots;

use std::collections::HashSet;
use std::ffi::OsStr;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use lru::LruCache;
use roam_msg::names::is_package_name;
use roam_msg::{MessageType, TypeName, TypeRegistry};

pub use error::{DefinitionError, MsgPathError};
pub use files::Format;
pub use names::parse_any as parse_type_name;
pub use roots::{ament_prefix_roots, check_msg_path, RootLayout, SearchRoot};

use files::{list_package, read_dir_bounded, PackageFiles};

/// Bounds on what a source reads and keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest definition file read (real ones are a few KiB).
    pub max_file_size: u64,
    /// Most entries read from one folder (a package's `msg/`, a `share/`).
    pub max_dir_entries: usize,
    /// Most files one type and its dependencies may need.
    pub max_files: usize,
    /// Packages whose file listing is kept.
    pub cached_packages: usize,
    /// Definitions kept.
    pub cached_definitions: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_file_size: 1 << 20,
            max_dir_entries: 100_000,
            max_files: 1000,
            cached_packages: 1024,
            cached_definitions: 1024,
        }
    }
}

/// A type's full definition, as found on disk.
#[derive(Debug)]
pub struct Definition {
    name: TypeName,
    ros2msg: String,
    schema: MessageType,
    registry: TypeRegistry,
    files: Vec<PathBuf>,
}

impl Definition {
    /// The type's full name (`pkg/srv/X_Request` for a service structure asked for as
    /// `pkg/X_Request`).
    pub fn name(&self) -> &TypeName {
        &self.name
    }

    /// The type and its dependencies as one ros2msg text (Foxglove's `schemaEncoding:
    /// ros2msg`, MCAP, rosbag2), written by roam-msg.
    pub fn ros2msg(&self) -> &str {
        &self.ros2msg
    }

    /// The resolved type the codecs take.
    pub fn schema(&self) -> &MessageType {
        &self.schema
    }

    /// Every definition loaded for the type (its dependencies, the embedded builtins, and the
    /// sibling structures of a service or action file).
    pub fn registry(&self) -> &TypeRegistry {
        &self.registry
    }

    /// The files read, in the order they were read (the type's own first).
    pub fn files(&self) -> &[PathBuf] {
        &self.files
    }
}

/// One interface file a source knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InterfaceFile {
    /// `pkg/msg/Type`, `pkg/srv/Service` or `pkg/action/Action` (the interface, as
    /// `ros2 interface list` names it).
    pub name: TypeName,
    pub path: PathBuf,
    pub format: Format,
}

/// Everything a source knows, and what could not be read.
#[derive(Debug, Default)]
pub struct Listing {
    /// Sorted by name; a package shadowed by an earlier root is not listed twice.
    pub interfaces: Vec<InterfaceFile>,
    /// Folders that could not be listed (unreadable, too many entries, a symlink loop).
    pub problems: Vec<DefinitionError>,
}

/// Definitions found under search roots; cheap to share (`Arc`) between threads.
pub struct DefinitionSource {
    roots: Vec<SearchRoot>,
    limits: Limits,
    cache: Mutex<Caches>,
}

struct Caches {
    /// Package name -> its files in the first root that has it (`None`: no root has it).
    packages: LruCache<String, Option<Arc<PackageFiles>>>,
    definitions: LruCache<TypeName, Arc<Definition>>,
}

impl std::fmt::Debug for DefinitionSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DefinitionSource")
            .field("roots", &self.roots)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl DefinitionSource {
    /// A source searching `roots` in order, with the default [`Limits`].
    pub fn new(roots: Vec<SearchRoot>) -> DefinitionSource {
        DefinitionSource::with_limits(roots, Limits::default())
    }

    pub fn with_limits(roots: Vec<SearchRoot>, limits: Limits) -> DefinitionSource {
        let cap = |n: usize| NonZeroUsize::new(n.max(1)).unwrap_or(NonZeroUsize::MIN);
        DefinitionSource {
            roots,
            limits,
            cache: Mutex::new(Caches {
                packages: LruCache::new(cap(limits.cached_packages)),
                definitions: LruCache::new(cap(limits.cached_definitions)),
            }),
        }
    }

    /// The configured `msg_paths` (each checked with [`check_msg_path`]) first, then the
    /// entries of `ament_prefix_path` (the value of `AMENT_PREFIX_PATH`): explicitly configured
    /// definitions override the installed ones, as a sourced overlay overrides its underlay.
    pub fn from_config(
        msg_paths: &[PathBuf],
        ament_prefix_path: Option<&OsStr>,
    ) -> Result<DefinitionSource, MsgPathError> {
        let mut roots = msg_paths
            .iter()
            .map(|p| check_msg_path(p))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(value) = ament_prefix_path {
            roots.extend(ament_prefix_roots(value));
        }
        Ok(DefinitionSource::new(roots))
    }

    /// [`DefinitionSource::from_config`] with this process's `AMENT_PREFIX_PATH`.
    pub fn from_env(msg_paths: &[PathBuf]) -> Result<DefinitionSource, MsgPathError> {
        let ament = std::env::var_os("AMENT_PREFIX_PATH");
        DefinitionSource::from_config(msg_paths, ament.as_deref())
    }

    pub fn roots(&self) -> &[SearchRoot] {
        &self.roots
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// The full definition of a message type named in any spelling (see the module docs).
    /// Results are cached; errors are not (a package installed later is found then), but the
    /// package listings that made them are.
    pub fn lookup(&self, name: &str) -> Result<Arc<Definition>, DefinitionError> {
        let ty = names::parse_any(name)?;
        if names::is_whole_interface(&ty) {
            return Err(DefinitionError::NotAMessage(Box::new(ty)));
        }
        if let Some(def) = self.caches().definitions.get(&ty) {
            return Ok(def.clone());
        }
        let def = Arc::new(load::load(self, &ty)?);
        self.caches().definitions.put(ty, def.clone());
        Ok(def)
    }

    /// Every interface of every package the roots hold (a package found in an earlier root
    /// hides the same package in later ones). Reads each package's folders; meant for tooling
    /// (`roam topics`, rosapi), not for every message.
    pub fn list(&self) -> Listing {
        let mut listing = Listing::default();
        let mut seen = HashSet::new();
        for root in &self.roots {
            let names: Vec<String> = match root.packages_dir() {
                None => match &root.layout {
                    RootLayout::Package(name) => vec![name.clone()],
                    _ => Vec::new(),
                },
                Some(dir) => match read_dir_bounded(&dir, self.limits.max_dir_entries) {
                    Ok(names) => names
                        .unwrap_or_default()
                        .into_iter()
                        .filter_map(|n| n.into_string().ok())
                        .filter(|n| is_package_name(n))
                        .collect(),
                    Err(e) => {
                        listing.problems.push(e);
                        continue;
                    }
                },
            };
            for pkg in names {
                if seen.contains(&pkg) {
                    continue;
                }
                let Some(dir) = root.package_dir(&pkg) else {
                    continue;
                };
                match list_package(&dir, self.limits.max_dir_entries) {
                    Ok(Some(files)) => {
                        listing.interfaces.extend(files.iter().filter_map(
                            |(kind, stem, path, format)| {
                                Some(InterfaceFile {
                                    name: TypeName::new(&pkg, kind, stem).ok()?,
                                    path: path.to_path_buf(),
                                    format,
                                })
                            },
                        ));
                        seen.insert(pkg);
                    }
                    Ok(None) => {}
                    Err(e) => listing.problems.push(e),
                }
            }
        }
        listing.interfaces.sort_by(|a, b| a.name.cmp(&b.name));
        listing
    }

    /// Forgets cached listings and definitions, so files changed on disk are read again.
    pub fn clear_cache(&self) {
        let mut c = self.caches();
        c.packages.clear();
        c.definitions.clear();
    }

    fn caches(&self) -> MutexGuard<'_, Caches> {
        // The caches hold no invariant a panicking thread could break halfway.
        self.cache.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl load::PackageFinder for DefinitionSource {
    fn package(&self, pkg: &str) -> Result<Option<Arc<PackageFiles>>, DefinitionError> {
        if let Some(found) = self.caches().packages.get(pkg) {
            return Ok(found.clone());
        }
        // Not under the lock: listing is I/O. Two threads may list the same package; both
        // get the same answer.
        let mut found = None;
        for root in &self.roots {
            let Some(dir) = root.package_dir(pkg) else {
                continue;
            };
            if let Some(files) = list_package(&dir, self.limits.max_dir_entries)? {
                found = Some(Arc::new(files));
                break;
            }
        }
        self.caches().packages.put(pkg.to_string(), found.clone());
        Ok(found)
    }

    fn package_dirs(&self, pkg: &str) -> Vec<PathBuf> {
        self.roots
            .iter()
            .filter_map(|r| r.package_dir(pkg))
            .collect()
    }

    fn max_file_size(&self) -> u64 {
        self.limits.max_file_size
    }

    fn max_files(&self) -> usize {
        self.limits.max_files
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_shared_between_threads() {
        fn send_sync<T: Send + Sync>() {}
        send_sync::<DefinitionSource>();
        send_sync::<Arc<Definition>>();
        send_sync::<DefinitionError>();
    }
}
