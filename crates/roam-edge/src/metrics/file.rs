//! The metrics file: the latest snapshot of a process, one JSON line, replaced whole.
//!
//! Each write goes to a temporary file in the same directory, which is then renamed over
//! the old one: a reader (the lab, `jq`, a collector) sees either the previous snapshot or
//! the new one, never half of one, and the file stays one snapshot long however long the
//! process runs. History is the reader's business (Prometheus, or a copy per interval).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use super::{Snapshot, SnapshotError};

/// Why the metrics file could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum MetricsFileError {
    #[error("metrics file {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("metrics file {}: {source}", path.display())]
    Snapshot {
        path: PathBuf,
        #[source]
        source: SnapshotError,
    },
}

/// Where a process keeps its latest snapshot.
#[derive(Debug, Clone)]
pub struct MetricsFile {
    path: PathBuf,
}

impl MetricsFile {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        MetricsFile { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Replaces the file with `snapshot` as one line of JSON. Blocking file I/O: call it
    /// off the async workers (`spawn_blocking`).
    pub fn write(&self, snapshot: &Snapshot) -> Result<(), MetricsFileError> {
        let io = |source| MetricsFileError::Io {
            path: self.path.clone(),
            source,
        };
        let mut line = serde_json::to_vec(snapshot).map_err(|e| io(e.into()))?;
        line.push(b'\n');
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        // Owner-only (tempfile's default): topic and peer names are the deployment's
        // business.
        let mut tmp = tempfile::Builder::new()
            .prefix(".roam-metrics")
            .tempfile_in(dir)
            .map_err(io)?;
        tmp.write_all(&line).map_err(io)?;
        tmp.persist(&self.path).map_err(|e| io(e.error))?;
        Ok(())
    }

    /// Reads the snapshot a process last wrote.
    pub fn read(path: &Path) -> Result<Snapshot, MetricsFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| MetricsFileError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        Snapshot::from_json(&text).map_err(|source| MetricsFileError::Snapshot {
            path: path.to_path_buf(),
            source,
        })
    }
}
