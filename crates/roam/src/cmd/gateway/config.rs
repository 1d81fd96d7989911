//! The gateway's YAML configuration file (`roam gateway -c FILE`).
//!
//! ```yaml
//! id: gateway-1                # identity in the PKI directory (a router certificate: the
//! pki: /etc/roam/pki           #   gateway runs its own edge router, as a proxy does)
//! upstream:                    # routers its edge router keeps links to (reconnects by itself)
//!   - quic://cloud.example.com:7447
//! listen: 0.0.0.0:7448         # optional: let other roam processes link to its router (QUIC)
//! realm: /etc/roam/warehouse.realm
//! link: {idle_timeout_ms: 10000}   # as a router's `link:` section (optional)
//! msg_paths: [/opt/ws/src/my_msgs]   # definitions besides AMENT_PREFIX_PATH (optional)
//! rosbridge:
//!   listen: 0.0.0.0:9090       # rosbridge v2 WebSocket (default 0.0.0.0:9090)
//! grpc:                        # optional: the gRPC door (proto/roam/gateway/v1/gateway.proto)
//!   listen: 0.0.0.0:50051      # (default 0.0.0.0:50051 when the section is there)
//! foxglove:                    # optional: the Foxglove WebSocket door (Foxglove, Lichtblick)
//!   listen: 0.0.0.0:8765       # (default 0.0.0.0:8765 when the section is there)
//! limits:
//!   max_frame_bytes: 33554432  # a larger client frame is refused and its connection closed
//!   max_clients: 256
//!   client_queue_bytes: 67108864   # per client: what waits to be sent, in all
//!   default_queue_length: 100      # per subscription, when the client gives none
//!   max_queue_length: 10000
//!   max_topics_per_client: 256     # subscriptions, advertisements, services: each
//!   max_calls_per_client: 64       # service calls waiting for replies
//!   call_timeout_s: 30             # when the client gives no timeout
//!   definition_wait_s: 5           # how long a service's definition is awaited from the realm
//! auth:                        # without it, every client may do everything
//!   tokens:
//!     - identity: dashboard
//!       token: "long random string"
//!       expires: 2027-01-31T00:00:00Z  # RFC 3339; omit for no expiry
//!       subscribe: {allow: ["/chatter", "/robot/**"], deny: ["/robot/secret/**"]}
//!       publish: {allow: ["/cmd_vel"]}
//!       call: {allow: ["/add_two_ints"]}
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use roam_gateway::auth::{parse_expiry, Identity, Permissions, Rule, TokenEntry, Tokens};
use roam_gateway::{Limits, OutboxLimits};
use serde::Deserialize;

use super::tls_config::{TlsFile, TlsSource};
use crate::addr::{check_host_port, check_peer, Use};
use crate::config::LinkFile;
use crate::config_doc::{ConfigError, Doc, FieldPath};
use roam_gateway::tls::TlsSettings;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayFile {
    pub id: Option<String>,
    pub pki: Option<PathBuf>,
    #[serde(default)]
    pub upstream: Vec<String>,
    pub listen: Option<String>,
    pub realm: Option<PathBuf>,
    #[serde(default)]
    pub link: LinkFile,
    #[serde(default)]
    pub msg_paths: Vec<PathBuf>,
    #[serde(default)]
    pub rosbridge: RosbridgeFile,
    pub grpc: Option<GrpcFile>,
    pub foxglove: Option<FoxgloveFile>,
    #[serde(default)]
    pub limits: LimitsFile,
    pub auth: Option<AuthFile>,
    pub tls: Option<TlsFile>,
}

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

/// A gateway's settings, checked.
#[derive(Debug)]
pub struct GatewayConfig {
    pub id: String,
    pub pki: PathBuf,
    pub upstream: Vec<String>,
    /// Where its edge router listens for other roam processes (QUIC), if anywhere.
    pub router_listen: Option<String>,
    pub link: LinkFile,
    pub realm: PathBuf,
    pub msg_paths: Vec<PathBuf>,
    pub listen: SocketAddr,
    /// Where the gRPC door listens; None: no gRPC door.
    pub grpc_listen: Option<SocketAddr>,
    /// Where the Foxglove WebSocket door listens; None: no Foxglove door.
    pub foxglove_listen: Option<SocketAddr>,
    pub limits: Limits,
    pub tokens: Option<Tokens>,
    pub tls: Option<TlsSource>,
}

