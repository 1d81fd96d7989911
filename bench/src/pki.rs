//! A throw-away PKI in a temporary directory, removed on drop.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use roam_pki::{self as pki, Identity, Validity};
use roam_proto::frame::Role;

pub struct TempPki {
    dir: PathBuf,
}

impl TempPki {
    pub fn new(tag: &str) -> Result<Self, String> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir =
            std::env::temp_dir().join(format!("roam-bench-{tag}-{}-{nanos}", std::process::id()));
        pki::init_ca(&dir).map_err(|e| format!("creating a CA in {}: {e}", dir.display()))?;
        Ok(Self { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Issues `name` with `role` and loads it.
    pub fn identity(&self, name: &str, role: Role) -> Result<Arc<Identity>, String> {
        pki::issue(&self.dir, name, role, Validity::days(1))
            .map_err(|e| format!("issuing {name}: {e}"))?;
        pki::load_identity(&self.dir, name)
            .map(Arc::new)
            .map_err(|e| format!("loading {name}: {e}"))
    }
}

impl Drop for TempPki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
