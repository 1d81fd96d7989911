//! The deployment's own certificate authority and the identities it issues (`roam pki`).
//! Files and certificates only: the TLS configurations made of an identity are `roam_net::tls`'s.
//!
//! A deployment directory holds `ca.pem`/`ca.key` and one `NAME.pem`/`NAME.key` pair per
//! identity. Every key is Ed25519 in PKCS#8 v1 PEM (RFC 8410, the form OpenSSL and other
//! standard tools read; mode 0600); keys written as PKCS#8 v2 by older versions still load.
//! A leaf carries:
//! - subject CN = `NAME` and the DNS SAN `NAME.id.roam`: who the peer is;
//! - for routers, the DNS SAN `router.roam` and EKU serverAuth: a dialer verifies the server name
//!   `router.roam`, so a client certificate can never pose as a router;
//! - EKU clientAuth for everyone (routers dial routers too).
//!
//! The same Ed25519 key that authenticates the TLS link signs envelopes
//! ([`Identity::signing_pkcs8`]).

use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose, SerialNumber, PKCS_ED25519,
};
use ring::rand::SecureRandom;
use roam_proto::frame::Role;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use time::{Duration, OffsetDateTime};

mod cert;
mod revocation;
pub use cert::{cert_identity, cert_not_after, cert_serial, common_name, IdentityError};
pub use revocation::{
    revoke, CrlError, Order, Reason, RevocationList, Revocations, Revoked, Target, ISSUED_FILE,
    MAX_LIST_BYTES, REVOKED_FILE,
};

/// File name of the CA certificate in a deployment directory.
pub const CA_CERT_FILE: &str = "ca.pem";
/// File name of the CA private key in a deployment directory.
pub const CA_KEY_FILE: &str = "ca.key";
/// DNS SAN that only router certificates carry; dialers verify it as the server name.
pub const ROUTER_SERVER_NAME: &str = "router.roam";
/// Suffix of the per-identity DNS SAN: `NAME.id.roam`.
pub const IDENTITY_SUFFIX: &str = ".id.roam";
/// Subject CN of the deployment CA.
const CA_COMMON_NAME: &str = "roam deployment CA";
/// Longest identity name: one DNS label.
pub const MAX_NAME_LEN: usize = 63;

/// Why a PKI operation failed. Every message names the file or value at fault.
#[derive(Debug, thiserror::Error)]
pub enum PkiError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: io::Error },
    #[error("a CA already exists in {}: {} is present; refusing to overwrite it", dir.display(), file.display())]
    CaExists { dir: PathBuf, file: PathBuf },
    #[error("no CA in {}: {} is missing (create one with `roam pki init --dir {}`)", dir.display(), file.display(), dir.display())]
    NoCa { dir: PathBuf, file: PathBuf },
    #[error("PKI directory {} does not exist (create a CA there with `roam pki init --dir {}`, or copy ca.pem and this identity's files there)", dir.display(), dir.display())]
    NoDir { dir: PathBuf },
    #[error("identity {name:?}: {} is missing (issue it with `roam pki issue {name} --dir {}`, adding `--role router` for a router or a proxy, or copy it there)", file.display(), dir.display())]
    NoIdentity {
        name: String,
        dir: PathBuf,
        file: PathBuf,
    },
    #[error("identity {name:?} already exists: {} is present; remove NAME.pem and NAME.key to reissue", file.display())]
    IdentityExists { name: String, file: PathBuf },
    #[error("invalid identity name {name:?}: {reason} (allowed: 1-63 characters of a-z, 0-9 and '-', not starting with '-')")]
    InvalidName { name: String, reason: &'static str },
    #[error("invalid validity: not_before {not_before} is not before not_after {not_after}")]
    InvalidValidity {
        not_before: OffsetDateTime,
        not_after: OffsetDateTime,
    },
    #[error("{}: {reason}", path.display())]
    BadFile { path: PathBuf, reason: String },
    #[error("{} is accessible by group or others (mode {mode:03o}); a private key must be private: run `chmod 600 {}`", path.display(), path.display())]
    KeyPermissions { path: PathBuf, mode: u32 },
    #[error("{}: not a roam identity certificate: {reason}", path.display())]
    NotAnIdentity {
        path: PathBuf,
        reason: IdentityError,
    },
    #[error("{}: its public key does not match the private key in {}", cert.display(), key.display())]
    KeyMismatch { cert: PathBuf, key: PathBuf },
    #[error("{}: not signed by the CA in {}: {reason}", cert.display(), ca.display())]
    NotIssuedByCa {
        cert: PathBuf,
        ca: PathBuf,
        reason: String,
    },
    #[error("nothing to revoke for {name:?}: {} holds no {name}.pem and the CA's record ({}) names no certificate issued to it; revoke by serial number instead (`openssl x509 -serial -noout -in {name}.pem` prints it)", dir.display(), ISSUED_FILE)]
    NothingToRevoke { name: String, dir: PathBuf },
    #[error("{context}: {source}")]
    Rcgen {
        context: String,
        source: rcgen::Error,
    },
}