/// The shortest token accepted: shorter ones can be guessed.
const MIN_TOKEN_LEN: usize = 16;

/// Where a value came from when it is missing: the file, or a flag.
pub struct Overrides {
    pub listen: Option<String>,
    /// `--grpc-listen`: replaces `grpc.listen` (and turns the gRPC door on).
    pub grpc_listen: Option<String>,
    /// `--foxglove-listen`: replaces `foxglove.listen` (and turns the Foxglove door on).
    pub foxglove_listen: Option<String>,
    /// `--connect`: replaces `upstream:`.
    pub upstream: Vec<String>,
}

impl GatewayFile {
    /// Checks every value and builds the settings; each mistake names the file, line and field.
    pub fn check(self, doc: &Doc, o: Overrides) -> Result<GatewayConfig, ConfigError> {
        fn need<T>(doc: &Doc, v: Option<T>, field: &str, what: &str) -> Result<T, ConfigError> {
            v.ok_or_else(|| doc.whole(format!("missing `{field}:` ({what})")))
        }
        let id = need(
            doc,
            self.id,
            "id",
            "this gateway's identity name in the PKI directory",
        )?;
        roam_net::pki::validate_name(&id)
            .map_err(|e| doc.err(&FieldPath::new("id"), e.to_string()))?;
        let pki = need(
            doc,
            self.pki,
            "pki",
            "the PKI directory with ca.pem and the identity's files",
        )?;
        let upstream = if o.upstream.is_empty() {
            for (i, u) in self.upstream.iter().enumerate() {
                check_peer(u)
                    .map_err(|e| doc.err(&FieldPath::new("upstream").index(i), e.to_string()))?;
            }
            self.upstream
        } else {
            for u in &o.upstream {
                check_peer(u).map_err(|e| doc.whole(format!("--connect: {e}")))?;
            }
            o.upstream.clone()
        };
        if upstream.is_empty() && self.listen.is_none() {
            return Err(doc.whole(
                "missing `upstream:` (the routers to join the realm through) or --connect; or `listen:` for routers that link to this gateway",
            ));
        }
        if let Some(l) = &self.listen {
            check_host_port(l, Use::Listen)
                .map_err(|e| doc.err(&FieldPath::new("listen"), e.to_string()))?;
        }
        self.link
            .apply(roam_net::link::LinkConfig::default())
            .map_err(|e| e.located(doc))?;
        let realm = need(
            doc,
            self.realm,
            "realm",
            "the realm file, from `roam realm new`",
        )?;
        let listen_text = o
            .listen
            .clone()
            .or(self.rosbridge.listen.clone())
            .unwrap_or_else(|| "0.0.0.0:9090".into());
        let listen_field = FieldPath::new("rosbridge.listen");
        let bad_listen = |e: String| match &o.listen {
            Some(_) => doc.whole(format!("--listen: {e}")),
            None => doc.err(&listen_field, e),
        };
        check_host_port(&listen_text, Use::Listen).map_err(|e| bad_listen(e.to_string()))?;
        let listen: SocketAddr = listen_text.parse().map_err(|_| {
            bad_listen(format!(
                "{listen_text:?} is not an IP address and port (e.g. 0.0.0.0:9090)"
            ))
        })?;
        let grpc_listen = door_listen(
            doc,
            "grpc",
            self.grpc.as_ref().map(|g| g.listen.as_deref()),
            o.grpc_listen.as_deref(),
            "0.0.0.0:50051",
        )?;
        let foxglove_listen = door_listen(
            doc,
            "foxglove",
            self.foxglove.as_ref().map(|f| f.listen.as_deref()),
            o.foxglove_listen.as_deref(),
            "0.0.0.0:8765",
        )?;
        let limits = self.limits.check(doc)?;
        let tokens = match self.auth {
            None => None,
            Some(a) => Some(a.check(doc)?),
        };
        let tls = self.tls.map(|t| t.check(doc, &pki)).transpose()?;
        if let (Some(t), None) = (&tls, &tokens) {
            if t.asks_certificates() {
                return Err(doc.err(
                    &FieldPath::new("tls.client_certs"),
                    "client certificates name identities, listed in `auth.certificates:`; there is no `auth:` section",
                ));
            }
        }
        Ok(GatewayConfig {
            id,
            pki,
            upstream,
            router_listen: self.listen,
            link: self.link,
            realm,
            msg_paths: self.msg_paths,
            listen,
            grpc_listen,
            foxglove_listen,
            limits,
            tokens,
            tls,
        })
    }
}

