//! The router's YAML configuration file (`roam router -c FILE`). Flags override the file.
//!
//! ```yaml
//! id: edge-1                 # identity name: PKI_DIR/edge-1.pem and .key
//! pki: /etc/roam/pki         # directory with ca.pem and the identity files
//! listen: 0.0.0.0:7447       # QUIC (UDP); omit on a robot that only dials out
//! listen_tcp: 0.0.0.0:7447   # TCP+TLS fallback for networks that block UDP
//! connect:                   # routers to keep a link to (reconnects by itself)
//!   - quic://cloud.example.com:7447
//!   - tcp://backup.example.com:7447
//! status_interval_s: 30      # log per-link counters this often (0: never)
//! link:
//!   idle_timeout_ms: 10000   # a silent peer is declared dead after this
//!   keepalive_ms: 1000
//!   max_message_bytes: 134217728
//!   stall_timeout_ms: 5000   # a subscriber link full this long loses what waits for it
//!   reliable_queue_messages: 65536
//!   reliable_queue_bytes: 268435456
//!   congestion: cubic        # QUIC links: cubic (default), new_reno, or bbr for lossy radio
//!   udp_buffer_bytes: 4194304  # QUIC socket buffers (capped by net.core.rmem_max)
//!   handshake_timeout_ms: 10000        # unauthenticated connections are closed after this
//!   max_unauthenticated: 256           # connections in their handshake at once, in total
//!   max_unauthenticated_per_source: 16 # ... and from one address (an IPv6 /64)
//! ```
//!
//! Mistakes are reported with the file, line and column, and what was expected.

use std::path::{Path, PathBuf};
use std::time::Duration;

