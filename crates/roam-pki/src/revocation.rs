//! Revocation lists: which certificates of the deployment's CA no longer count.
//!
//! The list is a standard X.509 CRL (RFC 5280) signed by the CA: `openssl crl -in revoked.crl
//! -text` prints it and rustls's webpki verifiers take it as it is. Its CRL number orders
//! lists: a holder only ever moves to a higher number, so an old list replayed by anyone
//! cannot undo a revocation. The CA directory keeps the newest list in `revoked.crl`
//! ([`revoke`] writes it); every process that loads an identity from a directory holding
//! that file starts from it, and keeps newer lists it learns there ([`Revocations`]).
//!
//! This module is the list and the rule for taking a newer one; how lists travel between
//! routers is `roam-net`'s.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use rcgen::{
    CertificateRevocationListParams, KeyIdMethod, RevocationReason, RevokedCertParams, SerialNumber,
};
use rustls_pki_types::{CertificateDer, CertificateRevocationListDer};
use time::{Duration, OffsetDateTime};

use crate::{load_ca, read_bytes, PkiError};

/// File name of the revocation list in a deployment directory.
pub const REVOKED_FILE: &str = "revoked.crl";
/// File name of the CA's record of what it issued (serial, name, role, expiry per line), so
/// that a name can be revoked after its files have left the CA's directory.
pub const ISSUED_FILE: &str = "issued.log";
/// Largest list taken from a file or a peer: about 12,000 revoked certificates.
pub const MAX_LIST_BYTES: usize = 512 * 1024;

/// Why a revocation list was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CrlError {
    #[error("the list is {len} bytes, more than the {MAX_LIST_BYTES} taken")]
    TooLarge { len: usize },
    #[error("not a PEM or DER certificate revocation list: {0}")]
    Unparseable(String),
    #[error("trailing bytes after the list")]
    TrailingBytes,
    #[error("issued by {found:?}, not by this deployment's CA {ca:?}")]
    OtherIssuer { found: String, ca: String },
    #[error("its signature does not verify with this deployment's CA key (forged or corrupted)")]
    BadSignature,
    #[error("it has no CRL number, so it cannot be ordered against other lists")]
    NoNumber,
    #[error("its CRL number does not fit 64 bits")]
    NumberTooLarge,
    #[error("the CA certificate is unreadable: {0}")]
    BadCa(String),
}

/// A revocation list whose signature was verified against the CA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevocationList {
    der: Vec<u8>,
    number: u64,
    /// The `thisUpdate` time, seconds since the Unix epoch.
    issued_at: i64,
    /// Raw DER contents of each revoked serial number.
    serials: BTreeSet<Vec<u8>>,
}

impl RevocationList {
    /// Reads and verifies a list in PEM (`X509 CRL`) or DER form against `ca`.
    pub fn verify(bytes: &[u8], ca: &CertificateDer<'_>) -> Result<Self, CrlError> {
        if bytes.len() > MAX_LIST_BYTES {
            return Err(CrlError::TooLarge { len: bytes.len() });
        }
        let der = match rustls_pemfile::crls(&mut &bytes[..]).next() {
            Some(Ok(crl)) => crl.as_ref().to_vec(),
            Some(Err(e)) => return Err(CrlError::Unparseable(e.to_string())),
            None => bytes.to_vec(),
        };
        let (_, ca) =
            x509_parser::parse_x509_certificate(ca).map_err(|e| CrlError::BadCa(e.to_string()))?;
        let (rest, crl) =
            x509_parser::parse_x509_crl(&der).map_err(|e| CrlError::Unparseable(e.to_string()))?;
        if !rest.is_empty() {
            return Err(CrlError::TrailingBytes);
        }
        if crl.issuer() != ca.subject() {
            return Err(CrlError::OtherIssuer {
                found: crl.issuer().to_string(),
                ca: ca.subject().to_string(),
            });
        }
        crl.verify_signature(ca.public_key())
            .map_err(|_| CrlError::BadSignature)?;
        let number = crl.crl_number().ok_or(CrlError::NoNumber)?;
        let number = u64::try_from(number).map_err(|_| CrlError::NumberTooLarge)?;
        let serials = crl
            .iter_revoked_certificates()
            .map(|r| r.raw_serial().to_vec())
            .collect();
        let issued_at = crl.last_update().timestamp();
        drop(crl);
        Ok(Self {
            der,
            number,
            issued_at,
            serials,
        })
    }

