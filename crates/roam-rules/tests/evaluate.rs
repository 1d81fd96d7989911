//! The evaluator on messages with a driven clock: default-deny/allow, Drop, Limit, Copy,
//! anti-spoofing, FIELD through the caller's decoder, and the Monitor figures.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use roam_rules::{Content, DropCause, Engine, Message, Module, NoContent, Rules};

fn engine(text: &str) -> Engine {
    Engine::new(Arc::new(Rules::parse(text).unwrap()))
}

fn msg<'a>(topic: &'a str, node: Option<&'a str>) -> Message<'a> {
    Message {
        topic,
        type_name: "std_msgs/msg/String",
        node,
        realm: "warehouse",
        peer: Some("robot-1"),
        size: 100,
    }
}

/// Fields as a decoder would give them.
struct Fields(HashMap<&'static str, &'static str>);

impl Content for Fields {
    fn field(&mut self, path: &str) -> Option<String> {
        self.0.get(path).map(|s| s.to_string())
    }
    fn message(&mut self) -> Option<String> {
        Some(format!("{:?}", self.0))
    }
}

#[test]
fn topics_with_filter_rules_are_default_deny_and_others_default_allow() {
    let mut e = engine("Filter: TOPIC == \"/map\" && NODE == \"/mapper\";");
    let now = Instant::now();
    assert!(e
        .evaluate(&msg("/chatter", None), &mut NoContent, now)
        .passes());
    assert!(e
        .evaluate(&msg("/map", Some("/mapper")), &mut NoContent, now)
        .passes());
    assert_eq!(
        e.evaluate(&msg("/map", Some("/intruder")), &mut NoContent, now)
            .drop,
        Some(DropCause::Spoofed)
    );
    // Without a node the rule cannot hold either: bound topics need a known sender.
    assert_eq!(
        e.evaluate(&msg("/map", None), &mut NoContent, now).drop,
        Some(DropCause::Spoofed)
    );
    assert_eq!(e.drops().spoofed, 2);
    assert!(e.governs("/map") && !e.governs("/chatter"));
}

#[test]
fn a_governed_topic_drops_what_no_rule_allows_as_filtered() {
    let mut e = engine("Filter: TOPIC == \"/scan\" && TYPE == \"sensor_msgs/msg/LaserScan\";");
    let d = e.evaluate(&msg("/scan", None), &mut NoContent, Instant::now());
    assert_eq!(d.drop, Some(DropCause::Filtered));
    assert_eq!(e.drops().filtered, 1);
}

#[test]
fn drop_wins_over_allow() {
    let mut e = engine("Filter: TOPIC MATCHES \"^/\";\nFilter: TOPIC == \"/secret\" && Drop;");
    let now = Instant::now();
    assert!(e
        .evaluate(&msg("/open", None), &mut NoContent, now)
        .passes());
    assert_eq!(
        e.evaluate(&msg("/secret", None), &mut NoContent, now).drop,
        Some(DropCause::Denied)
    );
}

#[test]
fn field_conditions_use_the_callers_decoder_and_unknown_fields_never_match() {
    let mut e = engine("Filter: TOPIC == \"/point\" && FIELD(header.frame_id) == \"map\";\nFilter: TOPIC == \"/other\" && FIELD(x) != \"1\";");
    let now = Instant::now();
    let mut map = Fields(HashMap::from([("header.frame_id", "map")]));
    let mut odom = Fields(HashMap::from([("header.frame_id", "odom")]));
    assert!(e.evaluate(&msg("/point", None), &mut map, now).passes());
    assert_eq!(
        e.evaluate(&msg("/point", None), &mut odom, now).drop,
        Some(DropCause::Filtered)
    );
    assert!(!e
        .evaluate(&msg("/point", None), &mut NoContent, now)
        .passes());
    // `!=` on a field that is not there does not hold either.
    assert!(!e
        .evaluate(&msg("/other", None), &mut NoContent, now)
        .passes());
}

#[test]
fn limit_passes_its_rate_from_a_faster_stream() {
    let mut e = engine("Filter: TOPIC == \"/fast\" && Limit 10;");
    let t0 = Instant::now();
    let passed = (0..500u64)
        .filter(|i| {
            let now = t0 + Duration::from_millis(10 * i);
            e.evaluate(&msg("/fast", None), &mut NoContent, now)
                .passes()
        })
        .count();
    // 5 s at 10/s plus the bucket's initial half second.
    assert!((50..=56).contains(&passed), "{passed}");
    assert_eq!(e.drops().limited, 500 - passed as u64);
}