use roam_net::link::LinkConfig;
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterFile {
    pub id: Option<String>,
    pub pki: Option<PathBuf>,
    pub listen: Option<String>,
    pub listen_tcp: Option<String>,
    #[serde(default)]
    pub connect: Vec<String>,
    pub status_interval_s: Option<u64>,
    #[serde(default)]
    pub link: LinkFile,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkFile {
    pub idle_timeout_ms: Option<u64>,
    pub keepalive_ms: Option<u64>,
    pub max_message_bytes: Option<usize>,
    pub reliable_queue_messages: Option<usize>,
    pub reliable_queue_bytes: Option<usize>,
    pub max_backoff_ms: Option<u64>,
    pub stall_timeout_ms: Option<u64>,
    pub congestion: Option<String>,
    pub udp_buffer_bytes: Option<usize>,
    pub handshake_timeout_ms: Option<u64>,
    pub max_unauthenticated: Option<usize>,
    pub max_unauthenticated_per_source: Option<usize>,
}

impl LinkFile {
    /// How long a reliable topic waits for a full subscriber link (default 5 s).
    pub fn stall_timeout(&self) -> Duration {
        Duration::from_millis(self.stall_timeout_ms.unwrap_or(5000))
    }

    pub fn apply(&self, mut c: LinkConfig) -> Result<LinkConfig, String> {
        if let Some(ms) = self.idle_timeout_ms {
            c.idle_timeout = Duration::from_millis(ms);
            // Keep the default keepalive unless it would not fit in a shorter timeout.
            c.keepalive = c.keepalive.min(c.idle_timeout / 4);
        }
        if let Some(ms) = self.keepalive_ms {
            c.keepalive = Duration::from_millis(ms);
        }
        if c.keepalive >= c.idle_timeout {
            return Err(format!(
                "link.keepalive_ms ({:?}) must be shorter than link.idle_timeout_ms ({:?})",
                c.keepalive, c.idle_timeout
            ));
        }
        if let Some(b) = self.max_message_bytes {
            c.max_frame = b.saturating_add(1024);
        }
        if let Some(n) = self.reliable_queue_messages {
            c.reliable.max_messages = n.max(1);
        }
        if let Some(b) = self.reliable_queue_bytes {
            c.reliable.max_bytes = b;
        }
        if let Some(b) = self.udp_buffer_bytes {
            c.udp_buffer_bytes = b;
        }
        if let Some(name) = &self.congestion {
            c.congestion = name.parse().map_err(|e| format!("link.congestion: {e}"))?;
        }
        if let Some(ms) = self.handshake_timeout_ms {
            if ms == 0 {
                return Err("link.handshake_timeout_ms must be at least 1 (default 10000)".into());
            }
            c.handshake_timeout = Duration::from_millis(ms);
        }
        for (field, value, slot) in [
            (
                "max_unauthenticated",
                self.max_unauthenticated,
                &mut c.max_unauthenticated,
            ),
            (
                "max_unauthenticated_per_source",
                self.max_unauthenticated_per_source,
                &mut c.max_unauthenticated_per_source,
            ),
        ] {
            match value {
                Some(0) => return Err(format!("link.{field} must be at least 1")),
                Some(n) => *slot = n,
                None => {}
            }
        }
        Ok(c)
    }
}

/// Parses YAML text, naming `origin` (usually the file path) in errors.
pub fn parse<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T, String> {
    serde_yaml_ng::from_str(text).map_err(|e| match e.location() {
        Some(loc) => format!("{origin}: line {} column {}: {e}", loc.line(), loc.column()),
        None => format!("{origin}: {e}"),
    })
}

pub fn load<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&text, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_file_parses() {
        let f: RouterFile = parse(
            "id: r1\npki: ./pki\nlisten: 127.0.0.1:7447\nconnect:\n  - quic://127.0.0.1:7448\nlink:\n  idle_timeout_ms: 3000\n",
            "t.yaml",
        )
        .unwrap();
        assert_eq!(f.id.as_deref(), Some("r1"));
        assert_eq!(f.connect.len(), 1);
        let l = f.link.apply(LinkConfig::default()).unwrap();
        assert_eq!(l.idle_timeout, Duration::from_secs(3));
    }

    #[test]
    fn mistakes_name_the_line() {
        let e = parse::<RouterFile>("id: r1\nconect:\n  - x\n", "r.yaml").unwrap_err();
        assert!(e.starts_with("r.yaml: line 2"), "{e}");
        assert!(e.contains("unknown field `conect`"), "{e}");
        let e = parse::<RouterFile>("id: r1\nlink:\n  keepalive_ms: soon\n", "r.yaml").unwrap_err();
        assert!(e.contains("line 3"), "{e}");
        let e = parse::<RouterFile>("id: [\n", "r.yaml").unwrap_err();
        assert!(e.contains("r.yaml"), "{e}");
        let bad = LinkFile {
            idle_timeout_ms: Some(1000),
            keepalive_ms: Some(2000),
            ..Default::default()
        };
        assert!(bad
            .apply(LinkConfig::default())
            .unwrap_err()
            .contains("shorter"));
        let bad = LinkFile {
            congestion: Some("vegas".into()),
            ..Default::default()
        };
        let e = bad.apply(LinkConfig::default()).unwrap_err();
        assert!(e.contains("link.congestion") && e.contains("bbr"), "{e}");
    }

    #[test]
    fn handshake_limits_are_set_in_the_link_section() {
        let f: RouterFile = parse(
            "link:\n  handshake_timeout_ms: 1500\n  max_unauthenticated: 64\n  max_unauthenticated_per_source: 4\n",
            "r.yaml",
        )
        .unwrap();
        let l = f.link.apply(LinkConfig::default()).unwrap();
        assert_eq!(l.handshake_timeout, Duration::from_millis(1500));
        assert_eq!(
            (l.max_unauthenticated, l.max_unauthenticated_per_source),
            (64, 4)
        );
        let d = LinkFile::default().apply(LinkConfig::default()).unwrap();
        assert_eq!(d.handshake_timeout, Duration::from_secs(10));
        assert_eq!(
            (d.max_unauthenticated, d.max_unauthenticated_per_source),
            (256, 16)
        );
        let zero = LinkFile {
            max_unauthenticated_per_source: Some(0),
            ..Default::default()
        };
        let e = zero.apply(LinkConfig::default()).unwrap_err();
        assert!(e.contains("link.max_unauthenticated_per_source"), "{e}");
    }

    #[test]
    fn congestion_controller_is_chosen_by_name() {
        use roam_net::link::Congestion;
        let f: RouterFile = parse("id: r1\nlink:\n  congestion: bbr\n", "r.yaml").unwrap();
        let l = f.link.apply(LinkConfig::default()).unwrap();
        assert_eq!(l.congestion, Congestion::Bbr);
        assert_eq!(
            RouterFile::default()
                .link
                .apply(LinkConfig::default())
                .unwrap()
                .congestion,
            Congestion::Cubic
        );
    }
}
