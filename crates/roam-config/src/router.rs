//! The router's YAML configuration file (`roam router -c FILE`). Flags override the file.
//!
//! ```yaml
//! id: edge-1                 # identity name: PKI_DIR/edge-1.pem and .key
//! pki: /etc/roam/pki         # directory with ca.pem and the identity files
//! listen: 0.0.0.0:7447       # QUIC (UDP); omit on a robot that only dials out
//! listen_tcp: 0.0.0.0:7447   # TCP+TLS fallback for networks that block UDP
//! listen_mqtt:               # be found through MQTT brokers (for peers that reach only a
//!   - mqtt://broker.example:1883/site-a  # broker; the broker sees ciphertext only)
//! connect:                   # routers to keep a link to (reconnects by itself)
//!   - quic://cloud.example.com:7447
//!   - tcp://backup.example.com:7447
//! status_interval_s: 30      # log per-link counters this often (0: never)
//! metrics_file: /run/roam/edge-1.json  # keep the latest metrics snapshot here (JSON)
//! metrics_listen: 127.0.0.1:9464       # serve GET /metrics to Prometheus (no TLS: keep it local)
//! worker_threads: 1          # async worker threads (default 1; docs/operations.md "Threads")
//! link:
//!   idle_timeout_ms: 3000    # a silent peer is declared dead after this
//!   keepalive_ms: 500
//!   max_message_bytes: 134217728
//!   stall_timeout_ms: 5000   # a subscriber link full this long loses what waits for it
//!   reliable_queue_messages: 8192  # per topic and link: what waits for the link before the
//!   reliable_queue_bytes: 8388608   # topic is pushed back on (a larger message still passes)
//!   congestion: tolerant     # QUIC links: tolerant (default: Cubic that rides out random
//!                            # loss), cubic, new_reno or bbr (experimental)
//!   udp_buffer_bytes: 8388608  # QUIC socket buffers (above net.core.rmem_max only as root)
//!   window_bytes: 8388608      # QUIC flow-control and send windows: memory and delay under load
//!   max_udp_payload_bytes: 9000  # largest QUIC packet MTU discovery tries (a jumbo frame)
//!   ack_every_packets: 0       # ask QUIC peers to acknowledge every Nth packet (0: QUIC's own,
//!   max_ack_delay_ms: 1        # every 2nd) or this long after the first one unacknowledged
//!   initial_window_bytes: 262144  # QUIC congestion window before the path is measured
//!   fec: true                # QUIC links that see loss send repairs beside their messages
//!   handshake_timeout_ms: 10000        # unauthenticated connections are closed after this
//!   silence_timeout_ms: 1000 # a QUIC peer that answers nothing this long is dead (0: off)
//!   max_unauthenticated: 256           # connections in their handshake at once, in total
//!   max_unauthenticated_per_source: 16 # ... and from one address (an IPv6 /64)
//!   client_max_messages_per_s: 20000   # what one client identity may bring in per second
//!   client_max_bytes_per_s: 1073741824 # (0: no limit); over it, reliable data waits (the
//!                            # client slows down) and best-effort data is dropped, counted
//!   client_max_names: 20000  # subscriptions and publications one client link may hold
//!                            # (0: no limit); further ones are refused, counted per link
//! ```
//!
//! Mistakes are reported with the file, line and column, and what was expected.

use std::path::{Path, PathBuf};

use roam_net::link::LinkConfig;
use serde::Deserialize;

use crate::addr::{check_host_port, check_peer, Use};
use crate::doc::{ConfigError, Doc, FieldPath, LoadError};
use crate::link::LinkFile;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouterFile {
    pub id: Option<String>,
    pub pki: Option<PathBuf>,
    pub listen: Option<String>,
    pub listen_tcp: Option<String>,
    #[serde(default)]
    pub listen_mqtt: Vec<String>,
    #[serde(default)]
    pub connect: Vec<String>,
    pub status_interval_s: Option<u64>,
    /// Where to keep the latest metrics snapshot (`--metrics-file`).
    pub metrics_file: Option<PathBuf>,
    /// Where to serve `GET /metrics` for Prometheus (`--metrics-listen`).
    pub metrics_listen: Option<String>,
    /// Async worker threads (`--worker-threads`; see [`worker_threads_in`]).
    pub worker_threads: Option<u16>,
    #[serde(default)]
    pub link: LinkFile,
}

