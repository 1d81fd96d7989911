//! The sections that configure a gateway's doors (`rosbridge:`, `grpc:`, `foxglove:`,
//! `limits:`, `auth:`, `tls:`), checked the same way at the top of a gateway's file and under
//! `gateway:` in a proxy's file (errors name the field with its section:
//! `gateway.limits.max_clients`).

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use roam_gateway::admission::AdmissionLimits;
use roam_gateway::auth::{parse_expiry, Identity, Permissions, Rule, TokenEntry, Tokens};
use roam_gateway::{Limits, OutboxLimits};
use serde::Deserialize;

use super::tls::{TlsFile, TlsSource};
use crate::addr::{check_host_port, Use};
use crate::doc::{ConfigError, Doc, FieldPath};

/// The shortest token accepted: shorter ones can be guessed.
const MIN_TOKEN_LEN: usize = 16;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RosbridgeFile {
    pub listen: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcFile {
    pub listen: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FoxgloveFile {
    pub listen: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsFile {
    pub max_frame_bytes: Option<usize>,
    pub max_clients: Option<usize>,
    pub max_pending_clients: Option<usize>,
    pub max_pending_per_source: Option<usize>,
    pub auth_timeout_s: Option<f64>,
    pub client_queue_bytes: Option<usize>,
    pub default_queue_length: Option<usize>,
    pub max_queue_length: Option<usize>,
    pub max_topics_per_client: Option<usize>,
    pub max_calls_per_client: Option<usize>,
    pub call_timeout_s: Option<f64>,
    pub definition_wait_s: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthFile {
    #[serde(default)]
    pub tokens: Vec<TokenFile>,
    /// Identities admitted by a verified client certificate (see `tls.client_certs`).
    #[serde(default)]
    pub certificates: Vec<CertificateFile>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CertificateFile {
    /// The certificate's roam identity name, or its subject CN for another CA's certificate.
    pub identity: String,
    #[serde(default)]
    pub subscribe: RuleFile,
    #[serde(default)]
    pub publish: RuleFile,
    #[serde(default)]
    pub call: RuleFile,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenFile {
    pub identity: String,
    pub token: String,
    pub expires: Option<String>,
    #[serde(default)]
    pub subscribe: RuleFile,
    #[serde(default)]
    pub publish: RuleFile,
    #[serde(default)]
    pub call: RuleFile,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleFile {
    #[serde(default)]
    pub allow: Vec<String>,
    #[serde(default)]
    pub deny: Vec<String>,
}

/// A door's address: its flag, else `SECTION.listen`, else `default` when the section is
/// there (or `always`); None: the door is off.
fn door_listen(
    doc: &Doc,
    field: FieldPath,
    flag: Option<(&str, &str)>,
    file: Option<Option<&String>>,
    default: &str,
    always: bool,
) -> Result<Option<SocketAddr>, ConfigError> {
    let (text, bad): (String, &dyn Fn(String) -> ConfigError) = match (flag, file) {
        (Some((name, f)), _) => (f.to_string(), &move |e| doc.whole(format!("{name}: {e}"))),
        (None, Some(listen)) => (listen.cloned().unwrap_or_else(|| default.into()), &|e| {
            doc.err(&field, e)
        }),
        (None, None) if always => (default.to_string(), &|e| doc.err(&field, e)),
        (None, None) => return Ok(None),
    };
    check_host_port(&text, Use::Listen).map_err(|e| bad(e.to_string()))?;
    text.parse().map(Some).map_err(|_| {
        bad(format!(
            "{text:?} is not an IP address and port (e.g. {default})"
        ))
    })
}

/// A field under the doors' sections (`at` empty: at the top of the file).
fn field(at: &str, rest: &str) -> FieldPath {
    FieldPath::new(&format!("{at}.{rest}"))
}

/// The door sections, wherever the file has them.
#[derive(Debug, Default)]
pub struct DoorsFile {
    pub rosbridge: Option<RosbridgeFile>,
    pub grpc: Option<GrpcFile>,
    pub foxglove: Option<FoxgloveFile>,
    pub limits: LimitsFile,
    pub auth: Option<AuthFile>,
    pub tls: Option<TlsFile>,
}

/// Flags that replace a door's address (a gateway's `--listen`, `--grpc-listen` and
/// `--foxglove-listen`).
#[derive(Debug, Default)]
pub struct DoorFlags {
    pub rosbridge: Option<String>,
    pub grpc: Option<String>,
    pub foxglove: Option<String>,
}

/// The doors' settings, checked.
#[derive(Debug)]
pub struct Doors {
    /// The rosbridge WebSocket door's address; None: off.
    pub rosbridge: Option<SocketAddr>,
    /// The gRPC door's address; None: off.
    pub grpc: Option<SocketAddr>,
    /// The Foxglove WebSocket door's address; None: off.
    pub foxglove: Option<SocketAddr>,
    pub limits: Limits,
    pub tokens: Option<Tokens>,
    pub tls: Option<TlsSource>,
}

impl Doors {
    /// What the gateway opens; the TLS files (`tls`) are read apart, into `TlsSettings`.
    pub fn openings(self) -> roam_gateway::doors::Doors {
        roam_gateway::doors::Doors {
            rosbridge: self.rosbridge,
            grpc: self.grpc,
            foxglove: self.foxglove,
            limits: self.limits,
            tokens: self.tokens,
        }
    }
}

impl DoorsFile {
    /// Checks the sections found under `at` (empty: the top of the file). `rosbridge_always`:
    /// the rosbridge door is on without its section (a gateway; a proxy opens only the doors
    /// it lists). `pki`: the deployment's PKI (the default client CA, `tls.pki`).
    pub fn check(
        self,
        doc: &Doc,
        at: &str,
        pki: &Path,
        flags: &DoorFlags,
        rosbridge_always: bool,
    ) -> Result<Doors, ConfigError> {
        let rosbridge = door_listen(
            doc,
            field(at, "rosbridge.listen"),
            flags.rosbridge.as_deref().map(|f| ("--listen", f)),
            self.rosbridge.as_ref().map(|r| r.listen.as_ref()),
            "0.0.0.0:9090",
            rosbridge_always,
        )?;
        let grpc = door_listen(
            doc,
            field(at, "grpc.listen"),
            flags.grpc.as_deref().map(|f| ("--grpc-listen", f)),
            self.grpc.as_ref().map(|g| g.listen.as_ref()),
            "0.0.0.0:50051",
            false,
        )?;
        let foxglove = door_listen(
            doc,
            field(at, "foxglove.listen"),
            flags.foxglove.as_deref().map(|f| ("--foxglove-listen", f)),
            self.foxglove.as_ref().map(|f| f.listen.as_ref()),
            "0.0.0.0:8765",
            false,
        )?;
        let limits = self.limits.check(doc, at)?;
        let tokens = self.auth.map(|a| a.check(doc, at)).transpose()?;
        let tls = self
            .tls
            .map(|t| t.check(doc, pki, &field(at, "tls")))
            .transpose()?;
        if let (Some(t), None) = (&tls, &tokens) {
            if t.asks_certificates() {
                return Err(doc.err(
                    &field(at, "tls.client_certs"),
                    "client certificates name identities, listed in `auth.certificates:`; there is no `auth:` section",
                ));
            }
        }
        Ok(Doors {
            rosbridge,
            grpc,
            foxglove,
            limits,
            tokens,
            tls,
        })
    }
}

impl LimitsFile {
    fn check(&self, doc: &Doc, at: &str) -> Result<Limits, ConfigError> {
        let field = |f: &str| field(at, "limits").key(f);
        let positive = |f: &str, v: Option<usize>, default: usize| match v {
            Some(0) => Err(doc.err(
                &field(f),
                format!("0 allows nothing; give at least 1 (default {default})"),
            )),
            Some(n) => Ok(n),
            None => Ok(default),
        };
        let seconds = |f: &str, v: Option<f64>, default: Duration| match v {
            Some(s) if !(s.is_finite() && s > 0.0 && s <= 86_400.0) => Err(doc.err(
                &field(f),
                format!(
                    "{s} is not a number of seconds from over 0 to 86400 (default {})",
                    default.as_secs()
                ),
            )),
            Some(s) => Ok(Duration::from_secs_f64(s)),
            None => Ok(default),
        };
        let d = Limits::default();
        let a = d.admission;
        let max_frame_bytes = positive("max_frame_bytes", self.max_frame_bytes, d.max_frame_bytes)?;
        if max_frame_bytes < 1024 {
            return Err(doc.err(
                &field("max_frame_bytes"),
                format!(
                    "{max_frame_bytes} bytes holds no useful op; give at least 1024 (default {})",
                    d.max_frame_bytes
                ),
            ));
        }
        let default_queue_length = positive(
            "default_queue_length",
            self.default_queue_length,
            d.default_queue_length,
        )?;
        let max_queue_length = positive(
            "max_queue_length",
            self.max_queue_length,
            d.max_queue_length,
        )?;
        if default_queue_length > max_queue_length {
            return Err(doc.err(
                &field("default_queue_length"),
                format!(
                    "{default_queue_length} is over limits.max_queue_length ({max_queue_length})"
                ),
            ));
        }
        Ok(Limits {
            max_frame_bytes,
            admission: AdmissionLimits {
                max_clients: positive("max_clients", self.max_clients, a.max_clients)?,
                max_pending: positive(
                    "max_pending_clients",
                    self.max_pending_clients,
                    a.max_pending,
                )?,
                max_pending_per_source: positive(
                    "max_pending_per_source",
                    self.max_pending_per_source,
                    a.max_pending_per_source,
                )?,
                auth_deadline: seconds("auth_timeout_s", self.auth_timeout_s, a.auth_deadline)?,
            },
            outbox: OutboxLimits {
                max_bytes: positive(
                    "client_queue_bytes",
                    self.client_queue_bytes,
                    d.outbox.max_bytes,
                )?,
                ..OutboxLimits::default()
            },
            default_queue_length,
            max_queue_length,
            max_topics_per_client: positive(
                "max_topics_per_client",
                self.max_topics_per_client,
                d.max_topics_per_client,
            )?,
            max_calls_per_client: positive(
                "max_calls_per_client",
                self.max_calls_per_client,
                d.max_calls_per_client,
            )?,
            call_timeout: seconds("call_timeout_s", self.call_timeout_s, d.call_timeout)?,
            definition_wait: seconds(
                "definition_wait_s",
                self.definition_wait_s,
                d.definition_wait,
            )?,
        })
    }
}

impl AuthFile {
    fn check(self, doc: &Doc, at: &str) -> Result<Tokens, ConfigError> {
        if self.tokens.is_empty() && self.certificates.is_empty() {
            return Err(doc.err(
                &field(at, "auth.tokens"),
                "no token or certificate listed: no client could connect (remove `auth:` to let every client in)",
            ));
        }
        let mut entries = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (i, t) in self.tokens.into_iter().enumerate() {
            let at = |f: &str| field(at, "auth.tokens").index(i).key(f);
            if t.token.len() < MIN_TOKEN_LEN {
                return Err(doc.err(
                    &at("token"),
                    format!("a token of {} characters can be guessed; give at least {MIN_TOKEN_LEN} (e.g. `openssl rand -hex 32`)", t.token.len()),
                ));
            }
            if !seen.insert(t.token.clone()) {
                return Err(doc.err(&at("token"), "the same token is listed twice"));
            }
            let expires = match &t.expires {
                Some(s) => {
                    Some(parse_expiry(s).map_err(|e| doc.err(&at("expires"), e.to_string()))?)
                }
                None => None,
            };
            let permissions = permissions(doc, &at, [&t.subscribe, &t.publish, &t.call])?;
            entries.push(TokenEntry {
                token: t.token,
                identity: Identity {
                    name: t.identity,
                    permissions,
                    expires,
                },
            });
        }
        let mut certificates = Vec::new();
        for (i, c) in self.certificates.into_iter().enumerate() {
            let at = |f: &str| field(at, "auth.certificates").index(i).key(f);
            if certificates
                .iter()
                .any(|id: &Identity| id.name == c.identity)
            {
                return Err(doc.err(&at("identity"), "the same identity is listed twice"));
            }
            let permissions = permissions(doc, &at, [&c.subscribe, &c.publish, &c.call])?;
            certificates.push(Identity {
                name: c.identity,
                permissions,
                expires: None,
            });
        }
        Ok(Tokens::new(entries).with_certificates(certificates))
    }
}

/// An identity's subscribe, publish and call rules.
fn permissions(
    doc: &Doc,
    at: &dyn Fn(&str) -> FieldPath,
    [subscribe, publish, call]: [&RuleFile; 3],
) -> Result<Permissions, ConfigError> {
    let rule = |name: &str, r: &RuleFile| {
        Rule::new(&r.allow, &r.deny).map_err(|e| doc.err(&at(name), e.to_string()))
    };
    Ok(Permissions {
        subscribe: rule("subscribe", subscribe)?,
        publish: rule("publish", publish)?,
        call: rule("call", call)?,
    })
}

/// A proxy's `gateway:` section: the same doors as `roam gateway`, on the proxy's own edge,
/// into one of its realms. Only the doors listed open (no default rosbridge port).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmbeddedFile {
    /// One of the proxy's `realms:`.
    pub realm: String,
    pub rosbridge: Option<RosbridgeFile>,
    pub grpc: Option<GrpcFile>,
    pub foxglove: Option<FoxgloveFile>,
    #[serde(default)]
    pub limits: LimitsFile,
    pub auth: Option<AuthFile>,
    pub tls: Option<TlsFile>,
}

impl EmbeddedFile {
    /// Its realm's name and its doors, checked (the realm's name is checked by the caller).
    pub fn check(self, doc: &Doc, pki: &Path) -> Result<(String, Doors), ConfigError> {
        if self.rosbridge.is_none() && self.grpc.is_none() && self.foxglove.is_none() {
            return Err(doc.err(
                &FieldPath::new("gateway"),
                "no door: add `rosbridge: {listen: 0.0.0.0:9090}`, `grpc: {listen: 0.0.0.0:50051}` and/or `foxglove: {listen: 0.0.0.0:8765}`",
            ));
        }
        let doors = DoorsFile {
            rosbridge: self.rosbridge,
            grpc: self.grpc,
            foxglove: self.foxglove,
            limits: self.limits,
            auth: self.auth,
            tls: self.tls,
        }
        .check(doc, "gateway", pki, &DoorFlags::default(), false)?;
        Ok((self.realm, doors))
    }
}