/// An optional door's address (`door` is `grpc` or `foxglove`): `--DOOR-listen`, else
/// `DOOR.listen` (`file` is the section's, when the section is there), else `default` when the
/// file has the section; None: no such door.
fn door_listen(
    doc: &Doc,
    door: &str,
    file: Option<Option<&str>>,
    flag: Option<&str>,
    default: &str,
) -> Result<Option<SocketAddr>, ConfigError> {
    let field = FieldPath::new(&format!("{door}.listen"));
    let (text, bad): (String, &dyn Fn(String) -> ConfigError) = match (flag, file) {
        (Some(f), _) => (f.to_string(), &|e| {
            doc.whole(format!("--{door}-listen: {e}"))
        }),
        (None, Some(l)) => (l.unwrap_or(default).to_string(), &|e| doc.err(&field, e)),
        (None, None) => return Ok(None),
    };
    check_host_port(&text, Use::Listen).map_err(|e| bad(e.to_string()))?;
    text.parse().map(Some).map_err(|_| {
        bad(format!(
            "{text:?} is not an IP address and port (e.g. {default})"
        ))
    })
}

impl LimitsFile {
    fn check(&self, doc: &Doc) -> Result<Limits, ConfigError> {
        let field = |f: &str| FieldPath::new("limits").key(f);
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
            max_clients: positive("max_clients", self.max_clients, d.max_clients)?,
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
    fn check(self, doc: &Doc) -> Result<Tokens, ConfigError> {
        if self.tokens.is_empty() && self.certificates.is_empty() {
            return Err(doc.err(
                &FieldPath::new("auth.tokens"),
                "no token or certificate listed: no client could connect (remove `auth:` to let every client in)",
            ));
        }
        let mut entries = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for (i, t) in self.tokens.into_iter().enumerate() {
            let at = |f: &str| FieldPath::new("auth.tokens").index(i).key(f);
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
                Some(s) => Some(parse_expiry(s).map_err(|e| doc.err(&at("expires"), e))?),
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
            let at = |f: &str| FieldPath::new("auth.certificates").index(i).key(f);
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

/// Reads, parses and checks a gateway's file, and reads the TLS files it names.
pub fn load(path: &Path, o: Overrides) -> Result<(GatewayConfig, Option<TlsSettings>), String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let origin = path.display().to_string();
    let doc = Doc::new(&text, &origin);
    let file: GatewayFile = doc.parse()?;
    let cfg = file.check(&doc, o)?;
    // What the file names on this machine, located too.
    roam_net::pki::check_files(&cfg.pki, &cfg.id)
        .map_err(|e| doc.err(&FieldPath::new("pki"), e.to_string()))?;
    roam_edge::realm::load(&cfg.realm).map_err(|e| doc.err(&FieldPath::new("realm"), e))?;
    for (i, p) in cfg.msg_paths.iter().enumerate() {
        roam_edge::definitions::check_msg_path(p)
            .map_err(|e| doc.err(&FieldPath::new("msg_paths").index(i), e.to_string()))?;
    }
    let tls = cfg
        .tls
        .as_ref()
        .map(|t| t.load(&doc, &cfg.pki, &cfg.id))
        .transpose()?;
    Ok((cfg, tls))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "\
id: gw
pki: ./pki
upstream: [quic://127.0.0.1:7447]
realm: ./t.realm
rosbridge:
  listen: 127.0.0.1:9191
limits:
  max_clients: 10
auth:
  tokens:
    - identity: dash
      token: 0123456789abcdef0123
      expires: 2027-01-01T00:00:00Z
      subscribe: {allow: ['/chatter']}
grpc:
  listen: 127.0.0.1:50051
foxglove:
  listen: 127.0.0.1:8766
";

    fn check(text: &str) -> Result<GatewayConfig, String> {
        let doc = Doc::new(text, "gw.yaml");
        let f: GatewayFile = doc.parse()?;
        Ok(f.check(
            &doc,
            Overrides {
                listen: None,
                grpc_listen: None,
                foxglove_listen: None,
                upstream: Vec::new(),
            },
        )?)
    }

    #[test]
    fn a_good_file_gives_the_settings() {
        let c = check(GOOD).unwrap();
        assert_eq!(c.listen.to_string(), "127.0.0.1:9191");
        assert_eq!(c.limits.max_clients, 10);
        assert_eq!(c.grpc_listen.unwrap().to_string(), "127.0.0.1:50051");
        assert!(c.tokens.is_some());
        let c = check("id: gw\npki: p\nupstream: [127.0.0.1:1]\nrealm: r\n").unwrap();
        assert_eq!(c.listen.to_string(), "0.0.0.0:9090");
        assert!(c.tokens.is_none());
        assert!(c.grpc_listen.is_none(), "no gRPC door unless asked");
        let c = check("id: gw\npki: p\nupstream: [127.0.0.1:1]\nrealm: r\ngrpc: {}\n").unwrap();
        assert_eq!(c.grpc_listen.unwrap().to_string(), "0.0.0.0:50051");
        assert!(c.foxglove_listen.is_none(), "no Foxglove door unless asked");
        let c = check(GOOD).unwrap();
        assert_eq!(c.foxglove_listen.unwrap().to_string(), "127.0.0.1:8766");
        let c = check("id: gw\npki: p\nupstream: [127.0.0.1:1]\nrealm: r\nfoxglove: {}\n").unwrap();
        assert_eq!(c.foxglove_listen.unwrap().to_string(), "0.0.0.0:8765");
    }

    #[test]
    fn every_mistake_names_file_line_and_field() {
        for (from, to, want) in [
            (
                "listen: 127.0.0.1:9191",
                "listen: 127.0.0.1",
                "gw.yaml: line 6: rosbridge.listen: missing port",
            ),
            (
                "max_clients: 10",
                "max_clients: 0",
                "gw.yaml: line 8: limits.max_clients: 0 allows nothing",
            ),
            ("max_clients: 10", "max_clients: many", "gw.yaml: line 8"),
            (
                "token: 0123456789abcdef0123",
                "token: short",
                "gw.yaml: line 12: auth.tokens[0].token: a token of 5 characters",
            ),
            (
                "expires: 2027-01-01T00:00:00Z",
                "expires: soon",
                "gw.yaml: line 13: auth.tokens[0].expires: \"soon\" is not an RFC 3339 time",
            ),
            (
                "allow: ['/chatter']",
                "allow: ['/a/[b']",
                "gw.yaml: line 14: auth.tokens[0].subscribe: pattern \"/a/[b\"",
            ),
            (
                "upstream: [quic://127.0.0.1:7447]",
                "upstream: [quic://127.0.0.1]",
                "gw.yaml: line 3: upstream[0]: missing port",
            ),
            (
                "id: gw",
                "id: GW",
                "gw.yaml: line 1: id: invalid identity name",
            ),
            ("limits:", "limitz:", "gw.yaml: line 7"),
            (
                "listen: 127.0.0.1:50051",
                "listen: 127.0.0.1:none",
                "gw.yaml: line 16: grpc.listen:",
            ),
            (
                "listen: 127.0.0.1:8766",
                "listen: nowhere:8766",
                "gw.yaml: line 18: foxglove.listen:",
            ),
        ] {
            let text = GOOD.replace(from, to);
            let e = match check(&text) {
                Ok(_) => panic!("accepted {to}"),
                Err(e) => e,
            };
            assert!(e.starts_with(want), "{to}:\n got  {e}\n want {want}");
        }
        let e = check("id: gw\npki: p\nrealm: r\n").unwrap_err();
        assert!(e.contains("missing `upstream:`"), "{e}");
    }
}
