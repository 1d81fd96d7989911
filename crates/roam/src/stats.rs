//! Status: what each link of a router and each topic of a proxy carried, and how old its
//! messages were at that hop. A process gathers it as one typed snapshot
//! ([`roam_edge::metrics`]) every status interval and once more at shutdown, logs it as
//! status lines, and keeps the latest one in its metrics file when it has one.
//!
//! The lines use the tracing target `roam::stats`, so `RUST_LOG=warn,roam::stats=info` keeps
//! just these; their field names and formats are what docs/operations.md shows. Ages are
//! microseconds since the publisher's proxy sealed the message (see `roam_net::latency` for
//! what that means across hosts).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use roam_edge::metrics::{
    Ages, LinkKind, Metrics, MetricsFile, MetricsFileError, ProcessKind, QuicPath, Snapshot,
};
use roam_net::runtime::RouterHandle;
use tokio::sync::oneshot;
use tracing::{info, warn};

pub use roam_edge::metrics::Direction;

/// An age distribution as one log field: `n 1000 mean 312 std 40 min 200 p50 300 p90 350 p99
/// 500 max 900` (microseconds).
pub fn summary_field(a: &Ages) -> String {
    format!(
        "n {} mean {:.0} std {:.0} min {} p50 {:.0} p90 {:.0} p99 {:.0} max {}",
        a.count, a.mean_us, a.std_us, a.min_us, a.p50_us, a.p90_us, a.p99_us, a.max_us
    )
}

/// A QUIC link's path estimates as one log field: `rtt_us 70210 cwnd 1048576 sent_packets
/// 9000 lost_packets 12 congestion_events 3 mtu 1452`, then `repairs_sent 40 repairs_received
/// 38 shards_rebuilt 12` once the link has used forward error correction, and `losses_random
/// 9 cuts_queue 2 cuts_loss_share 1 cuts_other 0` once the default controller has judged a
/// loss event; `-` for TCP links (the kernel keeps those).
pub fn path_field(p: Option<&QuicPath>) -> String {
    match p {
        Some(p) => {
            let mut f = format!(
                "rtt_us {} cwnd {} sent_packets {} lost_packets {} congestion_events {} mtu {}",
                p.rtt_us, p.cwnd, p.sent_packets, p.lost_packets, p.congestion_events, p.mtu
            );
            if p.repairs_sent + p.repairs_received > 0 {
                f += &format!(
                    " repairs_sent {} repairs_received {} shards_rebuilt {}",
                    p.repairs_sent, p.repairs_received, p.shards_rebuilt
                );
            }
            if p.losses_random + p.cuts_queue + p.cuts_loss_share + p.cuts_other > 0 {
                f += &format!(
                    " losses_random {} cuts_queue {} cuts_loss_share {} cuts_other {}",
                    p.losses_random, p.cuts_queue, p.cuts_loss_share, p.cuts_other
                );
            }
            f
        }
        None => "-".into(),
    }
}

/// The transport's name as the status lines have always written it.
fn kind_field(k: LinkKind) -> &'static str {
    match k {
        LinkKind::Quic => "quic",
        LinkKind::Tcp => "tcp+tls",
        LinkKind::Other => "other",
    }
}

