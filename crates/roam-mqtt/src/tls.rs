//! TLS to the broker (`broker.tls`, `client.tls`): rustls with ring, as roam's links.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::params::{BrokerTls, ClientTls};

#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: no certificate in it")]
    NoCertificate { path: PathBuf },
    #[error("{path}: no private key in it")]
    NoKey { path: PathBuf },
    #[error("{0}")]
    Rustls(#[from] rustls::Error),
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_path_buf(),
        source,
    })
}

fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(path)?;
    let certs: Vec<_> = rustls_pemfile::certs(&mut pem.as_slice())
        .filter_map(Result::ok)
        .collect();
    if certs.is_empty() {
        return Err(TlsError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

/// The client configuration for a broker: its CA, an optional client certificate, ALPN.
pub fn client_config(
    broker: &BrokerTls,
    client: &ClientTls,
) -> Result<rustls::ClientConfig, TlsError> {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = if client.server_cert_auth {
        let mut roots = RootCertStore::empty();
        let (added, _) = roots.add_parsable_certificates(certificates(&broker.ca_certificate)?);
        if added == 0 {
            return Err(TlsError::NoCertificate {
                path: broker.ca_certificate.clone(),
            });
        }
        builder.with_root_certificates(roots)
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyServer(provider)))
    };
    let mut config = match (&client.certificate, &client.key) {
        (Some(cert), Some(key)) => {
            let chain = certificates(cert)?;
            let pem = read(key)?;
            let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut pem.as_slice())
                .ok()
                .flatten()
                .ok_or_else(|| TlsError::NoKey { path: key.clone() })?;
            builder.with_client_auth_cert(chain, key)?
        }
        _ => builder.with_no_client_auth(),
    };
    config.alpn_protocols = client
        .alpn_protos
        .iter()
        .map(|p| p.as_bytes().to_vec())
        .collect();
    Ok(config)
}

/// `server_cert_auth: false`: any certificate is accepted (mqtt_client's option for test
/// brokers); signatures are still checked, so the session key is the presenter's.
#[derive(Debug)]
struct AnyServer(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
