//! Mutual-TLS configurations for links: TLS 1.3 only, the aws-lc-rs provider, the deployment CA as the
//! only trust anchor, ALPN `roam/1`.
//!
//! - A server (always a router) requires a client certificate chaining to the CA.
//! - A client (router or client identity) verifies the server name [`ROUTER_SERVER_NAME`],
//!   which only router certificates carry, so a client certificate cannot pose as a router.
//! - After the handshake, [`peer_identity`] reads the authenticated peer's name and role.
//!
//! Rejections are logged (tracing, target `roam_net::tls`) by the verifiers with a plain
//! explanation; [`explain`] and [`explain_quic`] give the same text for errors the shell sees.

use std::fmt;
use std::sync::Arc;

use roam_proto::frame::Role;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{
    AlertDescription, CertificateError, DigitallySignedStruct, DistinguishedName, RootCertStore,
    SignatureScheme,
};
use rustls_pki_types::{CertificateDer, ServerName, UnixTime};

use roam_pki::{self as pki, Identity};

pub use roam_pki::ROUTER_SERVER_NAME;

/// The only application protocol links speak.
pub const ALPN: &[u8] = b"roam/1";

/// Why a TLS configuration could not be built or a peer could not be identified.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("identity {name:?} is a client certificate; only a router identity can accept links")]
    NotARouter { name: String },
    #[error("the CA certificate is not a usable trust anchor: {0}")]
    BadCa(#[source] rustls::Error),
    #[error("building the certificate verifier: {0}")]
    Verifier(#[from] rustls::server::VerifierBuilderError),
    #[error("building the TLS configuration: {0}")]
    Config(#[source] rustls::Error),
    #[error("the TLS configuration is unusable for QUIC: {0}")]
    Quic(String),
    #[error("the peer presented no certificate")]
    NoPeerCertificate,
    #[error("the peer certificate is not a roam identity: {0}")]
    NotAnIdentity(roam_pki::IdentityError),
    /// A handshake failure; displays [`explain`]'s text followed by rustls's own reason.
    #[error("{}", explain(.0))]
    Handshake(#[source] rustls::Error),
}

/// The authenticated peer at the other end of a link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerIdentity {
    pub name: String,
    pub role: Role,
    /// Its certificate's serial number (raw DER contents), as revocation lists name it.
    pub serial: Vec<u8>,
    /// When its certificate expires, seconds since the Unix epoch.
    pub not_after: i64,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

fn roots(id: &Identity) -> Result<Arc<RootCertStore>, TlsError> {
    let mut roots = RootCertStore::empty();
    roots.add(id.ca.clone()).map_err(TlsError::BadCa)?;
    Ok(Arc::new(roots))
}

/// A router's server configuration: client certificates from our CA are mandatory.
pub fn server_config(id: &Identity) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    if id.role != Role::Router {
        return Err(TlsError::NotARouter {
            name: id.name.clone(),
        });
    }
    let provider = provider();
    let current = Current::new(id, provider.clone(), build_client_verifier)?;
    let hints = current.get().root_hint_subjects().to_vec();
    let verifier = Arc::new(LoggingClientVerifier { current, hints });
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(TlsError::Config)?
        .with_client_cert_verifier(verifier)
        .with_single_cert(id.cert_chain.clone(), id.key.clone_key())
        .map_err(TlsError::Config)?;
    config.alpn_protocols = vec![ALPN.to_vec()];
    Ok(Arc::new(config))
}

/// A dialer's configuration: presents our certificate, accepts only routers of our CA.
/// Connect with server name [`ROUTER_SERVER_NAME`].
pub fn client_config(id: &Identity) -> Result<Arc<rustls::ClientConfig>, TlsError> {
    let provider = provider();
    let verifier = Arc::new(LoggingServerVerifier {
        current: Current::new(id, provider.clone(), build_server_verifier)?,
    });
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(TlsError::Config)?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_client_auth_cert(id.cert_chain.clone(), id.key.clone_key())
        .map_err(TlsError::Config)?;
    config.alpn_protocols = vec![ALPN.to_vec()];
    Ok(Arc::new(config))
}

/// The server name a dialer must use; only router certificates are valid for it.
pub fn router_server_name() -> ServerName<'static> {
    ServerName::try_from(ROUTER_SERVER_NAME).expect("router.roam is a valid DNS name")
}

/// A quinn server configuration for a router identity.
pub fn quinn_server_config(
    id: &Identity,
    transport: Arc<quinn::TransportConfig>,
) -> Result<quinn::ServerConfig, TlsError> {
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(server_config(id)?)
        .map_err(|e| TlsError::Quic(e.to_string()))?;
    let mut config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    config.transport_config(transport);
    Ok(config)
}

/// A quinn client configuration; connect with server name [`ROUTER_SERVER_NAME`].
pub fn quinn_client_config(
    id: &Identity,
    transport: Arc<quinn::TransportConfig>,
) -> Result<quinn::ClientConfig, TlsError> {
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(client_config(id)?)
        .map_err(|e| TlsError::Quic(e.to_string()))?;
    let mut config = quinn::ClientConfig::new(Arc::new(crypto));
    config.transport_config(transport);
    Ok(config)
}

/// The name and role of an authenticated peer, from its end-entity certificate (the first of
/// `certs`, as rustls and quinn hand them over). Call only after the handshake succeeded:
/// this reads the certificate, the handshake is what verified it.
pub fn peer_identity(certs: &[CertificateDer<'_>]) -> Result<PeerIdentity, TlsError> {
    let leaf = certs.first().ok_or(TlsError::NoPeerCertificate)?;
    let (name, role) = pki::cert_identity(leaf).map_err(TlsError::NotAnIdentity)?;
    let serial = pki::cert_serial(leaf).map_err(TlsError::NotAnIdentity)?;
    let not_after = pki::cert_not_after(leaf).map_err(TlsError::NotAnIdentity)?;
    Ok(PeerIdentity {
        name,
        role,
        serial,
        not_after,
    })
}

/// The 64-bit router id derived from a certificate name: the first 8 bytes (big-endian) of
/// SHA-256("roam-router-id" || name). Derived, not chosen, so no peer can claim another's id.
pub fn router_id(name: &str) -> u64 {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    ctx.update(b"roam-router-id");
    ctx.update(name.as_bytes());
    let digest = ctx.finish();
    let mut id = [0u8; 8];
    id.copy_from_slice(&digest.as_ref()[..8]);
    u64::from_be_bytes(id)
}

/// A plain explanation of a TLS handshake error, followed by rustls's reason in parentheses.
pub fn explain(err: &rustls::Error) -> String {
    use rustls::Error as E;
    let what = match err {
        E::NoCertificatesPresented => {
            "the peer presented no certificate (anonymous peers are refused)"
        }
        E::InvalidCertificate(ce) => explain_cert(ce),
        E::AlertReceived(alert) => explain_alert(*alert),
        E::NoApplicationProtocol => "the peer does not speak roam/1 (ALPN mismatch)",
        _ => "TLS handshake failed",
    };
    format!("{what} (rustls: {err})")
}

fn explain_cert(err: &CertificateError) -> &'static str {
    use CertificateError as C;
    match err {
        C::UnknownIssuer | C::BadSignature => {
            "the peer certificate was not issued by this deployment's CA"
        }
        C::Expired | C::ExpiredContext { .. } => {
            "the peer certificate has expired (reissue it with `roam pki issue`)"
        }
        C::NotValidYet | C::NotValidYetContext { .. } => {
            "the peer certificate is not valid yet (check both clocks)"
        }
        C::NotValidForName | C::NotValidForNameContext { .. } => {
            "the peer is not a router: its certificate is not valid for router.roam"
        }
        C::InvalidPurpose | C::InvalidPurposeContext { .. } => {
            "the peer certificate is not allowed for this use (a client certificate used as a router?)"
        }
        C::BadEncoding => "the peer certificate is malformed",
        C::Revoked => "the peer certificate has been revoked (it is on the CA's revocation list)",
        _ => "the peer certificate was rejected",
    }
}

fn explain_alert(alert: AlertDescription) -> &'static str {
    use AlertDescription as A;
    match alert {
        A::CertificateRequired => "the peer requires our certificate and we sent none",
        A::UnknownCA | A::DecryptError => {
            "the peer refused our certificate: it was not issued by the peer's CA"
        }
        A::CertificateExpired => "the peer refused our certificate: it has expired",
        A::CertificateRevoked => "the peer refused our certificate: it has been revoked",
        A::BadCertificate | A::UnsupportedCertificate | A::CertificateUnknown => {
            "the peer refused our certificate"
        }
        A::NoApplicationProtocol => "the peer does not speak roam/1 (ALPN mismatch)",
        A::AccessDenied => "the peer denied access",
        _ => "the peer aborted the TLS handshake",
    }
}