    /// The list's CRL number: higher is newer.
    pub fn number(&self) -> u64 {
        self.number
    }

    /// When the CA signed it, seconds since the Unix epoch.
    pub fn issued_at(&self) -> i64 {
        self.issued_at
    }

    /// How many certificates it revokes.
    pub fn len(&self) -> usize {
        self.serials.len()
    }

    pub fn is_empty(&self) -> bool {
        self.serials.is_empty()
    }

    /// Whether the certificate with this serial (raw DER contents, as
    /// [`crate::cert_serial`] reads it) is revoked.
    pub fn revokes(&self, serial: &[u8]) -> bool {
        self.serials.contains(serial)
    }

    /// The list as DER, the form it travels in.
    pub fn der(&self) -> &[u8] {
        &self.der
    }

    /// The list as rustls's verifiers take it.
    pub fn crl_der(&self) -> CertificateRevocationListDer<'static> {
        CertificateRevocationListDer::from(self.der.clone())
    }

    /// The list as PEM, the form it is stored in.
    pub fn pem(&self) -> String {
        pem::encode(&pem::Pem::new("X509 CRL", self.der.clone()))
    }

    /// What taking `incoming` in place of `self` would be.
    pub fn compare(current: Option<&Self>, incoming: &Self) -> Order {
        match current {
            None => Order::Newer,
            Some(c) if incoming.number > c.number => Order::Newer,
            Some(c) if incoming.number < c.number => Order::Older,
            Some(c) if incoming.der == c.der => Order::Same,
            // Two different lists with one number: only a CA that lost track of its lists
            // signs those. Keep the one held; the operator sees the warning.
            Some(_) => Order::Conflict,
        }
    }
}

/// How a list offered compares with the one held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// A higher number (or nothing was held): taken.
    Newer,
    /// The list held already.
    Same,
    /// A lower number: refused, it would undo revocations.
    Older,
    /// The held list's number with other contents: refused.
    Conflict,
}

/// The newest revocation list a process holds, shared by everything that verifies peers
/// (TLS verifiers, the router's links), and where it is kept on disk.
///
/// Cloning shares the same list.
#[derive(Clone)]
pub struct Revocations {
    inner: Arc<RwLock<Held>>,
    ca: CertificateDer<'static>,
    file: Option<PathBuf>,
}

struct Held {
    list: Option<Arc<RevocationList>>,
    /// Bumped at each list taken, so verifiers know to rebuild.
    generation: u64,
    /// The file's modification time and length when last read or written.
    file_seen: Option<(std::time::SystemTime, u64)>,
}

impl std::fmt::Debug for Revocations {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self.current();
        f.debug_struct("Revocations")
            .field("number", &held.as_ref().map(|l| l.number))
            .field("revoked", &held.as_ref().map_or(0, |l| l.len()))
            .field("file", &self.file)
            .finish()
    }
}

impl Revocations {
    /// An empty list for `ca`, kept in memory only.
    pub fn in_memory(ca: CertificateDer<'static>) -> Self {
        Self {
            inner: Arc::new(RwLock::new(Held {
                list: None,
                generation: 0,
                file_seen: None,
            })),
            ca,
            file: None,
        }
    }

    /// The list kept in `file`: read from it now if it exists (a list that does not verify
    /// against `ca` is an error: starting without it would undo revocations), and newer
    /// lists written back to it.
    pub fn at(file: PathBuf, ca: CertificateDer<'static>) -> Result<Self, PkiError> {
        let mut me = Self::in_memory(ca);
        me.file = Some(file);
        me.reload()?;
        Ok(me)
    }

    /// The file the list is kept in, if any.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// The list held now.
    pub fn current(&self) -> Option<Arc<RevocationList>> {
        self.read().list.clone()
    }