/// Logs a snapshot as status lines: the router's counters, its admission figures, one line
/// per link, one per topic.
pub fn log(s: &Snapshot) {
    if let Some(r) = &s.routing {
        info!(
            target: "roam::stats",
            names = r.names,
            routers = r.routers_known,
            data_in = r.data_in,
            forwarded = r.data_forwarded,
            no_route = r.drops.no_route,
            rpf_drop = r.drops.rpf,
            "status"
        );
    }
    if let Some(a) = &s.admission {
        info!(
            target: "roam::stats",
            pending = a.pending,
            admitted = a.admitted,
            authenticated = a.authenticated,
            failed = a.failed,
            timed_out = a.timed_out,
            evicted = a.evicted,
            refused_per_source = a.refused_per_source,
            refused_total = a.refused_total,
            retried = a.retried,
            "unauthenticated connections"
        );
    }
    for l in &s.links {
        info!(
            target: "roam::stats",
            peer = %l.peer,
            kind = kind_field(l.kind),
            frames_in = l.frames_in,
            frames_out = l.frames_out,
            bytes_in = l.bytes_in,
            bytes_out = l.bytes_out,
            dropped_full = l.drops.full,
            dropped_stale = l.drops.stale,
            dropped_quota = l.drops.quota,
            dropped_no_route = l.drops.no_route,
            queued = l.queue.messages,
            queued_bytes = l.queue.bytes,
            stalls = l.queue.stalls,
            quota_waits = l.queue.quota_waits,
            names_held = l.names_held,
            names_refused = l.names_refused,
            closed = l.closed,
            path = ?path_field(l.path.as_ref()),
            data_age_us = ?summary_field(&l.data_age),
            "link"
        );
    }
    for t in &s.topics {
        let d = &t.drops;
        match t.direction {
            Direction::Export => info!(
                target: "roam::stats",
                topic = %t.name,
                samples = t.samples,
                failed = d.failed,
                unattributed = d.unattributed,
                ruled = d.ruled,
                overwritten = d.overwritten,
                dds_age_us = ?summary_field(&t.age_in),
                "export"
            ),
            Direction::Import => info!(
                target: "roam::stats",
                topic = %t.name,
                samples = t.samples,
                refused = d.refused,
                unannounced = d.unannounced,
                failed = d.failed,
                ruled = d.ruled,
                opened_age_us = ?summary_field(&t.age_in),
                written_age_us = ?t.age_out.as_ref().map_or_else(|| summary_field(&Ages::default()), summary_field),
                "import"
            ),
        }
    }
}

/// A process's status reporting: its metrics' sources and, optionally, the file that keeps
/// the latest snapshot.
#[derive(Clone)]
pub struct Status {
    metrics: Metrics,
    file: Option<MetricsFile>,
}

impl Status {
    pub fn new(metrics: Metrics, file: Option<PathBuf>) -> Self {
        Status {
            metrics,
            file: file.map(MetricsFile::new),
        }
    }

    /// The sources, for in-process callers that want a snapshot of their own.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Writes the first snapshot to the metrics file at once, so that a path that cannot be
    /// written is an error at start, not a warning an hour later. No status lines.
    pub async fn start(&self) -> Result<(), MetricsFileError> {
        match &self.file {
            Some(f) => f.write(&self.metrics.snapshot().await),
            None => Ok(()),
        }
    }

    /// Takes a snapshot, logs its status lines and replaces the metrics file with it.
    pub async fn report(&self) {
        let s = self.metrics.snapshot().await;
        log(&s);
        let Some(f) = self.file.clone() else { return };
        match tokio::task::spawn_blocking(move || f.write(&s)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => warn!("{e}"),
            Err(e) => warn!("metrics file: the write did not complete: {e}"),
        }
    }

    /// A proxy's status: its edge router and its edge's topics, reported every
    /// `status_interval_s` and into `metrics_file`; the first snapshot is written now.
    pub async fn start_proxy(
        cfg: &roam_proxy::config::ProxyConfig,
        router: &RouterHandle,
        edge: &roam_edge::Edge,
    ) -> Result<(Status, Ticker), String> {
        let metrics = Metrics::new(&cfg.id, ProcessKind::Proxy)
            .with_router(router.clone())
            .with_topics(Arc::new(edge.clone()));
        let status = Status::new(metrics, cfg.metrics_file.clone());
        status.start().await.map_err(|e| e.to_string())?;
        let ticker = status.every(cfg.status_interval_s);
        Ok((status, ticker))
    }