impl RouterFile {
    /// Checks what can be checked without touching the machine: the identity name, the
    /// shape of every address, the link values.
    pub fn check(&self, doc: &Doc) -> Result<(), ConfigError> {
        if let Some(id) = &self.id {
            roam_pki::validate_name(id)
                .map_err(|e| doc.err(&FieldPath::new("id"), e.to_string()))?;
        }
        check_worker_threads(self.worker_threads, doc)?;
        for (field, addr) in [
            ("listen", &self.listen),
            ("listen_tcp", &self.listen_tcp),
            ("metrics_listen", &self.metrics_listen),
        ] {
            if let Some(a) = addr {
                check_host_port(a, Use::Listen)
                    .map_err(|e| doc.err(&FieldPath::new(field), e.to_string()))?;
            }
        }
        for (i, m) in self.listen_mqtt.iter().enumerate() {
            roam_net::mqtt::MqttPeer::parse(m)
                .map_err(|e| doc.err(&FieldPath::new("listen_mqtt").index(i), e.to_string()))?;
        }
        for (i, c) in self.connect.iter().enumerate() {
            check_peer(c)
                .map_err(|e| doc.err(&FieldPath::new("connect").index(i), e.to_string()))?;
        }
        self.link.check().map_err(|e| e.located(doc))?;
        // keepalive against idle timeout needs both, as the link will see them.
        self.link
            .apply(LinkConfig::default())
            .map(|_| ())
            .map_err(|e| e.located(doc))
    }
}

/// Most async worker threads a file may ask for.
pub const MAX_WORKER_THREADS: u16 = 1024;

/// Refuses a `worker_threads:` of 0 or past [`MAX_WORKER_THREADS`].
pub fn check_worker_threads(n: Option<u16>, doc: &Doc) -> Result<(), ConfigError> {
    match n {
        Some(n) if n == 0 || n > MAX_WORKER_THREADS => Err(doc.err(
            &FieldPath::new("worker_threads"),
            format!("{n} async worker threads; give 1 to {MAX_WORKER_THREADS} (default 1)"),
        )),
        _ => Ok(()),
    }
}

/// The `worker_threads:` of a router's or proxy's file, read before the async runtime
/// starts (the runtime runs the loader). None where the file cannot be read, has no such key
/// or an unusable one: the command's own loading then says what is wrong, at its line.
pub fn worker_threads_in(path: &Path) -> Option<usize> {
    #[derive(Deserialize)]
    struct Threads {
        worker_threads: Option<u16>,
    }
    let text = std::fs::read_to_string(path).ok()?;
    let n = serde_yaml_ng::from_str::<Threads>(&text)
        .ok()?
        .worker_threads?;
    (1..=MAX_WORKER_THREADS)
        .contains(&n)
        .then_some(usize::from(n))
}

/// Parses YAML text, naming `origin` (usually the file path) in errors.
pub fn parse<T: serde::de::DeserializeOwned>(text: &str, origin: &str) -> Result<T, ConfigError> {
    Doc::new(text, origin).parse()
}

/// Reads and parses a YAML file.
pub fn load<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, LoadError> {
    let text = LoadError::read(path)?;
    Ok(parse(&text, &path.display().to_string())?)
}

/// A configuration file as read: its parsed contents and its text, to locate later errors
/// (e.g. about files it names) at their line.
pub struct Loaded<T> {
    pub file: T,
    pub text: String,
    pub origin: String,
}

impl<T> Loaded<T> {
    pub fn doc(&self) -> Doc<'_> {
        Doc::new(&self.text, &self.origin)
    }
}