/// A plain explanation of a QUIC connection error, naming the TLS alert when there is one.
pub fn explain_quic(err: &quinn::ConnectionError) -> String {
    use quinn::ConnectionError as Q;
    // QUIC carries TLS alerts as transport error codes 0x100 + alert (RFC 9001 4.8).
    let alert = |code: quinn::TransportErrorCode| {
        let code = u64::from(code);
        (0x100..0x200)
            .contains(&code)
            .then(|| AlertDescription::from((code - 0x100) as u8))
    };
    match err {
        Q::TransportError(e) => match alert(e.code) {
            Some(_) => local_alert_reason(&e.reason),
            None => format!("QUIC transport error: {e}"),
        },
        Q::ConnectionClosed(c) => match alert(c.error_code) {
            Some(a) => format!("{} ({a:?}: {err})", explain_alert(a)),
            None => format!("the peer closed the connection: {err}"),
        },
        _ => err.to_string(),
    }
}

/// Our own rustls failure, as quinn reports it: rustls's message is the only detail left.
fn local_alert_reason(reason: &str) -> String {
    let r = reason.to_ascii_lowercase();
    let hint = if r.contains("unknownissuer") || r.contains("badsignature") {
        "the peer certificate was not issued by this deployment's CA"
    } else if r.contains("revoked") {
        "the peer certificate has been revoked"
    } else if r.contains("expired") {
        "the peer certificate has expired"
    } else if r.contains("not valid yet") || r.contains("notvalidyet") {
        "the peer certificate is not valid yet (check both clocks)"
    } else if r.contains("not valid for name") || r.contains("notvalidforname") {
        "the peer is not a router: its certificate is not valid for router.roam"
    } else if r.contains("extended key usage") || r.contains("invalidpurpose") {
        "the peer certificate is not allowed for this use (a client certificate used as a router?)"
    } else if r.contains("no certificates") {
        "the peer presented no certificate (anonymous peers are refused)"
    } else {
        "TLS handshake failed"
    };
    format!("{hint} (rustls: {reason})")
}

