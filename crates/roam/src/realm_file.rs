//! Realm files: the shared secret of a realm plus, for signed mode, its members' keys.
//!
//! ```yaml
//! realm: warehouse            # a label for people; not secret, not part of any name
//! secret: 5f0c...             # 64 hex digits
//! require_signed: false       # refuse envelopes without a member's signature
//! members:                    # identities allowed to sign: name -> Ed25519 public key
//!   robot1: 8a3f...
//! ```
//!
//! The file must not be readable by group or others: it is the key to every topic of the realm.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

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
}

/// A loaded realm.
#[derive(Debug)]
pub struct Realm {
    pub label: String,
    pub secret: RealmSecret,
    pub require_signed: bool,
    /// Ed25519 public key -> member name.
    pub members: HashMap<[u8; 32], String>,
}

impl Realm {
    pub fn opener_config(&self) -> OpenerConfig {
        OpenerConfig {
            require_signed: self.require_signed,
            members: self.members.clone(),
            ..OpenerConfig::default()
        }
    }
}

/// Refuses a secret file that group or others can read, naming the fix.
pub fn check_private(path: &Path) -> Result<(), String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path)
            .map_err(|e| format!("{}: {e}", path.display()))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(format!(
                "{} is readable by others (mode {:o}); run `chmod 600 {}`",
                path.display(),
                mode & 0o777,
                path.display()
            ));
        }
    }
    Ok(())
}

pub fn load(path: &Path) -> Result<Realm, String> {
    if let Err(e) = std::fs::metadata(path) {
        return Err(if e.kind() == std::io::ErrorKind::NotFound {
            format!(
                "realm file {} does not exist (create it with `roam realm new NAME --out {}`, or copy it from a member of the realm)",
                path.display(),
                path.display()
            )
        } else {
            format!("cannot read realm file {}: {e}", path.display())
        });
    }
    check_private(path)?;
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read realm file {}: {e}", path.display()))?;
    let doc: RealmDoc = serde_yaml_ng::from_str(&text)
        .map_err(|e| format!("realm file {}: {e}", path.display()))?;
    let secret = RealmSecret::from_hex(&doc.secret)
        .map_err(|e| format!("realm file {}: {e}", path.display()))?;
    let mut members = HashMap::new();
    for (name, key) in doc.members {
        let bytes = hex::decode(key.trim())
            .ok()
            .and_then(|v| <[u8; 32]>::try_from(v).ok())
            .ok_or_else(|| {
                format!(
                    "realm file {}: member {name}: key must be 64 hex digits",
                    path.display()
                )
            })?;
        members.insert(bytes, name);
    }
    Ok(Realm {
        label: doc.realm,
        secret,
        require_signed: doc.require_signed,
        members,
    })
}

/// Writes a new realm file with mode 0600; refuses to overwrite.
pub fn create(path: &Path, label: &str) -> Result<(), String> {
    let secret =
        RealmSecret::generate().map_err(|_| "the system random source failed".to_string())?;
    let doc = RealmDoc {
        realm: label.into(),
        secret: secret.to_hex(),
        require_signed: false,
        members: BTreeMap::new(),
    };
    write_private(path, &doc, false)
}

/// Adds a member's signing key to a realm file.
pub fn add_member(path: &Path, name: &str, public_key: &[u8; 32]) -> Result<(), String> {
    check_private(path)?;
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut doc: RealmDoc = serde_yaml_ng::from_str(&text)
        .map_err(|e| format!("realm file {}: {e}", path.display()))?;
    doc.members.insert(name.into(), hex::encode(public_key));
    write_private(path, &doc, true)
}

fn write_private(path: &Path, doc: &RealmDoc, overwrite: bool) -> Result<(), String> {
    use std::io::Write;
    let text = serde_yaml_ng::to_string(doc).map_err(|e| e.to_string())?;
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
    let mut f = opts
        .open(path)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    f.write_all(text.as_bytes())
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
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
        assert!(create(&p, "again").unwrap_err().contains("cannot write"));
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
            assert!(load(&p).unwrap_err().contains("chmod 600"));
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
            },
            false,
        )
        .unwrap();
        std::fs::write(&p, "realm: x\nsecret: 00\nbogus: 1\n").unwrap();
        let e = load(&p).unwrap_err();
        assert!(e.contains("line 3") || e.contains("bogus"), "{e}");
        std::fs::write(&p, "realm: x\nsecret: 00\n").unwrap();
        assert!(load(&p).unwrap_err().contains("32 bytes"));
        std::fs::remove_file(&p).unwrap();
        let e = load(&p).unwrap_err();
        assert!(
            e.contains("does not exist") && e.contains("roam realm new NAME --out"),
            "{e}"
        );
    }
}