    /// Changes at each list taken.
    pub fn generation(&self) -> u64 {
        self.read().generation
    }

    /// Whether the certificate with this serial is revoked by the list held.
    pub fn revokes(&self, serial: &[u8]) -> bool {
        self.read().list.as_ref().is_some_and(|l| l.revokes(serial))
    }

    /// Verifies `bytes` against the CA and takes it if it is newer than the list held
    /// (then also writing it to the file, if there is one).
    pub fn offer(&self, bytes: &[u8]) -> Result<(Order, Arc<RevocationList>), CrlError> {
        let list = RevocationList::verify(bytes, &self.ca)?;
        Ok(self.offer_verified(list, true))
    }

    /// Takes `list` if it is newer; `persist`: write it to the file (not when it came from
    /// there).
    fn offer_verified(&self, list: RevocationList, persist: bool) -> (Order, Arc<RevocationList>) {
        let mut held = self.write();
        let order = RevocationList::compare(held.list.as_deref(), &list);
        if order != Order::Newer {
            let kept = held.list.clone().unwrap_or_else(|| Arc::new(list));
            return (order, kept);
        }
        let list = Arc::new(list);
        held.list = Some(list.clone());
        held.generation += 1;
        if let Some(file) = self.file.as_ref().filter(|_| persist) {
            match write_atomically(file, list.pem().as_bytes()) {
                Ok(seen) => held.file_seen = Some(seen),
                Err(e) => tracing::warn!(
                    "revocation list {} is held but could not be kept on disk: {e}",
                    list.number
                ),
            }
        }
        (order, list)
    }

    /// Reads the file again if it changed since it was last read or written (an operator
    /// put a new list there). `None` when there is no file or it did not change.
    pub fn reload(&self) -> Result<Option<(Order, Arc<RevocationList>)>, PkiError> {
        let Some(file) = &self.file else {
            return Ok(None);
        };
        let Some(seen) = file_stamp(file) else {
            return Ok(None); // no list yet
        };
        if self.read().file_seen == Some(seen) {
            return Ok(None);
        }
        let bytes = read_bytes(file)?;
        let list = RevocationList::verify(&bytes, &self.ca).map_err(|e| PkiError::BadFile {
            path: file.clone(),
            reason: format!("not a usable revocation list: {e}"),
        })?;
        let offered = self.offer_verified(list, false);
        // Seen as read, even if it was older: it is not read again until it changes. An
        // older file is rewritten with the list held, so a restart starts from that.
        let mut held = self.write();
        held.file_seen = Some(seen);
        if offered.0 == Order::Older {
            if let Some(list) = held.list.clone() {
                if let Ok(seen) = write_atomically(file, list.pem().as_bytes()) {
                    held.file_seen = Some(seen);
                }
            }
        }
        Ok(Some(offered))
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Held> {
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Held> {
        self.inner.write().unwrap_or_else(|p| p.into_inner())
    }
}

fn file_stamp(file: &Path) -> Option<(std::time::SystemTime, u64)> {
    let meta = fs::metadata(file).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

/// Writes beside `file` and renames over it, so that a reader (or a crash) never sees half
/// a list.
fn write_atomically(file: &Path, contents: &[u8]) -> std::io::Result<(std::time::SystemTime, u64)> {
    let tmp = file.with_extension(format!("tmp.{}", std::process::id()));
    fs::write(&tmp, contents)?;
    fs::File::open(&tmp)?.sync_all()?;
    fs::rename(&tmp, file)?;
    file_stamp(file).ok_or_else(|| std::io::Error::other("the list vanished after writing"))
}

/// Why a certificate is revoked, as the list records it (RFC 5280 5.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    Unspecified,
    KeyCompromise,
    AffiliationChanged,
    Superseded,
    CessationOfOperation,
    PrivilegeWithdrawn,
}

impl Reason {
    fn rcgen(self) -> RevocationReason {
        match self {
            Reason::Unspecified => RevocationReason::Unspecified,
            Reason::KeyCompromise => RevocationReason::KeyCompromise,
            Reason::AffiliationChanged => RevocationReason::AffiliationChanged,
            Reason::Superseded => RevocationReason::Superseded,
            Reason::CessationOfOperation => RevocationReason::CessationOfOperation,
            Reason::PrivilegeWithdrawn => RevocationReason::PrivilegeWithdrawn,
        }
    }
}

/// What to revoke: every certificate issued to a name, or one serial number.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Name(String),
    /// Hex digits, as `openssl x509 -serial` prints them.
    Serial(String),
}

/// What [`revoke`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revoked {
    /// The new list's number.
    pub number: u64,
    /// Serials (hex) newly revoked by it; empty when all were revoked already.
    pub added: Vec<String>,
    /// How many certificates the list revokes in all.
    pub total: usize,
    /// Where the list was written.
    pub file: PathBuf,
}

