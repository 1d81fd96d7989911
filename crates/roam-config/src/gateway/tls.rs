//! The gateway's `tls:` section: a given certificate or the deployment identity, and client
//! certificates. Applies to every door the gateway opens.
//!
//! ```yaml
//! tls:
//!   cert: /etc/roam/gateway-web.pem   # a certificate chain (PEM) browsers and clients trust,
//!   key: /etc/roam/gateway-web.key    #   and its key (ECDSA, RSA or Ed25519)
//!   # pki: true                       # instead: the gateway's identity `id` from `pki:`
//!                                     #   (ID.tls.pem/.key when `roam pki tls-server` made
//!                                     #   them: ECDSA, which grpcio needs)
//!   client_certs: optional            # off (default), optional or required
//!   client_ca: /etc/roam/pki/ca.pem   # trust anchors for client certificates
//!                                     #   (default: ca.pem of the deployment's PKI)
//! ```

use std::path::{Path, PathBuf};

use roam_gateway::tls::{ClientCerts, TlsSettings};
use serde::Deserialize;

use crate::doc::{ConfigError, Doc, FieldPath};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsFile {
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    #[serde(default)]
    pub pki: bool,
    pub client_certs: Option<String>,
    pub client_ca: Option<PathBuf>,
}

/// Where the gateway's TLS certificate comes from, checked but not yet read.
#[derive(Debug)]
pub struct TlsSource {
    /// Where the section is in the file (`tls`, `gateway.tls`), for errors found on reading.
    at: FieldPath,
    server: Server,
    client_certs: ClientCerts,
    client_ca: PathBuf,
}

#[derive(Debug)]
enum Server {
    Files { cert: PathBuf, key: PathBuf },
    Pki,
}

impl TlsFile {
    /// `section`: where the `tls:` section is (`tls`, `gateway.tls`).
    pub fn check(
        self,
        doc: &Doc,
        pki: &Path,
        section: &FieldPath,
    ) -> Result<TlsSource, ConfigError> {
        let at = |f: &str| section.clone().key(f);
        let server = match (self.cert, self.key, self.pki) {
            (Some(cert), Some(key), false) => Server::Files { cert, key },
            (None, None, true) => Server::Pki,
            (Some(_), Some(_), true) => {
                return Err(doc.err(&at("pki"), "give either `cert:`/`key:` or `pki: true`, not both"))
            }
            (Some(_), None, _) => return Err(doc.err(&at("cert"), "missing `key:` beside `cert:`")),
            (None, Some(_), _) => return Err(doc.err(&at("key"), "missing `cert:` beside `key:`")),
            (None, None, false) => {
                return Err(doc.err(
                    section,
                    "no certificate: give `cert:` and `key:` (PEM files), or `pki: true` for the gateway's identity in `pki:`",
                ))
            }
        };
        let client_certs = match self.client_certs.as_deref() {
            None | Some("off") => ClientCerts::Off,
            Some("optional") => ClientCerts::Optional,
            Some("required") => ClientCerts::Required,
            Some(other) => {
                return Err(doc.err(
                    &at("client_certs"),
                    format!("{other:?} is not one of off, optional, required"),
                ))
            }
        };
        Ok(TlsSource {
            at: section.clone(),
            server,
            client_certs,
            client_ca: self
                .client_ca
                .unwrap_or_else(|| pki.join(roam_pki::CA_CERT_FILE)),
        })
    }
}

impl TlsSource {
    pub fn asks_certificates(&self) -> bool {
        self.client_certs != ClientCerts::Off
    }

