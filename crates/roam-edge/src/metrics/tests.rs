//! The snapshot from its sources, through JSON and a file, and back.

use std::sync::Arc;

use roam_net::admission::AdmissionStats;
use roam_net::latency::LatencyHistogram;
use roam_net::link::{PathStats, PeerInfo};
use roam_net::runtime::{LinkReport, RouterReport};
use roam_proto::frame::Role;
use roam_routing::Stats;

use super::process::vm_rss_bytes;
use super::*;

fn histogram(ages: &[u64]) -> LatencyHistogram {
    let h = LatencyHistogram::default();
    for a in ages {
        h.record(*a);
    }
    h
}

fn link(id: u32, peer: &str, kind: &'static str, path: Option<PathStats>) -> LinkReport {
    LinkReport {
        link: id,
        peer: PeerInfo {
            name: peer.into(),
            role: Role::Router,
            id: 7,
            serial: vec![1],
            not_after: i64::MAX,
        },
        kind,
        frames_in: 10,
        frames_out: 20,
        bytes_in: 1000,
        bytes_out: 2000,
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
        data_age: histogram(&[100, 200, 300]).snapshot(),
        path,
        peer_forwards: true,
        closed: false,
    }
}

fn report() -> RouterReport {
    RouterReport {
        routing: Stats {
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
            link(
                1,
                "r2",
                "quic",
                Some(PathStats {
                    rtt_us: 70_210,
                    cwnd: 1_048_576,
                    sent_packets: 9000,
                    lost_packets: 12,
                    congestion_events: 3,
                    mtu: 6500,
                    repairs_sent: 4,
                    repairs_received: 5,
                    shards_rebuilt: 2,
                    loss_verdicts: roam_net::congestion::Counts {
                        random: 9,
                        queue: 2,
                        loss_share: 0,
                        other: 1,
                    },
                }),
            ),
            link(2, "r3", "tcp+tls", None),
        ],
        local_dropped: 8,
        replacements: Default::default(),
        trust: roam_net::runtime::TrustStats {
            list_number: 3,
            revoked: 2,
            taken: 1,
            refused_invalid: 4,
            refused_older: 5,
            closed_revoked: 6,
            closed_expired: 7,
        },
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
    }
}

fn process() -> Process {
    Process {
        id: "edge-1".into(),
        kind: ProcessKind::Router,
        roam_version: "0.1.0".into(),
        pid: 42,
        start_time_us: 1_700_000_000_000_000,
        snapshot_time_us: 1_700_000_030_000_000,
        cpu_time_us: Some(1234),
        rss_bytes: None,
        udp_receive_drops: None,
    }
}

fn topic(name: &str, direction: Direction) -> Topic {
    Topic {
        name: name.into(),
        direction,
        samples: 3,
        bytes: 0,
        max_size: None,
        min_size: None,
        drops: TopicDrops {
            refused: 1,
            failed: 2,
            unattributed: 3,
            unannounced: 4,
            ruled: 5,
            overwritten: 6,
            lost: 7,
        },
        recovered: 8,
        age_in: Ages::from(&histogram(&[10, 20, 30])),
        age_out: (direction == Direction::Import).then(|| Ages::from(&histogram(&[40]))),
    }
}

