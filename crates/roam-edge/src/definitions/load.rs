//! Loading one type and everything it depends on into a fresh registry.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use roam_msg::{Kind, RegistryError, TypeName, TypeRegistry};

use super::error::DefinitionError;
use super::files::{read_text, Format, PackageFiles};
use super::names::{candidate_files, native_extension};
use super::Definition;

/// What loading needs from a source: its packages (cached by the caller) and its limits.
pub trait PackageFinder {
    /// The interface files of package `pkg` from the first root that has it.
    fn package(&self, pkg: &str) -> Result<Option<Arc<PackageFiles>>, DefinitionError>;
    /// Where package `pkg` was searched for, in root order (for "not found" errors).
    fn package_dirs(&self, pkg: &str) -> Vec<PathBuf>;
    fn max_file_size(&self) -> u64;
    fn max_files(&self) -> usize;
}

/// Loads `want` and, recursively, every type it needs that the embedded definitions
/// (`builtin_interfaces`, `unique_identifier_msgs`, `action_msgs`, `service_msgs`) lack.
pub fn load(finder: &impl PackageFinder, want: &TypeName) -> Result<Definition, DefinitionError> {
    let mut loader = Loader {
        finder,
        reg: TypeRegistry::with_builtins(),
        files: Vec::new(),
        root: want,
    };
    if loader.reg.get(&want.full()).is_none() {
        loader.load_type(want, None)?;
    }
    // Each round loads at least one file (or fails), and the number of files is bounded.
    loop {
        let missing = loader.reg.missing(&want.full());
        if missing.is_empty() {
            break;
        }
        for (ty, needed_by) in missing {
            // An earlier file of this round (a .srv defines two structures) may have brought it.
            if loader.reg.get(&ty.full()).is_none() {
                loader.load_type(&ty, Some(&needed_by))?;
            }
        }
    }
    let Loader { reg, files, .. } = loader;
    let name = match reg.get(&want.full()) {
        Some(def) => def.name.clone(),
        None => return Err(unusable(want, RegistryError::Unknown(want.full()))),
    };
    let ros2msg = reg
        .to_ros2msg(&name.full())
        .map_err(|e| unusable(&name, e))?;
    let schema = reg.resolve(&name.full()).map_err(|e| unusable(&name, e))?;
    Ok(Definition {
        name,
        ros2msg,
        schema,
        registry: reg,
        files,
    })
}

fn unusable(ty: &TypeName, source: RegistryError) -> DefinitionError {
    DefinitionError::Unusable {
        ty: Box::new(ty.clone()),
        source: Box::new(source),
    }
}

struct Loader<'a, F> {
    finder: &'a F,
    reg: TypeRegistry,
    files: Vec<PathBuf>,
    root: &'a TypeName,
}

impl<F: PackageFinder> Loader<'_, F> {
    /// Finds and adds the file that defines `ty`.
    fn load_type(
        &mut self,
        ty: &TypeName,
        needed_by: Option<&TypeName>,
    ) -> Result<(), DefinitionError> {
        let candidates = candidate_files(ty);
        let Some(pkg) = self.finder.package(&ty.package)? else {
            return Err(not_found(
                ty,
                needed_by,
                self.finder.package_dirs(&ty.package),
            ));
        };
        for (kind, stem) in &candidates {
            let Some((path, format)) = pkg.get(*kind, stem) else {
                continue;
            };
            if self.files.iter().any(|f| f == path) {
                // Loaded already, yet the type is still missing: the file defines others.
                return Err(DefinitionError::FileLacksType {
                    path: path.to_path_buf(),
                    ty: Box::new(ty.clone()),
                });
            }
            if self.files.len() >= self.finder.max_files() {
                return Err(DefinitionError::TooManyFiles {
                    ty: Box::new(self.root.clone()),
                    limit: self.finder.max_files(),
                });
            }
            let text = read_text(path, self.finder.max_file_size())?;
            self.files.push(path.to_path_buf());
            add_file(&mut self.reg, &ty.package, *kind, stem, format, &text).map_err(|source| {
                DefinitionError::Invalid {
                    path: path.to_path_buf(),
                    source: Box::new(source),
                }
            })?;
            if self.reg.get(&ty.full()).is_none() {
                return Err(DefinitionError::FileLacksType {
                    path: path.to_path_buf(),
                    ty: Box::new(ty.clone()),
                });
            }
            return Ok(());
        }
        let looked = candidates
            .iter()
            .map(|(kind, stem)| looked_path(&pkg.dir, *kind, stem))
            .collect();
        Err(not_found(ty, needed_by, looked))
    }
}

/// `<pkg>/msg/Name.{msg,idl}`: the two files a lookup tried, written as one path.
fn looked_path(pkg_dir: &Path, kind: Kind, stem: &str) -> PathBuf {
    pkg_dir
        .join(kind.as_str())
        .join(format!("{stem}.{{{},idl}}", native_extension(kind)))
}

fn not_found(
    ty: &TypeName,
    needed_by: Option<&TypeName>,
    looked_in: Vec<PathBuf>,
) -> DefinitionError {
    match needed_by {
        Some(by) => DefinitionError::MissingDependency {
            ty: Box::new(ty.clone()),
            needed_by: Box::new(by.clone()),
            looked_in,
        },
        None => DefinitionError::Unknown {
            ty: Box::new(ty.clone()),
            looked_in,
        },
    }
}

/// Adds one file's text under the name its place gives (`<pkg>/<kind>/<stem>`).
fn add_file(
    reg: &mut TypeRegistry,
    pkg: &str,
    kind: Kind,
    stem: &str,
    format: Format,
    text: &str,
) -> Result<(), RegistryError> {
    let name = format!("{pkg}/{}/{stem}", kind.as_str());
    match format {
        Format::Msg => reg.add_msg(&name, text).map(|_| ()),
        Format::Srv => reg.add_srv(&name, text).map(|_| ()),
        Format::Action => reg.add_action(&name, text).map(|_| ()),
        Format::Idl => reg.add_idl(text).map(|_| ()),
    }
}