    /// Reads the files; a mistake names the field whose file it is.
    pub fn load(&self, doc: &Doc, pki: &Path, id: &str) -> Result<TlsSettings, ConfigError> {
        let at = |f: &str| self.at.clone().key(f);
        let client_roots = match self.client_certs {
            ClientCerts::Off => Vec::new(),
            _ => roam_gateway::tls::read_certs(&self.client_ca)
                .map_err(|e| doc.err(&at("client_ca"), e.to_string()))?,
        };
        let (chain, key) = match &self.server {
            Server::Files { cert, key } => (
                roam_gateway::tls::read_certs(cert)
                    .map_err(|e| doc.err(&at("cert"), e.to_string()))?,
                roam_gateway::tls::read_key(key).map_err(|e| doc.err(&at("key"), e.to_string()))?,
            ),
            Server::Pki => {
                // A TLS server certificate of the identity (`roam pki tls-server`, ECDSA:
                // what gRPC's C-core clients need) when there is one, else the identity's own.
                let (cert, key) = roam_pki::tls_server_files(pki, id);
                if cert.exists() && key.exists() {
                    let bad = |e: roam_gateway::tls::TlsError| doc.err(&at("pki"), e.to_string());
                    let mut chain = roam_gateway::tls::read_certs(&cert).map_err(bad)?;
                    // The chain to the deployment's CA, as the identity's is sent.
                    let ca = pki.join(roam_pki::CA_CERT_FILE);
                    chain.extend(roam_gateway::tls::read_certs(&ca).map_err(bad)?);
                    (chain, roam_gateway::tls::read_key(&key).map_err(bad)?)
                } else {
                    let identity = roam_pki::load_identity(pki, id)
                        .map_err(|e| doc.err(&at("pki"), e.to_string()))?;
                    (identity.cert_chain, identity.key)
                }
            }
        };
        // The deployment's list, kept in the PKI directory (the gateway's router session
        // writes newer ones there): read as the doors' verifiers need it.
        let ca = pki.join(roam_pki::CA_CERT_FILE);
        let revoked = match roam_gateway::tls::read_certs(&ca) {
            Ok(mut cas) if !cas.is_empty() => Some(
                roam_pki::Revocations::at(pki.join(roam_pki::REVOKED_FILE), cas.remove(0))
                    .map_err(|e| doc.err(&at("pki"), e.to_string()))?,
            ),
            _ => None,
        };
        let settings = TlsSettings {
            chain,
            key,
            client_certs: self.client_certs,
            client_roots,
            revoked,
        };
        // Build once now, so a key that does not match its certificate is a start-up error.
        settings
            .server_config(&[b"http/1.1"])
            .map_err(|e| doc.err(&self.at, e.to_string()))?;
        Ok(settings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Result<TlsSource, String> {
        #[derive(Deserialize)]
        struct File {
            tls: TlsFile,
        }
        let doc = Doc::new(text, "gw.yaml");
        let f: File = doc.parse()?;
        Ok(f.tls
            .check(&doc, Path::new("/pki"), &FieldPath::new("tls"))?)
    }

    #[test]
    fn a_certificate_comes_from_files_or_the_pki_and_mistakes_are_located() {
        let t = check("tls:\n  cert: a.pem\n  key: a.key\n").unwrap();
        assert!(!t.asks_certificates());
        let t = check("tls:\n  pki: true\n  client_certs: required\n").unwrap();
        assert!(t.asks_certificates());
        assert_eq!(t.client_ca, Path::new("/pki/ca.pem"));
        for (text, want) in [
            (
                "tls:\n  cert: a.pem\n",
                "gw.yaml: line 2: tls.cert: missing `key:`",
            ),
            (
                "tls:\n  key: a.key\n",
                "gw.yaml: line 2: tls.key: missing `cert:`",
            ),
            (
                "tls:\n  client_certs: optional\n",
                "gw.yaml: line 2: tls: no certificate",
            ),
            (
                "tls:\n  pki: true\n  client_certs: maybe\n",
                "gw.yaml: line 3: tls.client_certs: \"maybe\" is not one of",
            ),
            (
                "tls:\n  pki: true\n  cert: a\n  key: b\n",
                "gw.yaml: line 2: tls.pki: give either",
            ),
            ("tls:\n  pki: true\n  ca: x\n", "gw.yaml"),
        ] {
            let e = check(text)
                .err()
                .unwrap_or_else(|| panic!("accepted {text}"));
            assert!(e.starts_with(want), "{text}\n got  {e}\n want {want}");
        }
    }
}
