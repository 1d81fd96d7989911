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
//! metrics_listen: 127.0.0.1:9465  # optional: GET /metrics for Prometheus (no TLS)
//! rules: /etc/roam/gateway.rules   # optional: rules on what clients publish and receive
//!                                  #   (docs/rules.md); SIGHUP reloads them
//! limits:
//!   max_frame_bytes: 33554432  # a larger client frame is refused and its connection closed
//!   max_clients: 256           # clients with an identity, all doors together
//!   max_pending_clients: 64    # connections not authenticated yet (kept apart: they cannot
//!                              #   take the slots of clients with credentials)
//!   max_pending_per_source: 16 # of those, from one address
//!   auth_timeout_s: 10         # to finish TLS, the WebSocket handshake and authenticate
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

pub mod doors;
pub mod tls;

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::addr::{check_host_port, check_peer, Use};
use crate::doc::{ConfigError, Doc, FieldPath, LoadError};
use crate::link::LinkFile;
use doors::{
    AuthFile, DoorFlags, Doors, DoorsFile, FoxgloveFile, GrpcFile, LimitsFile, RosbridgeFile,
};
use roam_gateway::tls::TlsSettings;
use tls::TlsFile;

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
    pub rosbridge: Option<RosbridgeFile>,
    pub grpc: Option<GrpcFile>,
    pub foxglove: Option<FoxgloveFile>,
    #[serde(default)]
    pub limits: LimitsFile,
    pub auth: Option<AuthFile>,
    pub tls: Option<TlsFile>,
    /// A rules file (docs/rules.md) on what clients publish and receive; SIGHUP reloads it.
    pub rules: Option<PathBuf>,
    /// Where to serve `GET /metrics` for Prometheus (its edge router, links and topics).
    pub metrics_listen: Option<String>,
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
    pub doors: Doors,
    pub rules: Option<PathBuf>,
    pub metrics_listen: Option<String>,
}

/// Where a value came from when it is missing: the file, or a flag.
pub struct Overrides {
    pub listen: Option<String>,
    /// `--grpc-listen`: replaces `grpc.listen` (and turns the gRPC door on).
    pub grpc_listen: Option<String>,
    /// `--foxglove-listen`: replaces `foxglove.listen` (and turns the Foxglove door on).
    pub foxglove_listen: Option<String>,
    /// `--connect`: replaces `upstream:`.
    pub upstream: Vec<String>,
    /// `--metrics-listen`: replaces `metrics_listen:`.
    pub metrics_listen: Option<String>,
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
        roam_pki::validate_name(&id).map_err(|e| doc.err(&FieldPath::new("id"), e.to_string()))?;
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
        let metrics_listen = o.metrics_listen.clone().or(self.metrics_listen);
        if let Some(l) = &metrics_listen {
            check_host_port(l, Use::Listen).map_err(|e| match &o.metrics_listen {
                Some(_) => doc.whole(format!("--metrics-listen: {e}")),
                None => doc.err(&FieldPath::new("metrics_listen"), e.to_string()),
            })?;
        }
        let doors = DoorsFile {
            rosbridge: self.rosbridge,
            grpc: self.grpc,
            foxglove: self.foxglove,
            limits: self.limits,
            auth: self.auth,
            tls: self.tls,
        }
        .check(
            doc,
            "",
            &pki,
            &DoorFlags {
                rosbridge: o.listen.clone(),
                grpc: o.grpc_listen.clone(),
                foxglove: o.foxglove_listen.clone(),
            },
            true,
        )?;
        Ok(GatewayConfig {
            id,
            pki,
            upstream,
            router_listen: self.listen,
            link: self.link,
            realm,
            msg_paths: self.msg_paths,
            doors,
            rules: self.rules,
            metrics_listen,
        })
    }
}

/// Reads, parses and checks a gateway's file, and reads the TLS files it names.
pub fn load(path: &Path, o: Overrides) -> Result<(GatewayConfig, Option<TlsSettings>), LoadError> {
    let text = LoadError::read(path)?;
    let origin = path.display().to_string();
    let doc = Doc::new(&text, &origin);
    let file: GatewayFile = doc.parse()?;
    let cfg = file.check(&doc, o)?;
    // What the file names on this machine, located too.
    roam_pki::check_files(&cfg.pki, &cfg.id)
        .map_err(|e| doc.err(&FieldPath::new("pki"), e.to_string()))?;
    roam_edge::realm::load(&cfg.realm).map_err(|e| doc.err(&FieldPath::new("realm"), e))?;
    for (i, p) in cfg.msg_paths.iter().enumerate() {
        roam_edge::definitions::check_msg_path(p)
            .map_err(|e| doc.err(&FieldPath::new("msg_paths").index(i), e.to_string()))?;
    }
    if let Some(path) = &cfg.rules {
        crate::rules::load_file(path)
            .map_err(|e| doc.err(&FieldPath::new("rules"), e.to_string()))?;
    }
    let tls = cfg
        .doors
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
                metrics_listen: None,
            },
        )?)
    }

    #[test]
    fn a_good_file_gives_the_settings() {
        let c = check(GOOD).unwrap();
        assert_eq!(c.doors.rosbridge.unwrap().to_string(), "127.0.0.1:9191");
        assert_eq!(c.doors.limits.admission.max_clients, 10);
        assert_eq!(c.doors.grpc.unwrap().to_string(), "127.0.0.1:50051");
        assert!(c.doors.tokens.is_some());
        let c = check("id: gw\npki: p\nupstream: [127.0.0.1:1]\nrealm: r\n").unwrap();
        assert_eq!(c.doors.rosbridge.unwrap().to_string(), "0.0.0.0:9090");
        assert!(c.doors.tokens.is_none());
        assert!(c.doors.grpc.is_none(), "no gRPC door unless asked");
        let c = check("id: gw\npki: p\nupstream: [127.0.0.1:1]\nrealm: r\ngrpc: {}\n").unwrap();
        assert_eq!(c.doors.grpc.unwrap().to_string(), "0.0.0.0:50051");
        assert!(c.doors.foxglove.is_none(), "no Foxglove door unless asked");
        let c = check(GOOD).unwrap();
        assert_eq!(c.doors.foxglove.unwrap().to_string(), "127.0.0.1:8766");
        let c = check("id: gw\npki: p\nupstream: [127.0.0.1:1]\nrealm: r\nfoxglove: {}\n").unwrap();
        assert_eq!(c.doors.foxglove.unwrap().to_string(), "0.0.0.0:8765");
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
