//! TLS to the broker (`broker.tls`, `client.tls`): rustls with the aws-lc-rs provider, as roam's links.

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
    #[error("client.tls.certificate {path}: certificate {index} is an X.509 version 1 certificate, which brokers on current TLS stacks refuse; reissue it as version 3 (openssl x509 -req ... -extfile with basicConstraints and extendedKeyUsage clientAuth)")]
    Version1 { path: PathBuf, index: usize },
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

/// This client's certificate chain. Its own certificate must be X.509 version 3: the broker
/// would refuse a version 1 one, and the error would come back as the broker's (a CA may be
/// version 1: rustls takes such trust anchors).
fn client_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let chain = certificates(path)?;
    if chain.first().is_some_and(|c| is_version1(c)) {
        return Err(TlsError::Version1 {
            path: path.to_path_buf(),
            index: 1,
        });
    }
    Ok(chain)
}

/// Whether a DER certificate is X.509 version 1: its TBSCertificate starts without the
/// explicit `[0]` version field that versions 2 and 3 carry. Anything that does not even
/// parse that far is left to rustls to refuse with its own error.
fn is_version1(der: &[u8]) -> bool {
    /// The contents of the DER element at the start of `b` if it has tag `tag`.
    fn contents(b: &[u8], tag: u8) -> Option<&[u8]> {
        if *b.first()? != tag {
            return None;
        }
        let first = *b.get(1)?;
        let (len, start) = if first < 0x80 {
            (first as usize, 2)
        } else {
            let n = (first & 0x7f) as usize;
            if n == 0 || n > 4 {
                return None;
            }
            let len = b
                .get(2..2 + n)?
                .iter()
                .fold(0usize, |a, x| a << 8 | *x as usize);
            (len, 2 + n)
        };
        b.get(start..start.checked_add(len)?)
    }
    const SEQUENCE: u8 = 0x30;
    const VERSION: u8 = 0xa0;
    contents(der, SEQUENCE)
        .and_then(|cert| contents(cert, SEQUENCE))
        .and_then(|tbs| tbs.first())
        .is_some_and(|tag| *tag != VERSION)
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
            let chain = client_chain(cert)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_1_certificates_are_told_apart() {
        // SEQUENCE { SEQUENCE { [0] { INTEGER 2 }, INTEGER 1 } }: version 3.
        let v3 = [
            0x30, 0x09, 0x30, 0x07, 0xa0, 0x03, 0x02, 0x01, 0x02, 0x02, 0x01,
        ];
        // SEQUENCE { SEQUENCE { INTEGER 1 } }: no version field, version 1.
        let v1 = [0x30, 0x05, 0x30, 0x03, 0x02, 0x01, 0x01];
        assert!(!is_version1(&v3));
        assert!(is_version1(&v1));
        assert!(!is_version1(&[]));
        assert!(!is_version1(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]));
        assert!(!is_version1(&[0x30, 0x80]));
    }
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