    /// Sends a process's snapshot to each of its realms (while anyone there listens: `roam
    /// top`, a dashboard). A process in one realm sends everything; in several, each realm
    /// gets the process, its router and its links but not the topics, which would tell one
    /// realm the names another carries.
    pub async fn announce(
        id: &str,
        kind: ProcessKind,
        router: &RouterHandle,
        edge: &roam_edge::Edge,
        realms: &[Arc<roam_edge::Realm>],
    ) -> Vec<roam_edge::metrics::realm::MetricsAnnouncer> {
        let mut out = Vec::new();
        for realm in realms {
            let mut m = Metrics::new(id, kind).with_router(router.clone());
            if realms.len() == 1 {
                m = m.with_topics(Arc::new(edge.clone()));
            }
            match edge.metrics_announcer(realm.clone(), m).await {
                Ok(a) => out.push(a),
                Err(e) => {
                    warn!(realm = %realm.label, "this process's metrics are not sent to the realm: {e}")
                }
            }
        }
        out
    }

    /// Reports every `secs` seconds (none when 0) until [`Ticker::stop`].
    pub fn every(&self, secs: u64) -> Ticker {
        if secs == 0 {
            return Ticker(None);
        }
        let status = self.clone();
        let (stop, mut stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(secs));
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = &mut stopped => return,
                    _ = tick.tick() => status.report().await,
                }
            }
        });
        Ticker(Some((stop, task)))
    }
}

/// The periodic status task of [`Status::every`].
pub struct Ticker(Option<(oneshot::Sender<()>, tokio::task::JoinHandle<()>)>);

