//! TLS for every door (`wss://`, gRPC over TLS): the gateway's certificate, and client
//! certificates as a way to authenticate.
//!
//! The server certificate is either a given one (PEM chain and key: ECDSA, RSA or Ed25519,
//! e.g. from the site's own CA or a public one, which browsers need) or the gateway's identity
//! from the deployment's PKI. Client certificates are verified against `client_ca` (by default
//! the deployment's `ca.pem`, so `roam pki issue NAME --role client` makes one); a verified
//! certificate names its holder: the roam identity (`NAME.id.roam`) when it is one, else the
//! subject's common name. What that name may do is listed in the gateway's `auth:` section.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::server::WebPkiClientVerifier;
use rustls::RootCertStore;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio::net::TcpStream;
use tokio_util::either::Either;

/// A connection after the door's TLS layer: plain TCP, or TLS over it.
pub type Stream = Either<TcpStream, tokio_rustls::server::TlsStream<TcpStream>>;

/// Whether clients present certificates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientCerts {
    /// Not asked for; clients authenticate with tokens (or not at all).
    #[default]
    Off,
    /// Asked for; a client without one may still use a token.
    Optional,
    /// Without a verified certificate the handshake fails.
    Required,
}

/// Why the TLS settings are unusable.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("{path}: {why}")]
    File { path: PathBuf, why: String },
    #[error("client_ca: {0}")]
    ClientCa(String),
    #[error("the certificate and key do not make a TLS configuration: {0}")]
    Config(#[from] rustls::Error),
}

/// The gateway's TLS settings, loaded.
#[derive(Debug)]
pub struct TlsSettings {
    pub chain: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
    pub client_certs: ClientCerts,
    /// Trust anchors for client certificates (used unless `client_certs` is `Off`).
    pub client_roots: Vec<CertificateDer<'static>>,
    /// The deployment's revocation list (its file is read again at each handshake): client
    /// certificates it revokes are refused.
    pub revoked: Option<roam_pki::Revocations>,
}

fn file_err(path: &Path, why: impl std::fmt::Display) -> TlsError {
    TlsError::File {
        path: path.to_owned(),
        why: why.to_string(),
    }
}

/// Every certificate in a PEM file (at least one).
pub fn read_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = std::fs::read(path).map_err(|e| file_err(path, e))?;
    let certs = rustls_pemfile::certs(&mut pem.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| file_err(path, format!("unreadable PEM: {e}")))?;
    if certs.is_empty() {
        return Err(file_err(
            path,
            "no PEM certificate (BEGIN CERTIFICATE) in it",
        ));
    }
    Ok(certs)
}

/// The private key in a PEM file (PKCS#8, PKCS#1 or SEC1).
pub fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = std::fs::read(path).map_err(|e| file_err(path, e))?;
    rustls_pemfile::private_key(&mut pem.as_slice())
        .map_err(|e| file_err(path, format!("unreadable PEM: {e}")))?
        .ok_or_else(|| file_err(path, "no PEM private key in it"))
}

impl TlsSettings {
    /// A server configuration offering `alpn` (`http/1.1` for WebSocket, `h2` for gRPC).
    pub fn server_config(&self, alpn: &[&[u8]]) -> Result<Arc<rustls::ServerConfig>, TlsError> {
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()?;
        let builder = match self.client_certs {
            ClientCerts::Off => builder.with_no_client_auth(),
            mode => {
                let mut roots = RootCertStore::empty();
                for c in &self.client_roots {
                    roots
                        .add(c.clone())
                        .map_err(|e| TlsError::ClientCa(e.to_string()))?;
                }
                let optional = mode == ClientCerts::Optional;
                let verifier = match &self.revoked {
                    Some(revoked) => {
                        roam_net::tls::door_client_verifier(roots, revoked.clone(), optional)
                            .map_err(|e| TlsError::ClientCa(e.to_string()))?
                    }
                    None => {
                        let v =
                            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
                        let v = if optional {
                            v.allow_unauthenticated()
                        } else {
                            v
                        };
                        v.build().map_err(|e| TlsError::ClientCa(e.to_string()))?
                    }
                };
                builder.with_client_cert_verifier(verifier)
            }
        };
        let mut cfg = builder.with_single_cert(self.chain.clone(), self.key.clone_key())?;
        cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Ok(Arc::new(cfg))
    }
}

/// The name a verified client certificate gives its holder: the roam identity when it is one,
/// else the subject's common name.
pub fn client_name(cert: &CertificateDer<'_>) -> Option<String> {
    if let Ok((name, _)) = roam_pki::cert_identity(cert) {
        return Some(name);
    }
    roam_pki::common_name(cert)
}

/// One door's TLS layer (or none): turns accepted TCP connections into [`Stream`]s.
#[derive(Clone, Default)]
pub struct DoorTls {
    acceptor: Option<tokio_rustls::TlsAcceptor>,
}

/// How long a client may take over its TLS handshake.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

impl DoorTls {
    /// No TLS: connections stay plain TCP.
    pub fn plain() -> DoorTls {
        DoorTls { acceptor: None }
    }

    pub fn new(config: Arc<rustls::ServerConfig>) -> DoorTls {
        DoorTls {
            acceptor: Some(tokio_rustls::TlsAcceptor::from(config)),
        }
    }

    pub fn is_tls(&self) -> bool {
        self.acceptor.is_some()
    }

    /// Completes the TLS handshake (if any); the client certificate's name when one was
    /// presented and verified.
    pub async fn accept(&self, tcp: TcpStream) -> std::io::Result<(Stream, Option<String>)> {
        let Some(acceptor) = &self.acceptor else {
            return Ok((Either::Left(tcp), None));
        };
        let tls = tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp))
            .await
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::TimedOut, "TLS handshake"))??;
        let name = tls
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|c| c.first())
            .and_then(client_name);
        Ok((Either::Right(tls), name))
    }
}