/// Revokes `target` with the CA in `dir`: writes a new `revoked.crl` there holding every
/// earlier entry and the new ones, numbered one above the last.
pub fn revoke(dir: &Path, target: &Target, reason: Reason) -> Result<Revoked, PkiError> {
    let (ca, ca_key) = load_ca(dir)?;
    let file = dir.join(REVOKED_FILE);
    let ca_der = CertificateDer::from(read_bytes_pem_cert(dir)?);
    let previous = match fs::read(&file) {
        Ok(bytes) => {
            Some(
                RevocationList::verify(&bytes, &ca_der).map_err(|e| PkiError::BadFile {
                    path: file.clone(),
                    reason: format!("not a usable revocation list: {e}"),
                })?,
            )
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(PkiError::Io {
                path: file.clone(),
                source,
            })
        }
    };
    let serials = target_serials(dir, target)?;
    let now = OffsetDateTime::now_utc();
    let mut entries = match &previous {
        Some(p) => earlier_entries(p)?,
        None => Vec::new(),
    };
    let mut added = Vec::new();
    for serial in serials {
        if previous.as_ref().is_some_and(|p| p.revokes(&serial)) || added.contains(&serial) {
            continue;
        }
        entries.push(RevokedCertParams {
            serial_number: SerialNumber::from_slice(&serial),
            revocation_time: now,
            reason_code: Some(reason.rcgen()),
            invalidity_date: None,
        });
        added.push(serial);
    }
    let number = previous.as_ref().map_or(1, |p| p.number + 1);
    let params = CertificateRevocationListParams {
        this_update: now,
        // Lists are replaced by number, not by date: roam does not enforce nextUpdate, and
        // a far one keeps other tools from calling the list stale.
        next_update: now + Duration::days(3650),
        crl_number: SerialNumber::from(number),
        issuing_distribution_point: None,
        revoked_certs: entries,
        key_identifier_method: KeyIdMethod::Sha256,
    };
    let crl = params
        .signed_by(&ca, &ca_key)
        .map_err(crate::rcgen_err("signing the revocation list"))?;
    let list = RevocationList::verify(crl.der(), &ca_der).map_err(|e| PkiError::BadFile {
        path: file.clone(),
        reason: format!("the list just signed does not verify: {e}"),
    })?;
    write_atomically(&file, list.pem().as_bytes()).map_err(|source| PkiError::Io {
        path: file.clone(),
        source,
    })?;
    Ok(Revoked {
        number,
        added: added.iter().map(hex::encode).collect(),
        total: list.len(),
        file,
    })
}

fn read_bytes_pem_cert(dir: &Path) -> Result<Vec<u8>, PkiError> {
    Ok(crate::read_single_cert(&dir.join(crate::CA_CERT_FILE))?
        .as_ref()
        .to_vec())
}

/// The entries of an earlier list, to carry into the next one.
fn earlier_entries(list: &RevocationList) -> Result<Vec<RevokedCertParams>, PkiError> {
    let bad = |e: String| PkiError::BadFile {
        path: PathBuf::from(REVOKED_FILE),
        reason: e,
    };
    let (_, crl) = x509_parser::parse_x509_crl(list.der()).map_err(|e| bad(e.to_string()))?;
    crl.iter_revoked_certificates()
        .map(|r| {
            let at = OffsetDateTime::from_unix_timestamp(r.revocation_date.timestamp())
                .map_err(|e| bad(e.to_string()))?;
            Ok(RevokedCertParams {
                serial_number: SerialNumber::from_slice(r.raw_serial()),
                revocation_time: at,
                reason_code: r.reason_code().and_then(|(_, c)| reason_from_code(c.0)),
                invalidity_date: None,
            })
        })
        .collect()
}