/// Reads, parses and checks a router's file (see [`RouterFile::check`]).
pub fn load_router(path: &Path) -> Result<Loaded<RouterFile>, LoadError> {
    let text = LoadError::read(path)?;
    let origin = path.display().to_string();
    let doc = Doc::new(&text, &origin);
    let file: RouterFile = doc.parse()?;
    file.check(&doc)?;
    Ok(Loaded { file, text, origin })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

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
    fn worker_threads_are_checked_and_read_before_the_runtime() {
        let text = "id: r1\nworker_threads: 0\n";
        let doc = Doc::new(text, "r.yaml");
        let f: RouterFile = doc.parse().unwrap();
        let e = f.check(&doc).unwrap_err().to_string();
        assert!(
            e.starts_with("r.yaml: line 2: worker_threads: 0 async"),
            "{e}"
        );
        let dir = std::env::temp_dir().join(format!("roam-threads-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = |name: &str, text: &str| {
            let p = dir.join(name);
            std::fs::write(&p, text).unwrap();
            p
        };
        // Other keys are for the loader; only this one is read early.
        let two = file(
            "two.yaml",
            "id: r1\nlink: {fec: false}\nworker_threads: 2\n",
        );
        assert_eq!(worker_threads_in(&two), Some(2));
        assert_eq!(worker_threads_in(&file("none.yaml", "id: r1\n")), None);
        assert_eq!(
            worker_threads_in(&file("zero.yaml", "worker_threads: 0\n")),
            None
        );
        assert_eq!(
            worker_threads_in(&file("bad.yaml", "worker_threads: [\n")),
            None
        );
        assert_eq!(worker_threads_in(&dir.join("missing.yaml")), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn mistakes_name_the_line() {
        let e = parse::<RouterFile>("id: r1\nconect:\n  - x\n", "r.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("r.yaml: line 2"), "{e}");
        assert!(e.contains("unknown field `conect`"), "{e}");
        let e = parse::<RouterFile>("id: r1\nlink:\n  keepalive_ms: soon\n", "r.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3"), "{e}");
        let e = parse::<RouterFile>("id: [\n", "r.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("r.yaml"), "{e}");
        let bad = LinkFile {
            idle_timeout_ms: Some(1000),
            keepalive_ms: Some(2000),
            ..Default::default()
        };
        assert!(bad
            .apply(LinkConfig::default())
            .unwrap_err()
            .to_string()
            .contains("shorter"));
        let bad = LinkFile {
            congestion: Some("vegas".into()),
            ..Default::default()
        };
        let e = bad.apply(LinkConfig::default()).unwrap_err().to_string();
        assert!(e.contains("link.congestion") && e.contains("bbr"), "{e}");
    }

    /// The router file's semantic check, as `roam router -c` runs it.
    fn check(text: &str) -> Result<RouterFile, String> {
        let doc = Doc::new(text, "router.yaml");
        let f: RouterFile = doc.parse()?;
        f.check(&doc)?;
        Ok(f)
    }

    /// Each file is refused with an error starting with its message.
    fn refused(cases: &[(&str, &str)]) {
        for (text, want) in cases {
            let e = check(text).unwrap_err();
            assert!(e.starts_with(want), "{text:?}:\n got  {e}\n want {want}");
        }
    }

    #[test]
    fn values_that_cannot_work_are_refused_with_file_line_and_field() {
        check("id: r1\nlisten: 0.0.0.0:0\nlink:\n  idle_timeout_ms: 3000\n").unwrap();
        refused(&[
            (
                "id: r1\nlink:\n  keepalive_ms: 100\n  max_message_bytes: 0\n",
                "router.yaml: line 4: link.max_message_bytes: 0 cannot carry a message; give 1024 to",
            ),
            (
                "id: r1\nlink:\n  idle_timeout_ms: 0\n",
                "router.yaml: line 3: link.idle_timeout_ms: 0 is not a usable idle timeout",
            ),
            (
                "id: r1\nlink:\n  idle_timeout_ms: 1000\n  keepalive_ms: 2000\n",
                "router.yaml: line 4: link.keepalive_ms: 2000 ms must be shorter than link.idle_timeout_ms (1000 ms)",
            ),
            (
                "id: r1\nlink: {reliable_queue_messages: 0}\n",
                "router.yaml: line 2: link.reliable_queue_messages: 0 holds no message",
            ),
            (
                "id: r1\nlink:\n  max_backoff_ms: 0\n",
                "router.yaml: line 3: link.max_backoff_ms:",
            ),
            (
                "id: r1\nlisten: 0.0.0.0\n",
                "router.yaml: line 2: listen: missing port in \"0.0.0.0\" (e.g. 0.0.0.0:7447)",
            ),
            (
                "id: r1\nlisten_tcp: 0.0.0.0:99999\n",
                "router.yaml: line 2: listen_tcp: port \"99999\" in \"0.0.0.0:99999\" is not a number from 0 to 65535",
            ),
            (
                "id: r1\nstatus_interval_s: 5\nmetrics_listen: 127.0.0.1\n",
                "router.yaml: line 3: metrics_listen: missing port in \"127.0.0.1\"",
            ),
            (
                "id: r1\nconnect:\n  - quic://a:7447\n  - quic://b\n",
                "router.yaml: line 4: connect[1]: missing port",
            ),
            ("id: R1\n", "router.yaml: line 1: id: invalid identity name"),
        ]);
        // The idle timeout's own mistake never talks about keepalives.
        let e = check("id: r1\nlink:\n  idle_timeout_ms: 0\n").unwrap_err();
        assert!(!e.contains("keepalive"), "{e}");
    }

    #[test]
    fn the_largest_packet_is_set_in_the_link_section() {
        let d = LinkFile::default().apply(LinkConfig::default()).unwrap();
        assert_eq!(d.max_udp_payload, 9000);
        let f = check("id: r1\nlink:\n  max_udp_payload_bytes: 1452\n").unwrap();
        assert_eq!(
            f.link.apply(LinkConfig::default()).unwrap().max_udp_payload,
            1452
        );
        refused(&[
            (
                "id: r1\nlink:\n  max_udp_payload_bytes: 1000\n",
                "router.yaml: line 3: link.max_udp_payload_bytes: 1000 is not a usable QUIC packet size; give 1200 to 65527",
            ),
            (
                "id: r1\nlink:\n  max_udp_payload_bytes: 70000\n",
                "router.yaml: line 3",
            ),
        ]);
    }

    #[test]
    fn acknowledgements_and_initial_window_are_set_in_the_link_section() {
        let d = LinkFile::default().apply(LinkConfig::default()).unwrap();
        assert_eq!(
            (d.ack_every, d.max_ack_delay, d.initial_window_bytes),
            (0, Duration::from_millis(1), 262144)
        );
        let f = check(
            "id: r1\nlink:\n  ack_every_packets: 10\n  max_ack_delay_ms: 2\n  initial_window_bytes: 12000\n",
        )
        .unwrap();
        let l = f.link.apply(LinkConfig::default()).unwrap();
        assert_eq!(
            (l.ack_every, l.max_ack_delay, l.initial_window_bytes),
            (10, Duration::from_millis(2), 12000)
        );
        refused(&[
            (
                "id: r1\nlink:\n  ack_every_packets: 1001\n",
                "router.yaml: line 3: link.ack_every_packets: 1001 is not a usable acknowledgement frequency; give 0 to 1000",
            ),
            (
                "id: r1\nlink:\n  max_ack_delay_ms: 100\n",
                "router.yaml: line 3: link.max_ack_delay_ms: 100 is not a usable acknowledgement delay; give 1 to 25",
            ),
            (
                "id: r1\nlink:\n  initial_window_bytes: 1000\n",
                "router.yaml: line 3: link.initial_window_bytes: 1000 is not a usable initial congestion window",
            ),
        ]);
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
        assert!(
            e.to_string()
                .contains("link.max_unauthenticated_per_source"),
            "{e}"
        );
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
            Congestion::Tolerant
        );
    }

    #[test]
    fn forward_error_correction_is_on_unless_the_file_turns_it_off() {
        let on = RouterFile::default().link.apply(LinkConfig::default());
        assert!(on.unwrap().fec);
        let f: RouterFile = parse("id: r1\nlink:\n  fec: false\n", "r.yaml").unwrap();
        assert!(!f.link.apply(LinkConfig::default()).unwrap().fec);
        let e = parse::<RouterFile>("id: r1\nlink:\n  fec: sometimes\n", "r.yaml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 3") && e.contains("fec"), "{e}");
    }
}
