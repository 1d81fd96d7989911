//! The epoch file: the newest epoch record a member took, kept beside its realm file
//! (`FILE.epoch`, mode 0600) so that a restarted process is in the same epoch at once.
//!
//! It holds the record as it travelled, secrets sealed to members included; only the member's
//! own identity key opens its copy, so the file is as private as the realm file and no more.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::realm::{check_private, RealmError};

/// Where the epoch file of `realm_file` is.
pub fn epoch_file(realm_file: &Path) -> PathBuf {
    let mut name = realm_file.as_os_str().to_owned();
    name.push(".epoch");
    PathBuf::from(name)
}

/// The kept record, if there is one.
pub fn read(realm_file: &Path) -> Result<Option<Vec<u8>>, RealmError> {
    let path = epoch_file(realm_file);
    if !path.exists() {
        return Ok(None);
    }
    check_private(&path)?;
    std::fs::read(&path)
        .map(Some)
        .map_err(|source| RealmError::Read { path, source })
}

/// Keeps `record`, replacing the file at once (written beside it, then renamed).
pub fn write(realm_file: &Path, record: &[u8]) -> Result<(), RealmError> {
    let path = epoch_file(realm_file);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    let fail = |source| RealmError::Write {
        path: path.clone(),
        source,
    };
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts.open(&tmp).map_err(fail)?;
    f.write_all(record)
        .and_then(|_| f.sync_all())
        .map_err(fail)?;
    std::fs::rename(&tmp, &path).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_record_reads_back_and_stays_private() {
        let dir = std::env::temp_dir().join(format!("roam-epoch-store-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let realm = dir.join("warehouse.realm");
        assert_eq!(read(&realm).unwrap(), None);
        write(&realm, b"one").unwrap();
        write(&realm, b"two").unwrap();
        assert_eq!(read(&realm).unwrap().as_deref(), Some(&b"two"[..]));
        assert_eq!(epoch_file(&realm), dir.join("warehouse.realm.epoch"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let f = epoch_file(&realm);
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).unwrap();
            assert!(read(&realm).unwrap_err().to_string().contains("chmod 600"));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