fn reason_from_code(code: u8) -> Option<RevocationReason> {
    Some(match code {
        0 => RevocationReason::Unspecified,
        1 => RevocationReason::KeyCompromise,
        2 => RevocationReason::CaCompromise,
        3 => RevocationReason::AffiliationChanged,
        4 => RevocationReason::Superseded,
        5 => RevocationReason::CessationOfOperation,
        6 => RevocationReason::CertificateHold,
        8 => RevocationReason::RemoveFromCrl,
        9 => RevocationReason::PrivilegeWithdrawn,
        10 => RevocationReason::AaCompromise,
        _ => return None,
    })
}

/// The serials `target` names: every certificate the CA's record lists for a name, and the
/// one in `NAME.pem` if it is still there.
fn target_serials(dir: &Path, target: &Target) -> Result<Vec<Vec<u8>>, PkiError> {
    match target {
        Target::Serial(hex_serial) => {
            let digits: String = hex_serial.chars().filter(|c| *c != ':').collect();
            let serial = hex::decode(&digits).map_err(|e| PkiError::BadFile {
                path: PathBuf::from(hex_serial),
                reason: format!("not a hexadecimal serial number: {e}"),
            })?;
            Ok(vec![strip_leading_zeros(serial)])
        }
        Target::Name(name) => {
            crate::validate_name(name)?;
            let mut serials: Vec<Vec<u8>> = issued_serials(dir, name)?;
            let pem = dir.join(format!("{name}.pem"));
            if pem.exists() {
                let cert = crate::read_single_cert(&pem)?;
                let serial =
                    crate::cert_serial(&cert).map_err(|reason| PkiError::NotAnIdentity {
                        path: pem.clone(),
                        reason,
                    })?;
                if !serials.contains(&serial) {
                    serials.push(serial);
                }
            }
            if serials.is_empty() {
                return Err(PkiError::NothingToRevoke {
                    name: name.clone(),
                    dir: dir.to_owned(),
                });
            }
            Ok(serials)
        }
    }
}

/// DER integers carry no redundant leading zero byte; a serial typed with one still matches.
fn strip_leading_zeros(mut serial: Vec<u8>) -> Vec<u8> {
    while serial.len() > 1 && serial[0] == 0 && serial[1] & 0x80 == 0 {
        serial.remove(0);
    }
    serial
}

/// Appends an issued identity to the CA's record.
pub(crate) fn record_issued(
    dir: &Path,
    name: &str,
    role: roam_proto::frame::Role,
    serial: &[u8],
    not_after: OffsetDateTime,
) -> Result<(), PkiError> {
    use std::io::Write;
    let path = dir.join(ISSUED_FILE);
    let line = format!(
        "{}\t{name}\t{role:?}\t{}\n",
        hex::encode(serial),
        not_after.unix_timestamp()
    );
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| f.write_all(line.as_bytes()).map(|()| f))
        .map_err(|source| PkiError::Io {
            path: path.clone(),
            source,
        })?;
    file.flush().map_err(|source| PkiError::Io { path, source })
}

/// Every serial the CA's record lists for `name` (none when there is no record).
fn issued_serials(dir: &Path, name: &str) -> Result<Vec<Vec<u8>>, PkiError> {
    let path = dir.join(ISSUED_FILE);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(PkiError::Io { path, source }),
    };
    Ok(text
        .lines()
        .filter_map(|line| {
            let mut fields = line.split('\t');
            let serial = fields.next()?;
            (fields.next()? == name).then(|| hex::decode(serial).ok())?
        })
        .collect())
}

#[cfg(test)]
#[path = "revocation_tests.rs"]
mod tests;
