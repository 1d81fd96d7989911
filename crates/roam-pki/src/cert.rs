//! Reading a roam identity out of a certificate: the name in its `NAME.id.roam` SAN, and
//! whether it is a router's.

use roam_proto::frame::Role;
use rustls_pki_types::{CertificateDer, ServerName};

use crate::{validate_name, PkiError, IDENTITY_SUFFIX, ROUTER_SERVER_NAME};

/// Why a certificate is not a roam identity.
#[derive(Debug, thiserror::Error)]
pub enum IdentityError {
    #[error("unparseable certificate: {0}")]
    Unparseable(String),
    #[error("trailing bytes after the certificate")]
    TrailingBytes,
    #[error("bad subjectAltName extension: {0}")]
    BadSubjectAltName(String),
    #[error("no subjectAltName extension")]
    NoSubjectAltName,
    #[error("no NAME.id.roam DNS name")]
    NoIdentityName,
    #[error("more than one NAME.id.roam DNS name")]
    SeveralIdentityNames,
    #[error("{0}")]
    BadName(Box<PkiError>),
    #[error("no subject common name")]
    NoCommonName,
    #[error("subject common name is not a string: {0}")]
    CommonNameNotText(String),
    #[error("subject CN {cn:?} does not match the SAN {name}{IDENTITY_SUFFIX}")]
    CommonNameMismatch { cn: String, name: String },
    #[error("rejected by webpki: {0}")]
    Webpki(webpki::Error),
    #[error("it names {found:?}, not {expected:?}")]
    NamesAnother { found: String, expected: String },
}

/// Reads a roam identity's name and role out of a leaf certificate.
///
/// The name is the single `NAME.id.roam` DNS SAN and must equal the subject CN; the role is
/// Router exactly when webpki accepts the certificate for `router.roam`. Does not check the
/// signature or validity: callers do that (rustls for peers, [`crate::load_identity`] for files).
pub fn cert_identity(der: &CertificateDer<'_>) -> Result<(String, Role), IdentityError> {
    use x509_parser::extensions::GeneralName;

    let (rest, cert) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| IdentityError::Unparseable(e.to_string()))?;
    if !rest.is_empty() {
        return Err(IdentityError::TrailingBytes);
    }
    let san = cert
        .subject_alternative_name()
        .map_err(|e| IdentityError::BadSubjectAltName(e.to_string()))?
        .ok_or(IdentityError::NoSubjectAltName)?;
    let mut names = san.value.general_names.iter().filter_map(|g| match g {
        GeneralName::DNSName(dns) => dns.strip_suffix(IDENTITY_SUFFIX),
        _ => None,
    });
    let name = names.next().ok_or(IdentityError::NoIdentityName)?;
    if names.next().is_some() {
        return Err(IdentityError::SeveralIdentityNames);
    }
    validate_name(name).map_err(|e| IdentityError::BadName(Box::new(e)))?;
    let mut cns = cert.subject().iter_common_name();
    let cn = cns
        .next()
        .ok_or(IdentityError::NoCommonName)?
        .as_str()
        .map_err(|e| IdentityError::CommonNameNotText(e.to_string()))?;
    if cns.next().is_some() || cn != name {
        return Err(IdentityError::CommonNameMismatch {
            cn: cn.to_owned(),
            name: name.to_owned(),
        });
    }

    let ee = webpki::EndEntityCert::try_from(der).map_err(IdentityError::Webpki)?;
    let router = ServerName::try_from(ROUTER_SERVER_NAME)
        .map_err(|e| IdentityError::Unparseable(e.to_string()))?;
    let role = match ee.verify_is_valid_for_subject_name(&router) {
        Ok(()) => Role::Router,
        Err(_) => Role::Client,
    };
    Ok((name.to_owned(), role))
}

/// The subject common name of a certificate (for certificates from other CAs, whose holders
/// are named by it). Does not check the signature: callers verify the certificate first.
pub fn common_name(der: &CertificateDer<'_>) -> Option<String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let cn = cert.subject().iter_common_name().next()?;
    cn.as_str().ok().map(str::to_owned)
}

/// A certificate's serial number: the raw contents of its DER integer, as revocation lists
/// name it.
pub fn cert_serial(der: &CertificateDer<'_>) -> Result<Vec<u8>, IdentityError> {
    let (_, cert) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| IdentityError::Unparseable(e.to_string()))?;
    Ok(cert.raw_serial().to_vec())
}

/// When a certificate stops being valid, seconds since the Unix epoch.
pub fn cert_not_after(der: &CertificateDer<'_>) -> Result<i64, IdentityError> {
    let (_, cert) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| IdentityError::Unparseable(e.to_string()))?;
    Ok(cert.validity().not_after.timestamp())
}
