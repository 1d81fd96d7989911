//! The exposition of hand-made snapshots, read back line by line.

use super::*;
use crate::metrics::{
    Ages, Bucket, Link, LinkDrops, LinkKind, LinkQueue, PeerRole, Process, ProcessKind, QuicPath,
    Replacements, Routing, Snapshot, Topic, TopicDrops, Trust,
};

fn process() -> Process {
    Process {
        id: "edge-1".into(),
        kind: ProcessKind::Proxy,
        roam_version: "0.1.0".into(),
        pid: 42,
        start_time_us: 1_700_000_000_000_000,
        snapshot_time_us: 1_700_000_001_000_000,
        cpu_time_us: Some(2_500_000),
        rss_bytes: Some(10 << 20),
        udp_receive_drops: Some(3),
    }
}

/// Ages 100, 200 and 300 µs, bucketed as the latency histogram would (exact bounds).
fn ages() -> Ages {
    Ages {
        count: 3,
        sum_us: 600,
        min_us: 100,
        max_us: 300,
        buckets: vec![
            Bucket {
                le_us: 103,
                count: 1,
            },
            Bucket {
                le_us: 207,
                count: 1,
            },
            Bucket {
                le_us: 303,
                count: 1,
            },
        ],
        ..Ages::default()
    }
}

fn topic(name: &str, direction: Direction, samples: u64) -> Topic {
    Topic {
        name: name.into(),
        direction,
        samples,
        bytes: 0,
        max_size: None,
        min_size: None,
        drops: TopicDrops {
            refused: 1,
            failed: 2,
            ..TopicDrops::default()
        },
        recovered: 3,
        age_in: ages(),
        age_out: (direction == Direction::Import).then(ages),
    }
}

fn snapshot(topics: Vec<Topic>) -> Snapshot {
    let mut s = Snapshot::new(process()).with_topics(topics);
    s.routing = Some(Routing {
        data_in: 7,
        replacements: Replacements {
            replaced: 2,
            refused: 1,
            contested: 1,
        },
        ..Routing::default()
    });
    s.links = vec![Link {
        link: 3,
        peer: "cloud".into(),
        peer_role: PeerRole::Router,
        kind: LinkKind::Quic,
        closed: false,
        frames_in: 10,
        frames_out: 20,
        bytes_in: 1000,
        bytes_out: 2000,
        drops: LinkDrops {
            full: 1,
            stale: 2,
            quota: 5,
            no_route: 7,
        },
        queue: LinkQueue {
            messages: 4,
            bytes: 4096,
            stalls: 9,
            stalled_topics: 1,
            quota_waits: 6,
        },
        path: Some(QuicPath {
            rtt_us: 70_000,
            cwnd: 12_000,
            sent_packets: 5,
            lost_packets: 1,
            congestion_events: 0,
            mtu: 1452,
            repairs_sent: 3,
            repairs_received: 2,
            shards_rebuilt: 1,
            losses_random: 7,
            cuts_queue: 1,
            ..QuicPath::default()
        }),
        data_age: ages(),
        names_held: 40,
        names_refused: 3,
    }];
    s.trust = Some(Trust {
        list_number: 4,
        revoked: 3,
        lists_taken: 2,
        lists_refused_older: 1,
        links_closed_revoked: 5,
        ..Trust::default()
    });
    s
}

/// The value of the sample line `series` (name and labels exactly as written).
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .map(|v| v.parse().expect("a number"))
}