#[test]
fn a_router_report_becomes_routing_links_and_admission() {
    let s = Snapshot::new(process()).with_router(&report());
    assert_eq!(s.version, 1);
    let r = s.routing.as_ref().unwrap();
    assert_eq!((r.names, r.routers_known, r.subscribed_names), (4, 2, 3));
    assert_eq!(
        (r.data_in, r.data_forwarded, r.data_delivered_local),
        (100, 90, 5)
    );
    assert_eq!(r.control_frames_in, 40);
    assert_eq!(
        r.drops.by_cause(),
        [
            ("no_route", 2),
            ("rpf", 1),
            ("malformed", 6),
            ("unknown_link", 7),
            ("local_subscriber", 8)
        ]
    );
    let a = s.admission.as_ref().unwrap();
    assert_eq!((a.pending, a.retried, a.refused_total), (1, 9, 8));
    let t = s.trust.as_ref().unwrap();
    assert_eq!(
        (
            t.list_number,
            t.revoked,
            t.lists_refused_older,
            t.links_closed_expired
        ),
        (3, 2, 5, 7)
    );
    assert_eq!(s.links.len(), 2);
    let quic = &s.links[0];
    assert_eq!((quic.link, quic.peer.as_str()), (1, "r2"));
    assert_eq!(
        (quic.kind, quic.peer_role),
        (LinkKind::Quic, PeerRole::Router)
    );
    assert_eq!(
        (
            quic.frames_in,
            quic.frames_out,
            quic.bytes_in,
            quic.bytes_out
        ),
        (10, 20, 1000, 2000)
    );
    assert_eq!(
        quic.drops.by_cause(),
        [("full", 3), ("stale", 4), ("quota", 9), ("no_route", 11)]
    );
    assert_eq!(quic.queue.quota_waits, 8);
    assert_eq!((quic.names_held, quic.names_refused), (12, 13));
    assert_eq!(quic.path.as_ref().unwrap().lost_packets, 12);
    assert_eq!(quic.path.as_ref().unwrap().shards_rebuilt, 2);
    let p = quic.path.as_ref().unwrap();
    assert_eq!(
        (
            p.losses_random,
            p.cuts_queue,
            p.cuts_loss_share,
            p.cuts_other
        ),
        (9, 2, 0, 1)
    );
    let ages = &quic.data_age;
    assert_eq!(
        (ages.count, ages.sum_us, ages.min_us, ages.max_us),
        (3, 600, 100, 300)
    );
    assert_eq!(ages.buckets.iter().map(|b| b.count).sum::<u64>(), 3);
    assert!((ages.mean_us - 200.0).abs() < 1e-9);
    assert_eq!(s.links[1].kind, LinkKind::Tcp);
    assert!(s.links[1].path.is_none());
}

#[test]
fn ages_keep_every_bucket_so_coarser_histograms_are_exact() {
    let ages: Vec<u64> = (0..5000).map(|i| i * 37 % 100_000).collect();
    let a = Ages::from(&histogram(&ages));
    assert_eq!(a.count, 5000);
    for k in 6..20 {
        let bound = (1u64 << k) - 1;
        let exact = ages.iter().filter(|x| **x <= bound).count() as u64;
        assert_eq!(a.count_at_most(bound), exact, "le {bound}");
    }
    assert_eq!(a.count_at_most(u64::MAX), 5000);
    let empty = Ages::from(&LatencyHistogram::default());
    assert_eq!(empty, Ages::default());
}

#[test]
fn topics_are_ordered_and_name_their_drop_causes_by_direction() {
    let s = Snapshot::new(process()).with_topics(vec![
        topic("rt/b", Direction::Import),
        topic("rt/z", Direction::Export),
        topic("rt/a", Direction::Import),
    ]);
    let order: Vec<_> = s
        .topics
        .iter()
        .map(|t| (t.direction, t.name.as_str()))
        .collect();
    assert_eq!(
        order,
        [
            (Direction::Export, "rt/z"),
            (Direction::Import, "rt/a"),
            (Direction::Import, "rt/b")
        ]
    );
    assert_eq!(
        s.topics[0].drops_by_cause(),
        [
            ("failed", 2),
            ("unattributed", 3),
            ("ruled", 5),
            ("overwritten", 6),
            ("lost", 7)
        ]
    );
    assert_eq!(
        s.topics[1].drops_by_cause(),
        [
            ("refused", 1),
            ("unannounced", 4),
            ("failed", 2),
            ("ruled", 5),
            ("lost", 7)
        ]
    );
}

#[test]
fn json_round_trips_and_names_what_it_holds() {
    let s = Snapshot::new(process())
        .with_router(&report())
        .with_topics(vec![
            topic("rt/chatter", Direction::Export),
            topic("rt/scan", Direction::Import),
        ]);
    let json = s.to_json().unwrap();
    assert!(!json.contains('\n'));
    assert_eq!(Snapshot::from_json(&json).unwrap(), s);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["version"], 1);
    assert_eq!(v["process"]["kind"], "router");
    assert!(v["process"].get("rss_bytes").is_none(), "absent, not null");
    assert_eq!(v["links"][0]["kind"], "quic");
    assert_eq!(v["links"][1]["kind"], "tcp");
    assert!(v["links"][1].get("path").is_none());
    assert_eq!(v["links"][0]["path"]["rtt_us"], 70_210);
    assert_eq!(v["links"][0]["drops"]["stale"], 4);
    assert_eq!(v["topics"][0]["direction"], "export");
    assert!(v["topics"][0].get("age_out").is_none());
    assert_eq!(v["topics"][1]["age_out"]["count"], 1);
    assert_eq!(v["routing"]["drops"]["rpf"], 1);
    let b = &v["links"][0]["data_age"]["buckets"][0];
    assert!(
        b["le_us"].as_u64().unwrap() >= 100 && b["count"] == 1,
        "{b}"
    );
}