/// Validity period of an issued certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Validity {
    pub not_before: OffsetDateTime,
    pub not_after: OffsetDateTime,
}

impl Validity {
    /// From an hour ago (tolerates clock skew between machines) for `days` days.
    pub fn days(days: i64) -> Self {
        let now = OffsetDateTime::now_utc();
        Self {
            not_before: now - Duration::hours(1),
            not_after: now + Duration::days(days),
        }
    }
}

impl Default for Validity {
    /// now - 1 h .. now + 365 days.
    fn default() -> Self {
        Self::days(365)
    }
}

/// A loaded identity: what a process needs to authenticate its links and sign envelopes.
pub struct Identity {
    /// The certificate's name (CN, and `NAME.id.roam`).
    pub name: String,
    /// Router if the certificate carries `router.roam`.
    pub role: Role,
    /// The leaf certificate only: every peer already holds the CA.
    pub cert_chain: Vec<CertificateDer<'static>>,
    /// The leaf's private key (PKCS#8).
    pub key: PrivateKeyDer<'static>,
    /// The deployment CA: the only trust anchor for peers.
    pub ca: CertificateDer<'static>,
    /// The same Ed25519 key as raw PKCS#8 DER, for `ring::signature::Ed25519KeyPair`.
    pub signing_pkcs8: Vec<u8>,
    /// The CA's newest revocation list this process holds (shared by its clones), kept in
    /// the identity's directory as `revoked.crl`: peers on it are refused.
    pub revoked: Revocations,
}

impl Clone for Identity {
    fn clone(&self) -> Self {
        Self {
            name: self.name.clone(),
            role: self.role,
            cert_chain: self.cert_chain.clone(),
            key: self.key.clone_key(),
            ca: self.ca.clone(),
            signing_pkcs8: self.signing_pkcs8.clone(),
            revoked: self.revoked.clone(),
        }
    }
}

impl fmt::Debug for Identity {
    // Never print key material.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("name", &self.name)
            .field("role", &self.role)
            .field("cert_chain", &self.cert_chain.len())
            .finish_non_exhaustive()
    }
}

/// Checks that `name` is one DNS label of `[a-z0-9][a-z0-9-]{0,62}`.
pub fn validate_name(name: &str) -> Result<(), PkiError> {
    let invalid = |reason| {
        Err(PkiError::InvalidName {
            name: name.to_owned(),
            reason,
        })
    };
    if name.is_empty() {
        return invalid("empty");
    }
    if name.len() > MAX_NAME_LEN {
        return invalid("longer than 63 characters");
    }
    if name.starts_with('-') {
        return invalid("starts with '-'");
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return invalid("contains a character other than a-z, 0-9 and '-'");
    }
    // `ca.pem`/`ca.key` belong to the CA.
    if name == "ca" {
        return invalid("reserved for the CA's own files");
    }
    Ok(())
}

/// Creates `dir` if needed and writes a new CA: `ca.pem` and `ca.key` (0600).
/// Refuses if either file already exists.
pub fn init_ca(dir: &Path) -> Result<(), PkiError> {
    let cert_path = dir.join(CA_CERT_FILE);
    let key_path = dir.join(CA_KEY_FILE);
    for file in [&key_path, &cert_path] {
        if file.exists() {
            return Err(PkiError::CaExists {
                dir: dir.to_owned(),
                file: file.clone(),
            });
        }
    }
    fs::create_dir_all(dir).map_err(|source| PkiError::Io {
        path: dir.to_owned(),
        source,
    })?;

    let key = generate_key()?;
    let mut params = CertificateParams::default();
    params.distinguished_name = DistinguishedName::new();
    // A random tag keeps two deployments' CAs apart by name too, so chain building against the
    // wrong CA fails as "unknown issuer" and logs tell the CAs apart.
    let mut tag = [0u8; 4];
    ring::rand::SystemRandom::new()
        .fill(&mut tag)
        .map_err(|_| rng_failed())?;
    params.distinguished_name.push(
        DnType::CommonName,
        format!("{CA_COMMON_NAME} {}", hex::encode(tag)),
    );
    // Leaves only: the CA signs identities, never intermediate CAs.
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    let now = OffsetDateTime::now_utc();
    params.not_before = now - Duration::hours(1);
    params.not_after = now + Duration::days(3650);
    params.serial_number = Some(random_serial()?);
    let cert = params
        .self_signed(&key)
        .map_err(rcgen_err("signing the CA certificate"))?;

    // Key first, with create_new: a concurrent `init` cannot interleave two CAs' halves.
    write_new(&key_path, key.serialize_pem().as_bytes(), true)?;
    write_new(&cert_path, cert.pem().as_bytes(), false)?;
    Ok(())
}

