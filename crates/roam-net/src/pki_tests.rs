use super::*;

/// A fresh directory under the system temp dir, removed on drop.
pub(crate) struct TempDir(PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> Self {
        use std::sync::atomic::{AtomicU32, Ordering};
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("roam-{tag}-{}-{n}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path).expect("create temp dir");
        Self(path)
    }

    pub(crate) fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn ca_and_identities_round_trip() {
    let dir = TempDir::new("pki-roundtrip");
    let d = dir.path();
    init_ca(d).unwrap();
    #[cfg(unix)]
    assert_eq!(mode(&d.join(CA_KEY_FILE)), 0o600);

    issue(d, "r1", Role::Router, Validity::default()).unwrap();
    issue(d, "robot-7", Role::Client, Validity::default()).unwrap();
    #[cfg(unix)]
    assert_eq!(mode(&d.join("r1.key")), 0o600);

    let r1 = load_identity(d, "r1").unwrap();
    assert_eq!((r1.name.as_str(), r1.role), ("r1", Role::Router));
    assert_eq!(r1.cert_chain.len(), 1);
    let robot = load_identity(d, "robot-7").unwrap();
    assert_eq!((robot.name.as_str(), robot.role), ("robot-7", Role::Client));
    assert_eq!(
        cert_identity(&robot.cert_chain[0]).unwrap(),
        ("robot-7".into(), Role::Client)
    );

    // NAME.pem holds the leaf and nothing else.
    let pem = fs::read_to_string(d.join("r1.pem")).unwrap();
    assert_eq!(pem.matches("BEGIN CERTIFICATE").count(), 1);

    // The signing key is the certificate's key.
    use ring::signature::KeyPair as _;
    let kp =
        ring::signature::Ed25519KeyPair::from_pkcs8_maybe_unchecked(&r1.signing_pkcs8).unwrap();
    assert!(same_public_key(&r1.cert_chain[0], kp.public_key().as_ref()));

    // Debug never shows key material.
    let dbg = format!("{r1:?}");
    assert!(dbg.contains("r1") && !dbg.contains("signing"), "{dbg}");
}

#[test]
fn refuses_to_overwrite() {
    let dir = TempDir::new("pki-overwrite");
    let d = dir.path();
    init_ca(d).unwrap();
    let ca_before = fs::read(d.join(CA_CERT_FILE)).unwrap();
    assert!(matches!(init_ca(d), Err(PkiError::CaExists { .. })));
    assert_eq!(fs::read(d.join(CA_CERT_FILE)).unwrap(), ca_before);

    issue(d, "r1", Role::Router, Validity::default()).unwrap();
    let err = issue(d, "r1", Role::Client, Validity::default()).unwrap_err();
    assert!(matches!(err, PkiError::IdentityExists { .. }), "{err}");
}

#[test]
fn issue_without_ca_names_the_missing_file() {
    let dir = TempDir::new("pki-noca");
    let err = issue(dir.path(), "r1", Role::Router, Validity::default()).unwrap_err();
    assert!(matches!(err, PkiError::NoCa { .. }), "{err}");
    assert!(err.to_string().contains("ca.pem"), "{err}");
}

#[test]
fn names_must_be_dns_labels() {
    for ok in ["a", "r1", "robot-7", "0", &"a".repeat(63)] {
        validate_name(ok).unwrap();
    }
    for bad in [
        "",
        "-r",
        "R1",
        "r_1",
        "r.1",
        "r 1",
        "ca",
        "é",
        &"a".repeat(64),
        "../x",
    ] {
        let err = validate_name(bad).unwrap_err();
        assert!(
            matches!(err, PkiError::InvalidName { .. }),
            "{bad:?}: {err}"
        );
    }
    let dir = TempDir::new("pki-names");
    init_ca(dir.path()).unwrap();
    assert!(issue(dir.path(), "../evil", Role::Router, Validity::default()).is_err());
    assert!(!dir.path().join("../evil.key").exists());
}

#[test]
fn rejects_empty_validity() {
    let dir = TempDir::new("pki-validity");
    init_ca(dir.path()).unwrap();
    let now = OffsetDateTime::now_utc();
    let v = Validity {
        not_before: now,
        not_after: now - Duration::days(1),
    };
    assert!(matches!(
        issue(dir.path(), "r", Role::Router, v),
        Err(PkiError::InvalidValidity { .. })
    ));
}

#[test]
fn expired_certificate_still_loads() {
    let dir = TempDir::new("pki-expired");
    init_ca(dir.path()).unwrap();
    let now = OffsetDateTime::now_utc();
    let v = Validity {
        not_before: now - Duration::days(10),
        not_after: now - Duration::days(1),
    };
    issue(dir.path(), "old", Role::Client, v).unwrap();
    assert_eq!(load_identity(dir.path(), "old").unwrap().role, Role::Client);
}

#[cfg(unix)]
#[test]
fn world_readable_key_is_refused() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("pki-perms");
    init_ca(dir.path()).unwrap();
    issue(dir.path(), "r1", Role::Router, Validity::default()).unwrap();
    let key = dir.path().join("r1.key");
    fs::set_permissions(&key, fs::Permissions::from_mode(0o644)).unwrap();
    let err = load_identity(dir.path(), "r1").unwrap_err();
    assert!(
        matches!(err, PkiError::KeyPermissions { mode: 0o644, .. }),
        "{err}"
    );
    let msg = err.to_string();
    assert!(msg.contains("r1.key") && msg.contains("chmod 600"), "{msg}");

    // The CA key is guarded the same way when issuing.
    fs::set_permissions(
        dir.path().join(CA_KEY_FILE),
        fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let err = issue(dir.path(), "r2", Role::Router, Validity::default()).unwrap_err();
    assert!(matches!(err, PkiError::KeyPermissions { .. }), "{err}");
}

#[test]
fn mixed_up_files_are_refused() {
    let a = TempDir::new("pki-mix-a");
    let b = TempDir::new("pki-mix-b");
    init_ca(a.path()).unwrap();
    init_ca(b.path()).unwrap();
    issue(a.path(), "r1", Role::Router, Validity::default()).unwrap();
    issue(a.path(), "r2", Role::Router, Validity::default()).unwrap();
    issue(b.path(), "x", Role::Client, Validity::default()).unwrap();

    // Key of another identity.
    fs::copy(a.path().join("r2.key"), a.path().join("r1.key")).unwrap();
    let err = load_identity(a.path(), "r1").unwrap_err();
    assert!(matches!(err, PkiError::KeyMismatch { .. }), "{err}");

    // Certificate of another deployment.
    fs::copy(b.path().join("x.pem"), a.path().join("x.pem")).unwrap();
    fs::copy(b.path().join("x.key"), a.path().join("x.key")).unwrap();
    let err = load_identity(a.path(), "x").unwrap_err();
    assert!(matches!(err, PkiError::NotIssuedByCa { .. }), "{err}");

    // A certificate renamed to another identity's file name.
    fs::copy(a.path().join("r2.pem"), a.path().join("r3.pem")).unwrap();
    fs::copy(a.path().join("r2.key"), a.path().join("r3.key")).unwrap();
    let err = load_identity(a.path(), "r3").unwrap_err();
    assert!(matches!(err, PkiError::NotAnIdentity { .. }), "{err}");

    // Garbage files fail with the file's name, no panic.
    fs::write(a.path().join("g.pem"), b"not pem").unwrap();
    fs::copy(a.path().join("r2.key"), a.path().join("g.key")).unwrap();
    let err = load_identity(a.path(), "g").unwrap_err();
    assert!(err.to_string().contains("g.pem"), "{err}");
}

#[test]
fn cert_identity_rejects_garbage() {
    assert!(cert_identity(&CertificateDer::from(vec![])).is_err());
    assert!(cert_identity(&CertificateDer::from(vec![0x30, 0x82, 0xff, 0xff, 0])).is_err());
}
