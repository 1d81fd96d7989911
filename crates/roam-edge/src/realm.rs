//! Realm files: the shared secret of a realm plus, for signed mode, its members' keys.
//!
//! ```yaml
//! realm: warehouse            # a label for people; not secret, not part of any name
//! secret: 5f0c...             # 64 hex digits
//! require_signed: false       # refuse envelopes without a member's signature
//! members:                    # identities allowed to sign: name -> Ed25519 public key
//!   robot1: 8a3f...
//! admins: [ops]               # members that may start a new epoch (`roam realm rotate`)
//! ```
//!
//! The file must not be readable by group or others: it is the key to every topic of the realm.
//! Its secret names every topic and seals epoch 0; after a rotation the epoch this member is
//! in, its members and administrators are in the epoch file beside it (`FILE.epoch`, see
//! [`crate::epochs`]), which members keep up to date themselves.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use std::sync::Arc;

use roam_proto::epoch::Keys;
use roam_proto::seal::OpenerConfig;
use roam_proto::RealmSecret;
use serde::{Deserialize, Serialize};

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RealmDoc {
    realm: String,
    secret: String,
    #[serde(default)]
    require_signed: bool,
    #[serde(default)]
    members: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    admins: Vec<String>,
}

/// A loaded realm.
#[derive(Debug)]
pub struct Realm {
    pub label: String,
    /// Names every topic and seals epoch 0 (and the realm's epoch records, in every epoch).
    pub secret: RealmSecret,
    pub require_signed: bool,
    /// Ed25519 public key -> member name, as the realm file lists them.
    pub members: HashMap<[u8; 32], String>,
    /// Members that may start a new epoch, as the realm file lists them.
    pub admins: Vec<String>,
    /// The keys this process seals and opens the realm's envelopes with: epoch 0 until it
    /// follows the realm's epochs ([`crate::epochs::follow`]).
    pub keys: Arc<Keys>,
    /// The realm file, beside which its epoch file is kept.
    pub path: PathBuf,
}

impl Realm {
    /// A realm from its secret alone, with no file: for tests and tools.
    pub fn from_secret(label: impl Into<String>, secret: RealmSecret) -> Self {
        Self {
            label: label.into(),
            keys: Keys::new(&secret),
            secret,
            require_signed: false,
            members: HashMap::new(),
            admins: Vec::new(),
            path: PathBuf::new(),
        }
    }

    /// Members by name, as the realm file lists them.
    pub fn members_by_name(&self) -> HashMap<String, [u8; 32]> {
        self.members.iter().map(|(k, n)| (n.clone(), *k)).collect()
    }

    pub fn opener_config(&self) -> OpenerConfig {
        OpenerConfig {
            require_signed: self.require_signed,
            members: self.members.clone(),
            ..OpenerConfig::default()
        }
    }
}

/// Why a realm file could not be read or written. Each names the file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum RealmError {
    #[error("realm file {} does not exist (create it with `roam realm new NAME --out {}`, or copy it from a member of the realm)", .0.display(), .0.display())]
    Missing(PathBuf),
    #[error("cannot read realm file {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is readable by others (mode {mode:o}); run `chmod 600 {}`", .path.display(), .path.display())]
    OpenToOthers { path: PathBuf, mode: u32 },
    #[error("realm file {}: {message}", .path.display())]
    Malformed { path: PathBuf, message: String },
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the system random source failed")]
    Random,
}

impl From<RealmError> for String {
    fn from(e: RealmError) -> String {
        e.to_string()
    }
}

/// Refuses a secret file that group or others can read, naming the fix.
pub fn check_private(path: &Path) -> Result<(), RealmError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map_err(|source| RealmError::Read {
                path: path.into(),
                source,
            })?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(RealmError::OpenToOthers {
                path: path.into(),
                mode: mode & 0o777,
            });
        }
    }
    Ok(())
}

pub fn load(path: &Path) -> Result<Realm, RealmError> {
    if let Err(source) = std::fs::metadata(path) {
        return Err(if source.kind() == std::io::ErrorKind::NotFound {
            RealmError::Missing(path.into())
        } else {
            RealmError::Read {
                path: path.into(),
                source,
            }
        });
    }
    check_private(path)?;
    let text = std::fs::read_to_string(path).map_err(|source| RealmError::Read {
        path: path.into(),
        source,
    })?;
    let malformed = |message: String| RealmError::Malformed {
        path: path.into(),
        message,
    };
    let doc: RealmDoc = serde_yaml_ng::from_str(&text).map_err(|e| malformed(e.to_string()))?;
    let secret = RealmSecret::from_hex(&doc.secret).map_err(|e| malformed(e.to_string()))?;
    let mut members = HashMap::new();
    for (name, key) in doc.members {
        let bytes = hex::decode(key.trim())
            .ok()
            .and_then(|v| <[u8; 32]>::try_from(v).ok())
            .ok_or_else(|| malformed(format!("member {name}: key must be 64 hex digits")))?;
        members.insert(bytes, name);
    }
    for admin in &doc.admins {
        if !members.values().any(|n| n == admin) {
            return Err(malformed(format!(
                "admin {admin} is not among the members (roam realm add-member {admin} --realm FILE --pki DIR)"
            )));
        }
    }
    Ok(Realm {
        label: doc.realm,
        keys: Keys::new(&secret),
        secret,
        require_signed: doc.require_signed,
        members,
        admins: doc.admins,
        path: path.to_owned(),
    })
}