#[test]
fn counters_gauges_and_families_follow_the_conventions() {
    let t =
        Exposition::default().render(&snapshot(vec![topic("rt/chatter", Direction::Export, 42)]));
    assert!(t.ends_with("# EOF\n"), "{t}");
    assert!(t.contains("# TYPE roam_topic_messages counter\n"), "{t}");
    assert!(t.contains("# HELP roam_topic_messages "), "{t}");
    let v = |s| value(&t, s).unwrap_or_else(|| panic!("no {s} in\n{t}"));
    assert_eq!(
        v(r#"roam_topic_messages_total{topic="rt/chatter",direction="export"}"#),
        42.0
    );
    assert_eq!(
        v(r#"roam_topic_dropped_total{topic="rt/chatter",direction="export",cause="failed"}"#),
        2.0
    );
    assert_eq!(
        v(r#"roam_topic_recovered_total{topic="rt/chatter",direction="export"}"#),
        3.0
    );
    // Import-only causes are not written for an export.
    assert!(!t.contains(r#"cause="refused""#), "{t}");
    assert_eq!(v("roam_router_data_in_total"), 7.0);
    assert_eq!(v(r#"roam_router_data_dropped_total{cause="rpf"}"#), 0.0);
    assert_eq!(v("roam_router_links_replaced_total"), 2.0);
    assert_eq!(v("roam_router_links_refused_contested_total"), 1.0);
    assert_eq!(v("roam_router_identities_contested_total"), 1.0);
    assert_eq!(
        v(r#"roam_link_bytes_total{peer="cloud",link="3",direction="out"}"#),
        2000.0
    );
    assert_eq!(
        v(r#"roam_link_dropped_total{peer="cloud",link="3",cause="stale"}"#),
        2.0
    );
    assert_eq!(v(r#"roam_link_rtt_seconds{peer="cloud",link="3"}"#), 0.07);
    assert_eq!(
        v(r#"roam_link_queued_messages{peer="cloud",link="3"}"#),
        4.0
    );
    assert_eq!(
        v(r#"roam_link_queued_bytes{peer="cloud",link="3"}"#),
        4096.0
    );
    assert_eq!(v(r#"roam_link_stalls_total{peer="cloud",link="3"}"#), 9.0);
    assert_eq!(v(r#"roam_link_names{peer="cloud",link="3"}"#), 40.0);
    assert_eq!(
        v(r#"roam_link_names_refused_total{peer="cloud",link="3"}"#),
        3.0
    );
    assert_eq!(
        v(r#"roam_link_quota_waits_total{peer="cloud",link="3"}"#),
        6.0
    );
    assert_eq!(
        v(r#"roam_link_dropped_total{peer="cloud",link="3",cause="quota"}"#),
        5.0
    );
    assert_eq!(
        v(r#"roam_link_dropped_total{peer="cloud",link="3",cause="no_route"}"#),
        7.0
    );
    assert_eq!(v(r#"roam_link_stalled_topics{peer="cloud",link="3"}"#), 1.0);
    assert_eq!(v(r#"roam_link_up{peer="cloud",link="3"}"#), 1.0);
    assert_eq!(
        v(r#"roam_link_repairs_total{peer="cloud",link="3",direction="out"}"#),
        3.0
    );
    assert_eq!(
        v(r#"roam_link_rebuilt_shards_total{peer="cloud",link="3"}"#),
        1.0
    );
    assert_eq!(
        v(r#"roam_link_loss_verdicts_total{peer="cloud",link="3",verdict="random"}"#),
        7.0
    );
    assert_eq!(
        v(r#"roam_link_loss_verdicts_total{peer="cloud",link="3",verdict="queue"}"#),
        1.0
    );
    assert_eq!(v("roam_process_cpu_seconds_total"), 2.5);
    assert_eq!(v("roam_process_resident_memory_bytes"), (10 << 20) as f64);
    assert_eq!(v("roam_udp_receive_drops_total"), 3.0);
    assert_eq!(
        v(r#"roam_process_info{id="edge-1",kind="proxy",version="0.1.0"}"#),
        1.0
    );
    assert_eq!(v("roam_topics_overflow"), 0.0);
    assert_eq!(v("roam_revocation_list_number"), 4.0);
    assert_eq!(v("roam_revoked_certificates"), 3.0);
    assert_eq!(
        v(r#"roam_revocation_lists_total{outcome="refused_older"}"#),
        1.0
    );
    assert_eq!(
        v(r#"roam_links_closed_by_trust_total{cause="revoked"}"#),
        5.0
    );
    assert_eq!(
        v(r#"roam_links_closed_by_trust_total{cause="expired"}"#),
        0.0
    );
    // Every sample belongs to a family declared before it, once.
    let mut declared = Vec::new();
    for l in t.lines() {
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            let name = rest.split(' ').next().expect("a name");
            assert!(!declared.contains(&name.to_string()), "{name} twice");
            declared.push(name.to_string());
        } else if !l.starts_with('#') {
            let name = l.split(['{', ' ']).next().expect("a name");
            assert!(
                declared.iter().any(|d| name.starts_with(d.as_str())),
                "{name} undeclared"
            );
        }
    }
}

#[test]
fn ages_become_exact_cumulative_histograms_in_seconds() {
    let t =
        Exposition::default().render(&snapshot(vec![topic("rt/chatter", Direction::Import, 3)]));
    let h = |stage: &str, le: &str| {
        let s = format!(
            r#"roam_topic_age_seconds_bucket{{le="{le}",topic="rt/chatter",direction="import",stage="{stage}"}}"#
        );
        value(&t, &s).unwrap_or_else(|| panic!("no {s} in\n{t}"))
    };
    for stage in ["opened", "written"] {
        assert_eq!(h(stage, "0.000063"), 0.0);
        assert_eq!(h(stage, "0.000127"), 1.0);
        assert_eq!(h(stage, "0.000255"), 2.0);
        assert_eq!(h(stage, "0.000511"), 3.0);
        assert_eq!(h(stage, "+Inf"), 3.0);
    }
    let sum = r#"roam_topic_age_seconds_sum{topic="rt/chatter",direction="import",stage="opened"}"#;
    assert_eq!(value(&t, sum), Some(0.0006));
    assert!(
        t.contains("# TYPE roam_topic_age_seconds histogram\n"),
        "{t}"
    );
}

#[test]
fn topic_names_are_escaped_in_labels() {
    let t = Exposition::default().render(&snapshot(vec![topic(
        "rt/we\"ird\\name\nx",
        Direction::Export,
        5,
    )]));
    let series = r#"roam_topic_messages_total{topic="rt/we\"ird\\name\nx",direction="export"}"#;
    assert_eq!(value(&t, series), Some(5.0), "{t}");
    // The raw newline never reaches the text: every line is a comment or a sample.
    assert!(
        t.lines()
            .all(|l| l.starts_with('#') || l.starts_with("roam_")),
        "{t}"
    );
}

#[test]
fn topics_over_the_cap_are_summed_and_counted() {
    let topics = (0..5)
        .map(|i| topic(&format!("rt/t{i}"), Direction::Export, 10 + i))
        .chain([topic("rt/in", Direction::Import, 100)])
        .collect();
    let t = Exposition { max_topics: 2 }.render(&snapshot(topics));
    let v = |s: &str| value(&t, s);
    assert_eq!(
        v(r#"roam_topic_messages_total{topic="rt/t0",direction="export"}"#),
        Some(10.0)
    );
    assert_eq!(
        v(r#"roam_topic_messages_total{topic="rt/t1",direction="export"}"#),
        Some(11.0)
    );
    assert_eq!(
        v(r#"roam_topic_messages_total{topic="rt/t2",direction="export"}"#),
        None
    );
    // Exports sort before imports: t2, t3, t4 and the import overflow, one row per direction.
    assert_eq!(
        v(r#"roam_topic_messages_total{topic="__overflow__",direction="export"}"#),
        Some(12.0 + 13.0 + 14.0)
    );
    assert_eq!(
        v(r#"roam_topic_messages_total{topic="__overflow__",direction="import"}"#),
        Some(100.0)
    );
    assert_eq!(
        v(
            r#"roam_topic_age_seconds_count{topic="__overflow__",direction="export",stage="sealed"}"#
        ),
        Some(9.0)
    );
    assert_eq!(
        v(r#"roam_topic_dropped_total{topic="__overflow__",direction="export",cause="failed"}"#),
        Some(6.0)
    );
    assert_eq!(v("roam_topics_overflow"), Some(4.0));
}

#[test]
fn a_snapshot_without_router_or_topics_still_renders() {
    let t = Exposition::default().render(&Snapshot::new(Process {
        cpu_time_us: None,
        rss_bytes: None,
        udp_receive_drops: None,
        ..process()
    }));
    assert!(t.contains("roam_process_info{"), "{t}");
    assert!(!t.contains("roam_topic_messages"), "{t}");
    assert!(!t.contains("roam_process_cpu_seconds"), "{t}");
    assert!(t.ends_with("# EOF\n"));
}

#[test]
fn the_classic_format_names_counters_by_their_samples() {
    let om =
        Exposition::default().render(&snapshot(vec![topic("rt/chatter", Direction::Import, 3)]));
    let t = to_classic_text(&om);
    assert!(
        t.contains("# HELP roam_topic_messages_total Messages of a topic"),
        "{t}"
    );
    assert!(
        t.contains("# TYPE roam_topic_messages_total counter\n"),
        "{t}"
    );
    assert!(
        t.contains("# TYPE roam_topic_age_seconds histogram\n"),
        "{t}"
    );
    assert!(t.contains("# HELP roam_topic_age_seconds Age"), "{t}");
    assert!(!t.contains("# EOF"), "{t}");
    // The samples are untouched.
    let samples = |x: &str| -> Vec<String> {
        x.lines()
            .filter(|l| !l.starts_with('#'))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(samples(&t), samples(&om));
    // Every TYPE comes right after its HELP, for the same name.
    let lines: Vec<&str> = t.lines().collect();
    for (i, l) in lines.iter().enumerate() {
        if let Some(rest) = l.strip_prefix("# TYPE ") {
            let name = rest.split(' ').next().expect("a name");
            assert!(
                lines[i - 1].starts_with(&format!("# HELP {name} ")),
                "{}",
                lines[i - 1]
            );
        }
    }
}
