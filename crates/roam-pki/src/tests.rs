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

/// The DER inside a PEM private key file.
fn key_der(path: &Path) -> Vec<u8> {
    let pem = fs::read(path).unwrap();
    match rustls_pemfile::private_key(&mut pem.as_slice()).unwrap() {
        Some(PrivateKeyDer::Pkcs8(k)) => k.secret_pkcs8_der().to_vec(),
        other => panic!("not a PKCS#8 key: {other:?}"),
    }
}

#[test]
fn keys_are_written_as_pkcs8_v1_that_openssl_reads() {
    let dir = TempDir::new("pki-v1");
    let d = dir.path();
    init_ca(d).unwrap();
    issue(d, "r1", Role::Router, Validity::default()).unwrap();
    for file in ["ca.key", "r1.key"] {
        let der = key_der(&d.join(file));
        assert_eq!(der.len(), 48, "{file}");
        assert_eq!(der[..16], ED25519_PKCS8_V1_PREFIX, "{file}");
        // The standard tool reads it (it refused the v2 form: "unsupported").
        let out = std::process::Command::new("openssl")
            .args(["pkey", "-noout", "-text", "-in"])
            .arg(d.join(file))
            .output()
            .expect("run openssl (Debian package openssl)");
        assert!(
            out.status.success(),
            "openssl pkey {file}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("ED25519 Private-Key"));
    }
    // roam and rustls take them.
    let id = load_identity(d, "r1").unwrap();
    rustls::crypto::aws_lc_rs::sign::any_supported_type(&id.key).unwrap();
}

/// What ring (and so rcgen, and roam before keys were written as v1) wrote: PKCS#8 v2 with
/// the public key.
fn as_v2(v1: &[u8]) -> Vec<u8> {
    use ring::signature::KeyPair as _;
    let public = ring::signature::Ed25519KeyPair::from_pkcs8_maybe_unchecked(v1).unwrap();
    let mut v2 = vec![
        0x30, 0x51, 0x02, 0x01, 0x01, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    v2.extend_from_slice(&v1[16..48]);
    v2.extend_from_slice(&[0x81, 0x21, 0x00]);
    v2.extend_from_slice(public.public_key().as_ref());
    // ring's strict reader accepts only v2: this is the old form.
    ring::signature::Ed25519KeyPair::from_pkcs8(&v2).unwrap();
    v2
}

#[test]
fn keys_written_as_pkcs8_v2_by_older_versions_still_load() {
    let dir = TempDir::new("pki-v2");
    let d = dir.path();
    init_ca(d).unwrap();
    // A leaf issued the old way: rcgen's own key generation (ring's PKCS#8 v2).
    let old = KeyPair::generate_for(&PKCS_ED25519).unwrap();
    assert_eq!(old.serialized_der()[..5], [0x30, 0x51, 0x02, 0x01, 0x01]);
    issue_with_key(d, "old", Role::Client, Validity::default(), old).unwrap();
    let id = load_identity(d, "old").unwrap();
    rustls::crypto::aws_lc_rs::sign::any_supported_type(&id.key).unwrap();
    roam_proto::SigningIdentity::from_pkcs8(&id.signing_pkcs8).unwrap();

    // A CA key in the old form still issues.
    let ca_key = d.join(CA_KEY_FILE);
    let v2 = as_v2(&key_der(&ca_key));
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        base64_lines(&v2)
    );
    fs::remove_file(&ca_key).unwrap();
    write_new(&ca_key, pem.as_bytes(), true).unwrap();
    issue(d, "new", Role::Router, Validity::default()).unwrap();
    load_identity(d, "new").unwrap();
}

/// Standard base64 (PEM body) without a dependency: the test's own encoder.
fn base64_lines(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[test]
fn missing_files_name_the_command_that_makes_them() {
    let dir = TempDir::new("pki-missing");
    let nowhere = dir.path().join("nope");
    let e = load_identity(&nowhere, "r1").unwrap_err();
    assert!(matches!(e, PkiError::NoDir { .. }), "{e}");
    assert!(e.to_string().contains("roam pki init --dir"), "{e}");
    let e = check_files(dir.path(), "r1").unwrap_err();
    assert!(matches!(e, PkiError::NoCa { .. }), "{e}");
    assert!(e.to_string().contains("ca.pem"), "{e}");
    init_ca(dir.path()).unwrap();
    let e = load_identity(dir.path(), "r1").unwrap_err();
    assert!(matches!(e, PkiError::NoIdentity { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("r1.pem") && msg.contains("roam pki issue r1 --dir"),
        "{msg}"
    );
}

#[test]
fn a_tls_server_certificate_is_ecdsa_from_the_ca_and_never_overwritten() {
    let dir = TempDir::new("pki-tls-server");
    let d = dir.path();
    assert!(matches!(
        issue_tls_server(d, "gw", &[], Validity::default()),
        Err(PkiError::NoCa { .. })
    ));
    init_ca(d).unwrap();
    let hosts = ["gw.example.com".to_string(), "127.0.0.1".to_string()];
    issue_tls_server(d, "gw", &hosts, Validity::default()).unwrap();
    let (cert, key) = tls_server_files(d, "gw");
    #[cfg(unix)]
    assert_eq!(mode(&key), 0o600);
    let key_pem = fs::read_to_string(&key).unwrap();
    let key = KeyPair::from_pem(&key_pem).unwrap();
    assert!(key.is_compatible(&rcgen::PKCS_ECDSA_P256_SHA256));
    let der = read_single_cert(&cert).unwrap();
    let (_, parsed) = x509_parser::parse_x509_certificate(&der).unwrap();
    let san = parsed.subject_alternative_name().unwrap().unwrap().value;
    let names = format!("{:?}", san.general_names);
    assert!(
        names.contains("gw.id.roam") && names.contains("gw.example.com"),
        "{names}"
    );
    assert!(names.contains("IPAddress([127, 0, 0, 1])"), "{names}");
    // Issued by the CA (the chain itself is verified by grpcio in tests/gateway/tls.rs).
    let ca = read_single_cert(&d.join(CA_CERT_FILE)).unwrap();
    let (_, ca) = x509_parser::parse_x509_certificate(&ca).unwrap();
    assert_eq!(parsed.issuer(), ca.subject());
    assert!(matches!(
        issue_tls_server(d, "gw", &[], Validity::default()),
        Err(PkiError::IdentityExists { .. })
    ));
}