/// Best-effort subject of a rejected certificate for logs: its claim, not a verified name.
fn claimed_name(cert: &CertificateDer<'_>) -> String {
    match pki::cert_identity(cert) {
        Ok((name, role)) => format!("{name} ({role:?})"),
        Err(_) => "<not a roam identity>".to_owned(),
    }
}

/// A webpki verifier for the CA with the newest revocation list the identity holds, rebuilt
/// when a newer list arrives (each handshake looks at the list's generation first).
struct Current<V: ?Sized> {
    roots: Arc<RootCertStore>,
    provider: Arc<CryptoProvider>,
    revoked: pki::Revocations,
    build: Build<V>,
    cache: std::sync::Mutex<(u64, Arc<V>)>,
}

type Build<V> = fn(
    Arc<RootCertStore>,
    Arc<CryptoProvider>,
    Option<&pki::RevocationList>,
) -> Result<Arc<V>, TlsError>;

impl<V: ?Sized> Current<V> {
    fn new(
        id: &Identity,
        provider: Arc<CryptoProvider>,
        build: Build<V>,
    ) -> Result<Self, TlsError> {
        Self::with(roots(id)?, id.revoked.clone(), provider, build)
    }

    fn with(
        roots: Arc<RootCertStore>,
        revoked: pki::Revocations,
        provider: Arc<CryptoProvider>,
        build: Build<V>,
    ) -> Result<Self, TlsError> {
        let generation = revoked.generation();
        let first = build(
            roots.clone(),
            provider.clone(),
            revoked.current().as_deref(),
        )?;
        Ok(Self {
            roots,
            provider,
            revoked,
            build,
            cache: std::sync::Mutex::new((generation, first)),
        })
    }

    /// The verifier for the list held now.
    fn get(&self) -> Arc<V> {
        // Another holder of the same file (a router's sweep, a client session) may have
        // written a newer list: a stat of the file per handshake keeps this one current.
        if let Err(e) = self.revoked.reload() {
            tracing::warn!("{e}");
        }
        let generation = self.revoked.generation();
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.0 != generation {
            let list = self.revoked.current();
            match (self.build)(self.roots.clone(), self.provider.clone(), list.as_deref()) {
                Ok(v) => *cache = (generation, v),
                // A list that verified against the CA is one webpki takes; should it not,
                // keep the previous verifier rather than accept everyone.
                Err(e) => tracing::error!("the revocation list could not be applied: {e}"),
            }
        }
        cache.1.clone()
    }
}

fn build_client_verifier(
    roots: Arc<RootCertStore>,
    provider: Arc<CryptoProvider>,
    list: Option<&pki::RevocationList>,
) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    // The builder's default already refuses anonymous clients.
    let mut b = WebPkiClientVerifier::builder_with_provider(roots, provider);
    if let Some(list) = list {
        // Leaves are signed by the CA itself: the list covers every certificate there is.
        b = b
            .with_crls([list.crl_der()])
            .only_check_end_entity_revocation();
    }
    Ok(b.build()?)
}