#[test]
fn copy_is_an_effect_of_passing_messages_only() {
    let mut e = engine("Filter: TOPIC == \"/a\" && NODE == \"/n\" && Copy \"/a_copy\";");
    let now = Instant::now();
    let v = e.evaluate(&msg("/a", Some("/n")), &mut NoContent, now);
    assert_eq!(v.copies, vec!["/a_copy".to_string()]);
    let v = e.evaluate(&msg("/a", Some("/x")), &mut NoContent, now);
    assert!(v.copies.is_empty() && !v.passes());
    assert_eq!(e.copy_targets("/a"), vec!["/a_copy".to_string()]);
    assert!(e.copy_targets("/b").is_empty());
}

#[test]
fn monitors_count_every_message_of_their_topics_passed_or_dropped() {
    let mut e = engine(
        "Filter: TOPIC == \"/a\" && NODE == \"/good\";\nMonitor: TOPIC == \"/a\" && Count && Average && Max && Min && Log \"a.mcap\";\nDisplay: TOPIC == \"/a\" && NODE == \"/bad\" && Count;",
    );
    let t0 = Instant::now();
    for (i, (node, size)) in [("/good", 10), ("/bad", 30), ("/good", 20)]
        .iter()
        .enumerate()
    {
        let m = Message {
            size: *size,
            ..msg("/a", Some(node))
        };
        let v = e.evaluate(&m, &mut NoContent, t0 + Duration::from_secs(i as u64));
        assert_eq!(v.logs, vec!["a.mcap".to_string()]);
    }
    let f = e.figures(t0 + Duration::from_secs(4));
    assert_eq!(f.len(), 2);
    assert_eq!(f[0].module, Module::Monitor);
    assert_eq!(f[0].line, 2);
    assert_eq!(f[0].count, Some(3));
    assert_eq!(f[0].max_bytes, Some(30));
    assert_eq!(f[0].min_bytes, Some(10));
    assert_eq!(f[0].average_bytes_per_s, Some(60.0 / 4.0));
    assert_eq!(f[1].module, Module::Display);
    assert_eq!(f[1].count, Some(1));
    assert_eq!(f[1].max_bytes, None);
    assert_eq!(e.drops().spoofed, 1);
}

#[test]
fn realm_peer_type_and_message_operands_see_what_the_caller_said() {
    let mut e = engine(
        "Filter: REALM == \"warehouse\" && PEER IN [\"robot-1\", \"robot-2\"] && TYPE CONTAINS \"String\" && MESSAGE CONTAINS \"frame\";",
    );
    let now = Instant::now();
    let mut f = Fields(HashMap::from([("header.frame_id", "map")]));
    assert!(e.evaluate(&msg("/any", None), &mut f, now).passes());
    let other = Message {
        peer: Some("robot-3"),
        ..msg("/any", None)
    };
    assert_eq!(
        e.evaluate(&other, &mut f, now).drop,
        Some(DropCause::Spoofed)
    );
}

proptest! {
    /// Over any arrival pattern, a Limit never lets through more than its rate allows.
    #[test]
    fn limit_never_exceeds_rate_times_time_plus_burst(
        rate in 1u32..200,
        gaps in proptest::collection::vec(0u64..50, 1..400),
    ) {
        let mut e = engine(&format!("Filter: TOPIC == \"/t\" && Limit {rate};"));
        let t0 = Instant::now();
        let mut now = t0;
        let mut passed = 0u64;
        for g in gaps {
            now += Duration::from_millis(g);
            if e.evaluate(&msg("/t", None), &mut NoContent, now).passes() {
                passed += 1;
            }
        }
        let secs = now.duration_since(t0).as_secs_f64();
        let bound = (rate as f64 / 2.0).max(1.0) + rate as f64 * secs;
        prop_assert!(passed as f64 <= bound + 1e-6, "{passed} > {bound}");
    }

    /// A topic without Filter rules always passes, whatever its sender.
    #[test]
    fn ungoverned_topics_always_pass(topic in "/[a-z]{1,10}", node in proptest::option::of("/[a-z]{1,5}")) {
        prop_assume!(topic != "/map");
        let mut e = engine("Filter: TOPIC == \"/map\" && NODE == \"/m\";");
        prop_assert!(e.evaluate(&msg(&topic, node.as_deref()), &mut NoContent, Instant::now()).passes());
    }
}