/// Issues `NAME.pem` (the leaf alone) and `NAME.key` (0600), signed by the CA in `dir`.
/// Refuses to overwrite an existing identity.
pub fn issue(dir: &Path, name: &str, role: Role, validity: Validity) -> Result<(), PkiError> {
    validate_name(name)?;
    if validity.not_before >= validity.not_after {
        return Err(PkiError::InvalidValidity {
            not_before: validity.not_before,
            not_after: validity.not_after,
        });
    }
    let cert_path = dir.join(format!("{name}.pem"));
    let key_path = dir.join(format!("{name}.key"));
    for file in [&key_path, &cert_path] {
        if file.exists() {
            return Err(PkiError::IdentityExists {
                name: name.to_owned(),
                file: file.clone(),
            });
        }
    }

    let ca_cert_path = dir.join(CA_CERT_FILE);
    let ca_key_path = dir.join(CA_KEY_FILE);
    for file in [&ca_cert_path, &ca_key_path] {
        if !file.exists() {
            return Err(PkiError::NoCa {
                dir: dir.to_owned(),
                file: file.clone(),
            });
        }
    }
    let key = generate_key()?;
    issue_with_key(dir, name, role, validity, key)
}

/// The PKCS#8 v1 encoding of an Ed25519 private key, up to the 32-byte seed (RFC 8410 §7:
/// SEQUENCE { version 0, AlgorithmIdentifier { id-Ed25519 1.3.101.112 },
/// OCTET STRING { OCTET STRING (32 bytes) } }). ring and rcgen write PKCS#8 v2, which adds
/// the public key and which OpenSSL 3.0 refuses (`unsupported`); every reader takes v1.
const ED25519_PKCS8_V1_PREFIX: [u8; 16] = [
    0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
];

/// A new Ed25519 key from the system's random source, held as PKCS#8 v1.
fn generate_key() -> Result<KeyPair, PkiError> {
    let mut der = Vec::with_capacity(ED25519_PKCS8_V1_PREFIX.len() + 32);
    der.extend_from_slice(&ED25519_PKCS8_V1_PREFIX);
    der.resize(ED25519_PKCS8_V1_PREFIX.len() + 32, 0);
    ring::rand::SystemRandom::new()
        .fill(&mut der[ED25519_PKCS8_V1_PREFIX.len()..])
        .map_err(|_| rng_failed())?;
    KeyPair::from_pkcs8_der_and_sign_algo(&der.into(), &PKCS_ED25519)
        .map_err(rcgen_err("generating a key"))
}

/// Issues identity `name` for `key` (see [`issue`]; the checks of the name, the validity and
/// the existing files are done there).
fn issue_with_key(
    dir: &Path,
    name: &str,
    role: Role,
    validity: Validity,
    key: KeyPair,
) -> Result<(), PkiError> {
    let cert_path = dir.join(format!("{name}.pem"));
    let key_path = dir.join(format!("{name}.key"));
    let (ca, ca_key) = load_ca(dir)?;

    let mut sans = vec![format!("{name}{IDENTITY_SUFFIX}")];
    if role == Role::Router {
        sans.push(ROUTER_SERVER_NAME.to_owned());
    }
    let uses = match role {
        Role::Router => vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ],
        Role::Client => vec![ExtendedKeyUsagePurpose::ClientAuth],
    };
    let serial = sign_leaf(
        name,
        sans,
        uses,
        validity,
        &key,
        (&ca, &ca_key),
        &cert_path,
        &key_path,
    )?;
    // The record lets `roam pki revoke NAME` find this certificate after its files left.
    revocation::record_issued(dir, name, role, &serial.to_bytes(), validity.not_after)
}