#[test]
fn readers_refuse_another_version_and_ignore_new_fields() {
    let s = Snapshot::new(process());
    let mut v: serde_json::Value = serde_json::from_str(&s.to_json().unwrap()).unwrap();
    v["process"]["threads"] = 9.into();
    v["later"] = "added in a later release".into();
    assert_eq!(Snapshot::from_json(&v.to_string()).unwrap(), s);
    v["version"] = 2.into();
    let err = Snapshot::from_json(&v.to_string()).unwrap_err();
    assert!(matches!(err, SnapshotError::Version { found: 2 }), "{err}");
    assert!(Snapshot::from_json("{\"version\": 1}").is_err());
    assert!(Snapshot::from_json("roam::stats: link").is_err());
    // A transport this reader does not know is still a link.
    let mut v: serde_json::Value = serde_json::from_str(
        &Snapshot::new(process())
            .with_router(&report())
            .to_json()
            .unwrap(),
    )
    .unwrap();
    v["links"][0]["kind"] = "mqtt".into();
    let s = Snapshot::from_json(&v.to_string()).unwrap();
    assert_eq!(s.links[0].kind, LinkKind::Other);
}

#[test]
fn the_file_holds_the_latest_snapshot_whole() {
    let dir = std::env::temp_dir().join(format!("roam-metrics-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.json");
    let f = MetricsFile::new(&path);
    let mut s = Snapshot::new(process()).with_router(&report());
    f.write(&s).unwrap();
    s.process.snapshot_time_us += 1;
    f.write(&s).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 1, "one snapshot, one line");
    assert!(text.ends_with('\n'));
    assert_eq!(MetricsFile::read(&path).unwrap(), s);
    // Nothing left behind but the file itself.
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["m.json"]);
    // A directory that does not exist is an error that names the file.
    let missing = MetricsFile::new(dir.join("no/such/dir/m.json"));
    let err = missing.write(&s).unwrap_err().to_string();
    assert!(err.contains("no/such/dir/m.json"), "{err}");
    std::fs::write(&path, "{\"version\": 7}").unwrap();
    let err = MetricsFile::read(&path).unwrap_err().to_string();
    assert!(err.contains("version 7") && err.contains("m.json"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn resident_memory_is_read_from_proc_status() {
    let status = "Name:\troam\nVmPeak:\t  200 kB\nVmRSS:\t   12345 kB\nThreads:\t4\n";
    assert_eq!(vm_rss_bytes(status), Some(12345 * 1024));
    assert_eq!(vm_rss_bytes("Name:\troam\n"), None);
    assert_eq!(vm_rss_bytes("VmRSS:\tlots kB\n"), None);
    assert_eq!(vm_rss_bytes("VmRSS:\t99999999999999999999 kB\n"), None);
}

struct Fixed(Vec<Topic>);

impl TopicSource for Fixed {
    fn topics(&self) -> Vec<Topic> {
        self.0.clone()
    }
}

#[tokio::test]
async fn metrics_gather_the_process_and_its_topics() {
    let before = roam_net::latency::now_us();
    let m = Metrics::new("robot-7", ProcessKind::Proxy).with_topics(Arc::new(Fixed(vec![topic(
        "rt/chatter",
        Direction::Export,
    )])));
    let s = m.snapshot().await;
    let p = &s.process;
    assert_eq!((p.id.as_str(), p.kind), ("robot-7", ProcessKind::Proxy));
    assert_eq!(p.pid, std::process::id());
    assert_eq!(p.roam_version, env!("CARGO_PKG_VERSION"));
    assert!(p.start_time_us >= before && p.snapshot_time_us >= p.start_time_us);
    if cfg!(target_os = "linux") {
        assert!(p.rss_bytes.unwrap() > 0);
        assert!(p.cpu_time_us.is_some());
    }
    assert!(s.routing.is_none() && s.links.is_empty());
    assert_eq!(s.topics.len(), 1);
}