/// A verifier of client certificates for a gateway's doors: chains to `roots` (any CA the
/// operator names), and refuses what the deployment's list `revoked` revokes (certificates of
/// other CAs are not on it, and pass). `optional`: clients without a certificate are let in
/// (to authenticate otherwise).
pub fn door_client_verifier(
    roots: RootCertStore,
    revoked: pki::Revocations,
    optional: bool,
) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let build = if optional {
        build_optional_door_verifier
    } else {
        build_door_verifier
    };
    let current = Current::with(Arc::new(roots), revoked, provider(), build)?;
    let hints = current.get().root_hint_subjects().to_vec();
    Ok(Arc::new(DoorVerifier {
        current,
        hints,
        optional,
    }))
}

fn door_verifier(
    roots: Arc<RootCertStore>,
    provider: Arc<CryptoProvider>,
    list: Option<&pki::RevocationList>,
    optional: bool,
) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    let mut b = WebPkiClientVerifier::builder_with_provider(roots, provider);
    if let Some(list) = list {
        b = b
            .with_crls([list.crl_der()])
            .only_check_end_entity_revocation()
            .allow_unknown_revocation_status();
    }
    if optional {
        b = b.allow_unauthenticated();
    }
    Ok(b.build()?)
}

fn build_door_verifier(
    roots: Arc<RootCertStore>,
    provider: Arc<CryptoProvider>,
    list: Option<&pki::RevocationList>,
) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    door_verifier(roots, provider, list, false)
}

fn build_optional_door_verifier(
    roots: Arc<RootCertStore>,
    provider: Arc<CryptoProvider>,
    list: Option<&pki::RevocationList>,
) -> Result<Arc<dyn ClientCertVerifier>, TlsError> {
    door_verifier(roots, provider, list, true)
}

/// [`door_client_verifier`]'s verifier: webpki's, rebuilt with each list.
struct DoorVerifier {
    current: Current<dyn ClientCertVerifier>,
    hints: Vec<DistinguishedName>,
    optional: bool,
}

impl fmt::Debug for DoorVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DoorVerifier").finish_non_exhaustive()
    }
}

impl ClientCertVerifier for DoorVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        !self.optional
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.current
            .get()
            .verify_client_cert(end_entity, intermediates, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current
            .get()
            .verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current
            .get()
            .verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.current.get().supported_verify_schemes()
    }
}

fn build_server_verifier(
    roots: Arc<RootCertStore>,
    provider: Arc<CryptoProvider>,
    list: Option<&pki::RevocationList>,
) -> Result<Arc<WebPkiServerVerifier>, TlsError> {
    let mut b = WebPkiServerVerifier::builder_with_provider(roots, provider);
    if let Some(list) = list {
        b = b
            .with_crls([list.crl_der()])
            .only_check_end_entity_revocation();
    }
    Ok(b.build()?)
}

/// Wraps the webpki client verifier to log why a client was refused.
struct LoggingClientVerifier {
    current: Current<dyn ClientCertVerifier>,
    /// The CA's name, sent in the certificate request (the same for every list).
    hints: Vec<DistinguishedName>,
}

impl fmt::Debug for LoggingClientVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoggingClientVerifier")
            .finish_non_exhaustive()
    }
}

impl ClientCertVerifier for LoggingClientVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        true
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.current.get().verify_client_cert(end_entity, intermediates, now).inspect_err(|e| {
            tracing::warn!(claimed = %claimed_name(end_entity), "refused a client: {}", explain(e));
        })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current
            .get()
            .verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current
            .get()
            .verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.current.get().supported_verify_schemes()
    }
}

/// Wraps the webpki server verifier to log why a server was refused.
struct LoggingServerVerifier {
    current: Current<WebPkiServerVerifier>,
}

impl fmt::Debug for LoggingServerVerifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoggingServerVerifier")
            .finish_non_exhaustive()
    }
}

impl ServerCertVerifier for LoggingServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.current
            .get()
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
            .inspect_err(|e| {
                tracing::warn!(
                    claimed = %claimed_name(end_entity),
                    "refused a server: {}",
                    explain(e)
                );
            })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current
            .get()
            .verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current
            .get()
            .verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.current.get().supported_verify_schemes()
    }
}

#[cfg(test)]
#[path = "tls_tests.rs"]
mod tests;