/// Signs a leaf certificate for `name` (its common name) with `sans` and `uses`, and writes
/// it and its key as new files.
#[allow(clippy::too_many_arguments)]
fn sign_leaf(
    name: &str,
    sans: Vec<String>,
    uses: Vec<ExtendedKeyUsagePurpose>,
    validity: Validity,
    key: &KeyPair,
    (ca, ca_key): (&rcgen::Certificate, &KeyPair),
    cert_path: &Path,
    key_path: &Path,
) -> Result<SerialNumber, PkiError> {
    let mut params = CertificateParams::new(sans).map_err(rcgen_err("building the SANs"))?;
    params.distinguished_name = DistinguishedName::new();
    params.distinguished_name.push(DnType::CommonName, name);
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    params.extended_key_usages = uses;
    params.not_before = validity.not_before;
    params.not_after = validity.not_after;
    let serial = random_serial()?;
    params.serial_number = Some(serial.clone());
    params.use_authority_key_identifier_extension = true;
    let cert = params
        .signed_by(key, ca, ca_key)
        .map_err(rcgen_err("signing the certificate"))?;
    write_new(key_path, key.serialize_pem().as_bytes(), true)?;
    write_new(cert_path, cert.pem().as_bytes(), false)?;
    Ok(serial)
}

/// The CA in `dir`, ready to sign: its certificate and its key (checked to be its own).
pub(crate) fn load_ca(dir: &Path) -> Result<(rcgen::Certificate, KeyPair), PkiError> {
    let ca_cert_path = dir.join(CA_CERT_FILE);
    let ca_key_path = dir.join(CA_KEY_FILE);
    for file in [&ca_cert_path, &ca_key_path] {
        if !file.exists() {
            return Err(PkiError::NoCa {
                dir: dir.to_owned(),
                file: file.clone(),
            });
        }
    }
    let ca_der = read_single_cert(&ca_cert_path)?;
    check_key_permissions(&ca_key_path)?;
    let ca_key_pem = read_text(&ca_key_path)?;
    let ca_key = KeyPair::from_pem(&ca_key_pem).map_err(|e| PkiError::BadFile {
        path: ca_key_path.clone(),
        reason: format!("not a usable private key: {e}"),
    })?;
    let ca_params =
        CertificateParams::from_ca_cert_der(&ca_der).map_err(|e| PkiError::BadFile {
            path: ca_cert_path.clone(),
            reason: format!("not a usable CA: {e}"),
        })?;
    // rcgen signs with the key we pass; make sure it is really the CA's, or every leaf
    // would fail verification later with a much less helpful error.
    if !same_public_key(&ca_der, ca_key.public_key_raw()) {
        return Err(PkiError::KeyMismatch {
            cert: ca_cert_path,
            key: ca_key_path,
        });
    }
    let ca = ca_params
        .self_signed(&ca_key)
        .map_err(rcgen_err("loading the CA"))?;
    Ok((ca, ca_key))
}

/// The files of identity `name`'s TLS server certificate for clients outside the realm.
pub fn tls_server_files(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    (
        dir.join(format!("{name}.tls.pem")),
        dir.join(format!("{name}.tls.key")),
    )
}

/// Issues `NAME.tls.pem` and `NAME.tls.key` (0600): a TLS server certificate for identity
/// `name` with an ECDSA P-256 key, signed by the CA in `dir`, for a gateway's doors. gRPC's
/// own TLS (BoringSSL in grpcio and the other gRPC C-core languages) does not offer Ed25519
/// in its handshake, so it cannot take the identity's own certificate. Named
/// `NAME.id.roam` and each of `hosts` (DNS names or IP addresses); server use only.
pub fn issue_tls_server(
    dir: &Path,
    name: &str,
    hosts: &[String],
    validity: Validity,
) -> Result<(), PkiError> {
    validate_name(name)?;
    if validity.not_before >= validity.not_after {
        return Err(PkiError::InvalidValidity {
            not_before: validity.not_before,
            not_after: validity.not_after,
        });
    }
    let (cert_path, key_path) = tls_server_files(dir, name);
    for file in [&key_path, &cert_path] {
        if file.exists() {
            return Err(PkiError::IdentityExists {
                name: name.to_owned(),
                file: file.clone(),
            });
        }
    }
    let (ca, ca_key) = load_ca(dir)?;
    let key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
        .map_err(rcgen_err("generating a key"))?;
    let mut sans = vec![format!("{name}{IDENTITY_SUFFIX}")];
    sans.extend(hosts.iter().cloned());
    let uses = vec![ExtendedKeyUsagePurpose::ServerAuth];
    sign_leaf(
        name,
        sans,
        uses,
        validity,
        &key,
        (&ca, &ca_key),
        &cert_path,
        &key_path,
    )
    .map(drop)
}