impl Ticker {
    /// Stops it between two reports (never in the middle of writing the metrics file), so
    /// a final report made after this is the last word in the file.
    pub async fn stop(self) {
        if let Some((stop, task)) = self.0 {
            let _ = stop.send(());
            let _ = task.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::Mutex;

    use roam_edge::metrics::{Process, TopicSource};
    use roam_edge::stats::{Direction, TopicRegistry, TopicStats};
    use roam_net::admission::AdmissionStats;
    use roam_net::latency::LatencyHistogram;
    use roam_net::link::{PathStats, PeerInfo};
    use roam_net::runtime::{LinkReport, RouterReport};
    use roam_proto::frame::Role;

    use super::*;

    fn histogram(ages: &[u64]) -> LatencyHistogram {
        let h = LatencyHistogram::default();
        for a in ages {
            h.record(*a);
        }
        h
    }

    /// A router report and a proxy's topics with every counter distinct.
    fn known_snapshot() -> Snapshot {
        let link = |id, peer: &str, kind, path, closed| LinkReport {
            link: id,
            peer: PeerInfo {
                name: peer.into(),
                role: Role::Router,
                id: 7,
                serial: vec![1],
                not_after: i64::MAX,
            },
            kind,
            frames_in: 41873,
            frames_out: 41000,
            bytes_in: 5_000_000,
            bytes_out: 4_900_000,
            dropped_full: 3,
            dropped_stale: 4,
            queued: roam_net::lane::Depth {
                messages: 5,
                bytes: 5000,
            },
            stalls: 6,
            stalled_topics: 1,
            quota_waits: 8,
            dropped_quota: 9,
            dropped_no_route: 11,
            names: 12,
            names_refused: 13,
            data_age: histogram(&[95, 190, 190, 300, 610, 4100]).snapshot(),
            path,
            peer_forwards: true,
            closed,
        };
        let quic = PathStats {
            rtt_us: 70_210,
            cwnd: 1_510_821,
            sent_packets: 16253,
            lost_packets: 0,
            congestion_events: 0,
            mtu: 1452,
            ..Default::default()
        };
        let report = RouterReport {
            routing: roam_routing::Stats {
                data_in: 100,
                data_forwarded: 90,
                data_delivered_local: 5,
                data_no_route: 2,
                data_rpf_drop: 1,
                frames_control_in: 40,
                names: 4,
                routers_known: 2,
                data_malformed: 6,
                data_unknown_link: 7,
                subscribed_names: 3,
            },
            links: vec![
                link(1, "edge-2", "quic", Some(quic), false),
                link(2, "backup", "tcp+tls", None, true),
            ],
            local_dropped: 8,
            replacements: Default::default(),
            trust: Default::default(),
            admission: AdmissionStats {
                pending: 1,
                admitted: 2,
                authenticated: 3,
                failed: 4,
                timed_out: 5,
                evicted: 6,
                refused_per_source: 7,
                refused_total: 8,
                retried: 9,
            },
        };
        let proxy = TopicRegistry::default();
        let e = proxy.topic(Direction::Export, "rt/scan");
        for a in [55, 60, 70] {
            e.age_in.record(a);
            TopicStats::count(&e.samples);
        }
        TopicStats::count(&e.unattributed);
        let i = proxy.topic(Direction::Import, "rt/chatter");
        for a in [300, 320] {
            i.age_in.record(a);
            TopicStats::count(&i.samples);
        }
        for a in [340, 400] {
            i.age_out.record(a);
        }
        for c in [&i.refused, &i.failed, &i.unannounced] {
            TopicStats::count(c);
        }
        let process = Process {
            id: "edge-1".into(),
            kind: ProcessKind::Proxy,
            roam_version: "0.1.0".into(),
            pid: 1,
            start_time_us: 0,
            snapshot_time_us: 0,
            cpu_time_us: None,
            rss_bytes: None,
            udp_receive_drops: None,
        };
        Snapshot::new(process)
            .with_router(&report)
            .with_topics(proxy.topics())
    }

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn status_lines_from_a_snapshot_are_the_lines_operators_know() {
        let out = Captured::default();
        let writer = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .without_time()
            .with_ansi(false)
            .with_writer(move || writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || log(&known_snapshot()));
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        // What the status lines were before they came from a snapshot (the same report
        // logged by the former direct rendering).
        let expected = [
            " INFO roam::stats: status names=4 routers=2 data_in=100 forwarded=90 no_route=2 rpf_drop=1",
            " INFO roam::stats: unauthenticated connections pending=1 admitted=2 authenticated=3 failed=4 timed_out=5 evicted=6 refused_per_source=7 refused_total=8 retried=9",
            " INFO roam::stats: link peer=edge-2 kind=\"quic\" frames_in=41873 frames_out=41000 bytes_in=5000000 bytes_out=4900000 dropped_full=3 dropped_stale=4 dropped_quota=9 dropped_no_route=11 queued=5 queued_bytes=5000 stalls=6 quota_waits=8 names_held=12 names_refused=13 closed=false path=\"rtt_us 70210 cwnd 1510821 sent_packets 16253 lost_packets 0 congestion_events 0 mtu 1452\" data_age_us=\"n 6 mean 914 std 1434 min 95 p50 188 p90 4100 p99 4100 max 4100\"",
            " INFO roam::stats: link peer=backup kind=\"tcp+tls\" frames_in=41873 frames_out=41000 bytes_in=5000000 bytes_out=4900000 dropped_full=3 dropped_stale=4 dropped_quota=9 dropped_no_route=11 queued=5 queued_bytes=5000 stalls=6 quota_waits=8 names_held=12 names_refused=13 closed=true path=\"-\" data_age_us=\"n 6 mean 914 std 1434 min 95 p50 188 p90 4100 p99 4100 max 4100\"",
            " INFO roam::stats: export topic=rt/scan samples=3 failed=0 unattributed=1 ruled=0 overwritten=0 dds_age_us=\"n 3 mean 62 std 6 min 55 p50 60 p90 70 p99 70 max 70\"",
            " INFO roam::stats: import topic=rt/chatter samples=2 refused=1 unannounced=1 failed=1 ruled=0 opened_age_us=\"n 2 mean 310 std 10 min 300 p50 300 p90 320 p99 320 max 320\" written_age_us=\"n 2 mean 370 std 28 min 340 p50 344 p90 400 p99 400 max 400\"",
        ];
        let got: Vec<&str> = text.lines().collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn a_proxy_topic_counts_only_its_own_direction_ages() {
        let proxy = TopicRegistry::default();
        let e = proxy.topic(Direction::Export, "rt/a");
        e.age_in.record(5);
        TopicStats::count(&e.samples);
        TopicStats::count(&e.failed);
        let i = proxy.topic(Direction::Import, "rt/a");
        i.age_out.record(9);
        let topics = proxy.topics();
        assert_eq!(topics.len(), 2);
        let (ex, im) = (&topics[0], &topics[1]);
        assert_eq!(
            (ex.direction, ex.samples, ex.drops.failed),
            (Direction::Export, 1, 1)
        );
        assert_eq!(ex.age_in.count, 1);
        assert!(ex.age_out.is_none());
        assert_eq!(im.direction, Direction::Import);
        assert_eq!(im.age_out.as_ref().map(|a| a.max_us), Some(9));
        // The same Arc is handed out again: counts go to one place.
        assert!(Arc::ptr_eq(&e, &proxy.topic(Direction::Export, "rt/a")));
    }

    #[test]
    fn the_path_field_names_each_figure_or_says_there_is_none() {
        let p = QuicPath {
            rtt_us: 70_210,
            cwnd: 1_048_576,
            sent_packets: 9000,
            lost_packets: 12,
            congestion_events: 3,
            mtu: 6500,
            ..Default::default()
        };
        assert_eq!(
            path_field(Some(&p)),
            "rtt_us 70210 cwnd 1048576 sent_packets 9000 lost_packets 12 congestion_events 3 mtu 6500"
        );
        let fec = QuicPath {
            repairs_sent: 40,
            repairs_received: 38,
            shards_rebuilt: 12,
            ..p
        };
        assert_eq!(
            path_field(Some(&fec)),
            "rtt_us 70210 cwnd 1048576 sent_packets 9000 lost_packets 12 congestion_events 3 mtu 6500 repairs_sent 40 repairs_received 38 shards_rebuilt 12"
        );
        let judged = QuicPath {
            losses_random: 9,
            cuts_queue: 2,
            cuts_loss_share: 1,
            ..p
        };
        assert_eq!(
            path_field(Some(&judged)),
            "rtt_us 70210 cwnd 1048576 sent_packets 9000 lost_packets 12 congestion_events 3 mtu 6500 losses_random 9 cuts_queue 2 cuts_loss_share 1 cuts_other 0"
        );
        assert_eq!(path_field(None), "-");
    }

    #[tokio::test]
    async fn the_status_task_stops_between_reports_and_leaves_the_final_snapshot() {
        let dir = std::env::temp_dir().join(format!("roam-status-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("m.json");
        let proxy = Arc::new(TopicRegistry::default());
        let metrics = Metrics::new("robot", ProcessKind::Proxy).with_topics(proxy.clone());
        let status = Status::new(metrics, Some(path.clone()));
        status.start().await.unwrap();
        let first = MetricsFile::read(&path).unwrap();
        assert!(first.topics.is_empty());
        let ticker = status.every(1);
        TopicStats::count(&proxy.topic(Direction::Export, "rt/t").samples);
        ticker.stop().await;
        status.report().await;
        let last = MetricsFile::read(&path).unwrap();
        assert_eq!(last.topics[0].samples, 1);
        assert!(last.process.snapshot_time_us >= first.process.snapshot_time_us);
        let bad = Status::new(
            Metrics::new("robot", ProcessKind::Proxy),
            Some(dir.join("no/m.json")),
        );
        let err = bad.start().await.unwrap_err().to_string();
        assert!(err.contains("no/m.json"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