/// Writes a new realm file with mode 0600; refuses to overwrite.
pub fn create(path: &Path, label: &str) -> Result<(), RealmError> {
    let secret = RealmSecret::generate().map_err(|_| RealmError::Random)?;
    let doc = RealmDoc {
        realm: label.into(),
        secret: secret.to_hex(),
        require_signed: false,
        members: BTreeMap::new(),
        admins: Vec::new(),
    };
    write_private(path, &doc, false)
}

/// Adds a member's signing key to a realm file; `admin` also lets it start epochs.
pub fn add_member(path: &Path, name: &str, public_key: &[u8; 32]) -> Result<(), RealmError> {
    edit(path, |doc| {
        doc.members.insert(name.into(), hex::encode(public_key));
    })
}

/// Lets a member start the realm's epochs (it must be a member already).
pub fn add_admin(path: &Path, name: &str) -> Result<(), RealmError> {
    edit(path, |doc| {
        if !doc.admins.iter().any(|a| a == name) {
            doc.admins.push(name.into());
        }
    })?;
    load(path).map(|_| ())
}

/// Takes a member (and administrator) out of a realm file. Returns whether it was there.
pub fn remove_member(path: &Path, name: &str) -> Result<bool, RealmError> {
    let mut found = false;
    edit(path, |doc| {
        found = doc.members.remove(name).is_some();
        doc.admins.retain(|a| a != name);
    })?;
    Ok(found)
}

fn edit(path: &Path, f: impl FnOnce(&mut RealmDoc)) -> Result<(), RealmError> {
    check_private(path)?;
    let text = std::fs::read_to_string(path).map_err(|source| RealmError::Read {
        path: path.into(),
        source,
    })?;
    let mut doc: RealmDoc = serde_yaml_ng::from_str(&text).map_err(|e| RealmError::Malformed {
        path: path.into(),
        message: e.to_string(),
    })?;
    f(&mut doc);
    write_private(path, &doc, true)
}

fn write_private(path: &Path, doc: &RealmDoc, overwrite: bool) -> Result<(), RealmError> {
    use std::io::Write;
    let text = serde_yaml_ng::to_string(doc).map_err(|e| RealmError::Malformed {
        path: path.into(),
        message: e.to_string(),
    })?;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true);
    if overwrite {
        opts.truncate(true);
    } else {
        opts.create_new(true);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let write = |source| RealmError::Write {
        path: path.into(),
        source,
    };
    let mut f = opts.open(path).map_err(write)?;
    f.write_all(text.as_bytes()).map_err(write)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("roam-realm-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_file(&d);
        d
    }

    #[test]
    fn create_load_and_refuse_open_modes() {
        let p = tmp("a");
        create(&p, "warehouse").unwrap();
        assert!(create(&p, "again")
            .unwrap_err()
            .to_string()
            .contains("cannot write"));
        let r = load(&p).unwrap();
        assert_eq!(r.label, "warehouse");
        add_member(&p, "robot1", &[7; 32]).unwrap();
        assert_eq!(
            load(&p).unwrap().members.get(&[7; 32]).map(String::as_str),
            Some("robot1")
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
            assert!(load(&p).unwrap_err().to_string().contains("chmod 600"));
        }
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn broken_file_reports_line() {
        let p = tmp("b");
        write_private(
            &p,
            &RealmDoc {
                realm: "x".into(),
                secret: "00".repeat(32),
                require_signed: false,
                members: BTreeMap::new(),
                admins: Vec::new(),
            },
            false,
        )
        .unwrap();
        std::fs::write(&p, "realm: x\nsecret: 00\nbogus: 1\n").unwrap();
        let e = load(&p).unwrap_err().to_string();
        assert!(e.contains("line 3") || e.contains("bogus"), "{e}");
        std::fs::write(&p, "realm: x\nsecret: 00\n").unwrap();
        assert!(load(&p).unwrap_err().to_string().contains("32 bytes"));
        std::fs::remove_file(&p).unwrap();
        let e = load(&p).unwrap_err().to_string();
        assert!(
            e.contains("does not exist") && e.contains("roam realm new NAME --out"),
            "{e}"
        );
    }
}