/// Checks that `dir` holds what identity `name` needs (`ca.pem`, `NAME.pem`, `NAME.key`),
/// naming the first missing piece and the `roam pki` command that makes it. Reads nothing:
/// [`load_identity`] checks the contents.
pub fn check_files(dir: &Path, name: &str) -> Result<(), PkiError> {
    validate_name(name)?;
    if !dir.is_dir() {
        return Err(PkiError::NoDir {
            dir: dir.to_owned(),
        });
    }
    let ca = dir.join(CA_CERT_FILE);
    if !ca.exists() {
        return Err(PkiError::NoCa {
            dir: dir.to_owned(),
            file: ca,
        });
    }
    for file in [
        dir.join(format!("{name}.pem")),
        dir.join(format!("{name}.key")),
    ] {
        if !file.exists() {
            return Err(PkiError::NoIdentity {
                name: name.to_owned(),
                dir: dir.to_owned(),
                file,
            });
        }
    }
    Ok(())
}

/// Loads identity `name` from `dir`: `NAME.pem`, `NAME.key` and `ca.pem`.
///
/// Checks that the key is private (unix mode), Ed25519, matches the certificate, that the
/// certificate was signed by `ca.pem` and is a roam identity named `name`. An expired
/// certificate still loads (with a warning): peers will refuse it, which is the clearer error.
pub fn load_identity(dir: &Path, name: &str) -> Result<Identity, PkiError> {
    check_files(dir, name)?;
    let cert_path = dir.join(format!("{name}.pem"));
    let key_path = dir.join(format!("{name}.key"));
    let ca_path = dir.join(CA_CERT_FILE);

    check_key_permissions(&key_path)?;
    let key_pem = read_bytes(&key_path)?;
    let pkcs8 = match rustls_pemfile::private_key(&mut key_pem.as_slice()) {
        Ok(Some(PrivateKeyDer::Pkcs8(k))) => k,
        Ok(Some(_)) => {
            return Err(bad_file(
                &key_path,
                "not a PKCS#8 key (\"BEGIN PRIVATE KEY\")",
            ));
        }
        Ok(None) => return Err(bad_file(&key_path, "no PEM private key found")),
        Err(e) => return Err(bad_file(&key_path, format!("unreadable PEM: {e}"))),
    };
    let signing_pkcs8 = pkcs8.secret_pkcs8_der().to_vec();
    let keypair = ring::signature::Ed25519KeyPair::from_pkcs8_maybe_unchecked(&signing_pkcs8)
        .map_err(|e| bad_file(&key_path, format!("not an Ed25519 PKCS#8 key: {e}")))?;

    let leaf = read_single_cert(&cert_path)?;
    let ca = read_single_cert(&ca_path)?;

    let (cert_name, role) = cert_identity(&leaf).map_err(|reason| PkiError::NotAnIdentity {
        path: cert_path.clone(),
        reason,
    })?;
    if cert_name != name {
        return Err(PkiError::NotAnIdentity {
            path: cert_path,
            reason: IdentityError::NamesAnother {
                found: cert_name,
                expected: name.to_owned(),
            },
        });
    }
    use ring::signature::KeyPair as _;
    if !same_public_key(&leaf, keypair.public_key().as_ref()) {
        return Err(PkiError::KeyMismatch {
            cert: cert_path,
            key: key_path,
        });
    }
    check_signed_by(&leaf, &ca).map_err(|reason| PkiError::NotIssuedByCa {
        cert: cert_path.clone(),
        ca: ca_path,
        reason,
    })?;
    if let Ok((_, parsed)) = x509_parser::parse_x509_certificate(&leaf) {
        if !parsed.validity().is_valid() {
            tracing::warn!(
                file = %cert_path.display(),
                not_before = %parsed.validity().not_before,
                not_after = %parsed.validity().not_after,
                "certificate is outside its validity period; peers will refuse it"
            );
        }
    }

    let revoked = Revocations::at(dir.join(REVOKED_FILE), ca.clone())?;
    Ok(Identity {
        name: cert_name,
        role,
        cert_chain: vec![leaf],
        key: PrivateKeyDer::Pkcs8(pkcs8),
        ca,
        signing_pkcs8,
        revoked,
    })
}

pub(crate) fn rcgen_err(context: &'static str) -> impl Fn(rcgen::Error) -> PkiError {
    move |source| PkiError::Rcgen {
        context: context.to_owned(),
        source,
    }
}

fn bad_file(path: &Path, reason: impl Into<String>) -> PkiError {
    PkiError::BadFile {
        path: path.to_owned(),
        reason: reason.into(),
    }
}

fn rng_failed() -> PkiError {
    PkiError::Io {
        path: PathBuf::from("<system random>"),
        source: io::Error::other("the system random generator failed"),
    }
}

/// A positive 127-bit serial: unique without a serial-number database.
fn random_serial() -> Result<SerialNumber, PkiError> {
    let mut serial = [0u8; 16];
    ring::rand::SystemRandom::new()
        .fill(&mut serial)
        .map_err(|_| rng_failed())?;
    serial[0] &= 0x7f;
    serial[0] |= 0x01; // no leading zero byte: DER would strip it
    Ok(SerialNumber::from_slice(&serial))
}

/// Writes a file that must not exist yet; private files get mode 0600 from creation on.
fn write_new(path: &Path, contents: &[u8], private: bool) -> Result<(), PkiError> {
    let io_err = |source| PkiError::Io {
        path: path.to_owned(),
        source,
    };
    let mut opts = fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(if private { 0o600 } else { 0o644 });
    }
    #[cfg(not(unix))]
    let _ = private;
    let mut file = opts.open(path).map_err(io_err)?;
    file.write_all(contents).map_err(io_err)?;
    file.sync_all().map_err(io_err)
}

/// Refuses a key file that group or others can access.
fn check_key_permissions(path: &Path) -> Result<(), PkiError> {
    let meta = fs::metadata(path).map_err(|source| PkiError::Io {
        path: path.to_owned(),
        source,
    })?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(PkiError::KeyPermissions {
                path: path.to_owned(),
                mode,
            });
        }
    }
    #[cfg(not(unix))]
    let _ = meta;
    Ok(())
}

pub(crate) fn read_bytes(path: &Path) -> Result<Vec<u8>, PkiError> {
    fs::read(path).map_err(|source| PkiError::Io {
        path: path.to_owned(),
        source,
    })
}

fn read_text(path: &Path) -> Result<String, PkiError> {
    String::from_utf8(read_bytes(path)?).map_err(|_| bad_file(path, "not a text (PEM) file"))
}

/// Reads a PEM file that must hold exactly one certificate.
pub(crate) fn read_single_cert(path: &Path) -> Result<CertificateDer<'static>, PkiError> {
    let pem = read_bytes(path)?;
    let mut certs = Vec::new();
    for item in rustls_pemfile::certs(&mut pem.as_slice()) {
        certs.push(item.map_err(|e| bad_file(path, format!("unreadable PEM: {e}")))?);
    }
    match certs.len() {
        1 => Ok(certs.remove(0)),
        0 => Err(bad_file(path, "no PEM certificate found")),
        n => Err(bad_file(
            path,
            format!("expected one certificate, found {n}"),
        )),
    }
}

/// Whether the certificate's subject public key is `raw` (Ed25519: the 32 key bytes).
fn same_public_key(cert: &CertificateDer<'_>, raw: &[u8]) -> bool {
    match x509_parser::parse_x509_certificate(cert) {
        Ok((_, c)) => c.public_key().subject_public_key.data.as_ref() == raw,
        Err(_) => false,
    }
}

/// Checks the leaf's signature against the CA's key (not the dates: see [`load_identity`]).
fn check_signed_by(leaf: &CertificateDer<'_>, ca: &CertificateDer<'_>) -> Result<(), String> {
    let (_, ca) = x509_parser::parse_x509_certificate(ca).map_err(|e| format!("bad CA: {e}"))?;
    let (_, leaf) = x509_parser::parse_x509_certificate(leaf).map_err(|e| e.to_string())?;
    if leaf.issuer() != ca.subject() {
        return Err(format!(
            "issuer is {:?}, the CA is {:?}",
            leaf.issuer().to_string(),
            ca.subject().to_string()
        ));
    }
    leaf.verify_signature(Some(ca.public_key()))
        .map_err(|e| format!("signature does not verify ({e}); was it issued by another CA?"))
}

#[cfg(test)]
mod tests;
