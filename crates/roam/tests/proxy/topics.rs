//! The ROS 2 proxy end to end: real DDS peers (Python cyclonedds, on the wire the same as ROS 2
//! nodes on rmw_cyclonedds) in two separate DDS domains, proxies and a router between them.

use std::time::{Duration, Instant};

use crate::common::*;

#[test]
fn a_talker_in_one_ros_network_reaches_a_listener_in_another_and_private_topics_stay_home() {
    let net = Net::new("proxy-chatter");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let robot = net.proxy(
        "robot",
        21,
        &addr,
        "exports:\n  - topic: /chatter\n    realm: test\n",
    );
    let base = net.proxy("base", 22, &addr, "imports:\n  - topic: /chatter\n    realm: test\n  - topic: /private_map\n    realm: test\n");
    let _talker = python("talker", "talker.py", &["21", "rt/chatter", "hello"]);
    let _secret = python("secret", "talker.py", &["21", "rt/private_map", "secret"]);
    let listener = python("listener", "listener.py", &["22", "rt/chatter"]);
    let spy = python("spy", "listener.py", &["22", "rt/private_map"]);
    let first = wait_line(&listener, "data: hello", Duration::from_secs(30));
    assert!(
        first.is_some(),
        "nothing crossed.\nrobot: {}\nbase: {}",
        robot.logs(),
        base.logs()
    );
    // It keeps flowing, in order.
    let mut last = -1i64;
    for _ in 0..20 {
        let l = wait_line(&listener, "data: hello", Duration::from_secs(5)).expect("flow stopped");
        let n: i64 = l.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(n > last, "out of order: {n} after {last}");
        last = n;
    }
    // The private topic was never exported, so nothing of it reaches the other network:
    // no data, and no publication of it in network B's DDS discovery, while the exported
    // topic's publication (the importing proxy's writer) is there.
    assert!(
        wait_line(&spy, "data:", Duration::from_secs(1)).is_none(),
        "a private topic leaked"
    );
    let publications = publications_in(22, Duration::from_secs(2));
    assert!(
        publications.iter().any(|t| t == "rt/chatter"),
        "discovery in network B misses the imported topic: {publications:?}"
    );
    assert!(
        !publications.iter().any(|t| t.contains("private_map")),
        "network B's discovery shows the private topic: {publications:?}"
    );
    assert!(
        !robot.logs().contains("/private_map"),
        "the robot's proxy touched a private topic: {}",
        robot.logs()
    );
}

#[test]
fn a_late_listener_gets_the_last_sample_of_a_transient_local_topic() {
    // Like /tf_static: published once, at start, with transient-local durability.
    let net = Net::new("proxy-latched");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _talker = python(
        "talker",
        "talker.py",
        &[
            "25",
            "rt/tf_static",
            "static",
            "--transient-local",
            "--depth",
            "1",
            "--period",
            "3600",
        ],
    );
    let robot = net.proxy(
        "robot",
        25,
        &addr,
        "exports:\n  - topic: /tf_static\n    realm: test\n",
    );
    let base = net.proxy(
        "base",
        26,
        &addr,
        "imports:\n  - topic: /tf_static\n    realm: test\n",
    );
    // The importing proxy learns the topic and receives the one sample before anyone listens.
    assert!(
        base.wait_log("remote topic announced", Duration::from_secs(30)),
        "{}\n{}",
        robot.logs(),
        base.logs()
    );
    assert!(
        robot.wait_log("a remote subscriber appeared", Duration::from_secs(10)),
        "{}",
        robot.logs()
    );
    std::thread::sleep(Duration::from_secs(1));
    // A listener that starts now, long after the only publication, still gets it.
    let late = python(
        "late",
        "listener.py",
        &["26", "rt/tf_static", "--transient-local"],
    );
    assert_eq!(
        wait_line(&late, "data:", Duration::from_secs(10)).as_deref(),
        Some("data: static 0"),
        "base: {}",
        base.logs()
    );
}

#[test]
fn a_service_call_crosses_networks_and_each_of_two_clients_gets_its_own_replies() {
    let net = Net::new("proxy-service");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _server = python("server", "service.py", &["server", "27", "add_two_ints"]);
    let robot = net.proxy(
        "robot",
        27,
        &addr,
        "exports:\n  - service: /add_two_ints\n    realm: test\n",
    );
    let base = net.proxy(
        "base",
        28,
        &addr,
        "imports:\n  - service: /add_two_ints\n    realm: test\n",
    );
    let c1 = python(
        "client-1",
        "service.py",
        &["client", "28", "add_two_ints", "1000", "5"],
    );
    let c2 = python(
        "client-2",
        "service.py",
        &["client", "28", "add_two_ints", "2000", "5"],
    );
    for (c, guid) in [(&c1, 1000), (&c2, 2000)] {
        let mut replies = Vec::new();
        loop {
            let l = wait_line(c, "", Duration::from_secs(30)).unwrap_or_else(|| {
                panic!("no reply.\nrobot: {}\nbase: {}", robot.logs(), base.logs())
            });
            if l == "done" {
                break;
            }
            replies.push(l);
        }
        // Every answer is to this client's own request: sum = its guid + the sequence.
        let expected: Vec<String> = (1..=5)
            .map(|seq| format!("reply {seq} {}", guid + seq))
            .collect();
        assert_eq!(replies, expected);
    }
}

#[test]
fn a_20_mb_message_crosses_the_proxies_intact() {
    let net = Net::new("proxy-big");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _robot = net.proxy(
        "robot",
        29,
        &addr,
        "exports:\n  - topic: /map\n    realm: test\n",
    );
    let base = net.proxy(
        "base",
        30,
        &addr,
        "imports:\n  - topic: /map\n    realm: test\n",
    );
    let pad = 20 << 20;
    let _talker = python(
        "talker",
        "talker.py",
        &[
            "29",
            "rt/map",
            "map",
            "--pad",
            &pad.to_string(),
            "--period",
            "1",
        ],
    );
    let listener = python("listener", "listener.py", &["30", "rt/map", "--summary"]);
    let line = wait_line(&listener, "len:", Duration::from_secs(60))
        .unwrap_or_else(|| panic!("nothing arrived: {}", base.logs()));
    // The text is "map N" plus the padding; check length and content hash of one such message.
    let (len, hash) = line
        .strip_prefix("len: ")
        .and_then(|r| r.split_once(" sha256: "))
        .expect("summary line");
    let n: usize = len.parse().unwrap();
    let candidates: Vec<String> = (0..100)
        .map(|i| format!("map {i}{}", "x".repeat(pad)))
        .filter(|t| t.len() == n)
        .map(|t| roam::payload::sha256_hex(t.as_bytes()))
        .collect();
    assert!(
        candidates.iter().any(|c| c == hash),
        "a 20 MB message arrived altered (len {n})"
    );
}

#[test]
fn a_restarted_proxy_resumes_delivery_to_a_listener_that_never_restarted() {
    let net = Net::new("proxy-restart");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _robot = net.proxy(
        "robot",
        31,
        &addr,
        "exports:\n  - topic: /odom\n    realm: test\n",
    );
    let body = "imports:\n  - topic: /odom\n    realm: test\n";
    let mut base = net.proxy("base", 32, &addr, body);
    let _talker = python(
        "talker",
        "talker.py",
        &["31", "rt/odom", "odom", "--period", "0.02"],
    );
    let listener = python("listener", "listener.py", &["32", "rt/odom"]);
    assert!(
        wait_line(&listener, "data: odom", Duration::from_secs(30)).is_some(),
        "{}",
        base.logs()
    );
    base.kill();
    std::thread::sleep(Duration::from_secs(1));
    while listener.line(Duration::from_millis(50)).is_some() {}
    let base2 = net.proxy("base", 32, &addr, body);
    assert!(
        wait_line(&listener, "data: odom", Duration::from_secs(30)).is_some(),
        "no delivery after the proxy restarted: {}",
        base2.logs()
    );
}

#[test]
fn the_proxy_announces_itself_in_ros_discovery_info_like_a_ros_2_node() {
    let net = Net::new("proxy-node");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _robot = net.proxy(
        "robot",
        33,
        &addr,
        "exports:\n  - topic: /chatter\n    realm: test\n",
    );
    let base = net.proxy(
        "base",
        34,
        &addr,
        "imports:\n  - topic: /chatter\n    realm: test\n",
    );
    let _talker = python("talker", "talker.py", &["33", "rt/chatter", "hello"]);
    let tools = python("ros2-tools", "discovery_info.py", &["34"]);
    // Once the import is live, the node owns one writer (rt/chatter) and ROS 2 tools see it.
    let end = Instant::now() + Duration::from_secs(30);
    let mut seen = Vec::new();
    while Instant::now() < end {
        if let Some(l) = tools.line(Duration::from_millis(100)) {
            if l == "node / roam_proxy_base readers 0 writers 1" {
                return;
            }
            seen.push(l);
        }
    }
    panic!(
        "no announcement of the import writer; saw {seen:?}\nbase: {}",
        base.logs()
    );
}

#[test]
fn two_proxies_on_one_domain_do_not_loop_an_imported_topic() {
    let net = Net::new("proxy-twins");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _robot = net.proxy(
        "robot",
        36,
        &addr,
        "exports:\n  - topic: /chatter\n    realm: test\n",
    );
    // Two proxies on domain 35: one imports /chatter, the other exports every local topic.
    let base = net.proxy(
        "base",
        35,
        &addr,
        "imports:\n  - topic: /chatter\n    realm: test\n",
    );
    let greedy = net.proxy(
        "greedy",
        35,
        &addr,
        "exports:\n  - allow: ['.*']\n    realm: test\n",
    );
    let _talker = python(
        "talker",
        "talker.py",
        &["36", "rt/chatter", "hello", "--period", "0.05"],
    );
    let listener = python("listener", "listener.py", &["35", "rt/chatter"]);
    assert!(
        wait_line(&listener, "data: hello", Duration::from_secs(30)).is_some(),
        "{}",
        base.logs()
    );
    // For a few seconds every message arrives once: nothing echoes through the second proxy.
    let mut last = -1i64;
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        if let Some(l) = wait_line(&listener, "data: hello", Duration::from_millis(500)) {
            let n: i64 = l.rsplit(' ').next().unwrap().parse().unwrap();
            assert!(n > last, "message {n} arrived again after {last}: a loop");
            last = n;
        }
    }
    assert!(
        !greedy.logs().contains("exporting"),
        "the second proxy re-exported an import: {}",
        greedy.logs()
    );
}

#[test]
fn a_restarted_router_between_proxies_resumes_delivery() {
    let net = Net::new("proxy-router-restart");
    let (mut cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _robot = net.proxy(
        "robot",
        37,
        &addr,
        "exports:\n  - topic: /odom\n    realm: test\n",
    );
    let base = net.proxy(
        "base",
        38,
        &addr,
        "imports:\n  - topic: /odom\n    realm: test\n",
    );
    let _talker = python(
        "talker",
        "talker.py",
        &["37", "rt/odom", "odom", "--period", "0.02"],
    );
    let listener = python("listener", "listener.py", &["38", "rt/odom"]);
    assert!(
        wait_line(&listener, "data: odom", Duration::from_secs(30)).is_some(),
        "{}",
        base.logs()
    );
    cloud.kill();
    std::thread::sleep(Duration::from_secs(1));
    while listener.line(Duration::from_millis(50)).is_some() {}
    let (_cloud2, _) = net.router("cloud", &addr, &[]);
    assert!(
        wait_line(&listener, "data: odom", Duration::from_secs(30)).is_some(),
        "no delivery after the router restarted: {}",
        base.logs()
    );
}

#[test]
fn a_laserscan_of_100000_ranges_and_a_custom_nested_type_cross_intact() {
    let net = Net::new("proxy-types");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    // No type support anywhere in roam: the proxies only see type names and raw CDR.
    let exports =
        "exports:\n  - topic: /scan\n    realm: test\n  - topic: /fleet\n    realm: test\n";
    let imports =
        "imports:\n  - topic: /scan\n    realm: test\n  - topic: /fleet\n    realm: test\n";
    let _robot = net.proxy("robot", 39, &addr, exports);
    let base = net.proxy("base", 40, &addr, imports);
    for kind in ["laserscan", "fleet"] {
        let talker = python(&format!("{kind}-talker"), "typed.py", &["talk", kind, "39"]);
        let sent = wait_line(&talker, "summary", Duration::from_secs(10)).expect("talker summary");
        let listener = python(
            &format!("{kind}-listener"),
            "typed.py",
            &["listen", kind, "40"],
        );
        let got = wait_line(&listener, "summary", Duration::from_secs(30))
            .unwrap_or_else(|| panic!("no {kind} arrived: {}", base.logs()));
        assert_eq!(got, sent, "{kind} changed on the way");
    }
}

#[test]
fn the_demo_shows_a_topic_crossing_between_two_ros_2_networks_and_a_private_one_staying() {
    let dir = std::env::temp_dir().join(format!("roam-e2e-demo-{}", std::process::id()));
    let out = std::process::Command::new(ROAM)
        .args([
            "demo",
            "--duration",
            "8",
            "--port",
            "17461",
            "--dir",
            &dir.to_string_lossy(),
        ])
        .env("CYCLONEDDS_URI", "")
        .output()
        .expect("run the demo");
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "demo failed: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("[listener@B] data: hello from network A"),
        "{text}"
    );
    assert!(text.contains("/private_map: 0 messages crossed"), "{text}");
}

#[test]
fn ddsperf_keyed_traffic_crosses_the_proxies() {
    // ddsperf (Debian cyclonedds-tools, CycloneDDS 0.10) is an independent load generator; its
    // data topic is keyed (KeyedSeq) and not a ROS 2 topic, so it is exported by DDS name.
    let net = Net::new("proxy-ddsperf");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _robot = net.proxy(
        "robot",
        43,
        &addr,
        "exports:\n  - dds_topic: DDSPerfRDataKS\n    realm: test\n",
    );
    let base = net.proxy(
        "base",
        44,
        &addr,
        "imports:\n  - dds_topic: DDSPerfRDataKS\n    realm: test\n",
    );
    let mut sub = Proc::spawn_system(
        "ddsperf-sub",
        "ddsperf",
        &["-i", "44", "-D", "12", "-1", "sub"],
    );
    let _publisher = Proc::spawn_system(
        "ddsperf-pub",
        "ddsperf",
        &["-i", "43", "-D", "20", "pub", "200Hz", "size", "100"],
    );
    assert!(
        sub.wait_exit(Duration::from_secs(40)).is_some(),
        "ddsperf sub did not finish"
    );
    // Its per-second lines: "... size 100 total N lost L delta ...": the last one counts all.
    let mut last = None;
    while let Some(l) = sub.line(Duration::from_millis(10)) {
        let field = |key: &str| {
            let mut it = l.split_whitespace().skip_while(|w| *w != key).skip(1);
            it.next().and_then(|v| v.parse::<u64>().ok())
        };
        if let (Some(total), Some(lost)) = (field("total"), field("lost")) {
            last = Some((total, lost, l.clone()));
        }
    }
    let (total, lost, line) =
        last.unwrap_or_else(|| panic!("ddsperf sub received nothing: {}", base.logs()));
    assert!(total >= 300, "only {total} samples crossed: {line}");
    assert_eq!(lost, 0, "ddsperf saw sequence gaps: {line}");
}

#[test]
fn a_clear_text_export_still_crosses_and_says_so() {
    // encrypt_payloads: false (the lab's "clear text" system): payloads authenticated only.
    let net = Net::new("proxy-clear");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let robot = net.proxy(
        "robot",
        49,
        &addr,
        "encrypt_payloads: false\nexports:\n  - topic: /chatter\n    realm: test\n",
    );
    let _base = net.proxy(
        "base",
        50,
        &addr,
        "imports:\n  - topic: /chatter\n    realm: test\n",
    );
    let _talker = python("talker", "talker.py", &["49", "rt/chatter", "plain"]);
    let listener = python("listener", "listener.py", &["50", "rt/chatter"]);
    assert!(
        wait_line(&listener, "data: plain", Duration::from_secs(30)).is_some(),
        "nothing crossed: {}",
        robot.logs()
    );
    assert!(
        robot.wait_log("clear text", Duration::from_secs(1)),
        "{}",
        robot.logs()
    );
}

/// The topic names of every publication a DDS participant of our own sees in `domain` within
/// `settle` (DDS discovery, as `ros2 topic list` would use it).
fn publications_in(domain: u32, settle: Duration) -> Vec<String> {
    let xml = format!(
        "<CycloneDDS><Domain>{}</Domain></CycloneDDS>",
        roam_dds::loopback_config()
    );
    let participant = roam_dds::Participant::new(domain, Some(&xml)).expect("DDS participant");
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = seen.clone();
    let discovery = roam_dds::Discovery::new(&participant, move |ev| {
        if let roam_dds::DiscoveryEvent::Publication(ep) = ev {
            if ep.alive {
                sink.lock().unwrap().push(ep.topic_name);
            }
        }
    })
    .expect("DDS discovery");
    std::thread::sleep(settle);
    drop(discovery);
    let mut topics = seen.lock().unwrap().clone();
    topics.sort();
    topics.dedup();
    topics
}

/// A fleet: two robots run the same proxy file but for `namespace:`; the base tells them
/// apart in the realm (`/robot1/chatter`, `/robot2/chatter`) and commands one of them, whose
/// proxy imports the realm's `/robot1/cmd_vel` as its local `/cmd_vel`.
#[test]
fn a_namespace_lets_identical_robots_share_a_realm() {
    let net = Net::new("proxy-namespace");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let robot_file = |ns: &str| {
        format!(
            "namespace: {ns}\nexports:\n  - topic: /chatter\n    realm: test\nimports:\n  - topic: /cmd_vel\n    realm: test\n"
        )
    };
    let robot1 = net.proxy("robot1", 175, &addr, &robot_file("/robot1"));
    let _robot2 = net.proxy("robot2", 176, &addr, &robot_file("/robot2"));
    let base = net.proxy(
        "base",
        177,
        &addr,
        "imports:\n  - topic: /robot1/chatter\n    realm: test\n    as: /r1/chatter\n  - topic: /robot2/chatter\n    realm: test\n    as: /r2/chatter\nexports:\n  - topic: /robot1/cmd_vel\n    realm: test\n",
    );
    let _one = python("one", "talker.py", &["175", "rt/chatter", "one"]);
    let _two = python("two", "talker.py", &["176", "rt/chatter", "two"]);
    let _drive = python("drive", "talker.py", &["177", "rt/robot1/cmd_vel", "drive"]);
    let r1 = python("r1", "listener.py", &["177", "rt/r1/chatter"]);
    let r2 = python("r2", "listener.py", &["177", "rt/r2/chatter"]);
    let cmd = python("cmd", "listener.py", &["175", "rt/cmd_vel"]);
    let not_me = python("not-me", "listener.py", &["176", "rt/cmd_vel"]);
    let why = || format!("robot1: {}\nbase: {}", robot1.logs(), base.logs());
    for (listener, want, other) in [(&r1, "data: one", "two"), (&r2, "data: two", "one")] {
        for _ in 0..10 {
            let l = wait_line(listener, "data:", Duration::from_secs(30))
                .unwrap_or_else(|| panic!("nothing from {want}.\n{}", why()));
            assert!(l.starts_with(want) && !l.contains(other), "{l}\n{}", why());
        }
    }
    assert!(
        wait_line(&cmd, "data: drive", Duration::from_secs(30)).is_some(),
        "the command did not reach robot1's /cmd_vel.\n{}",
        why()
    );
    assert!(
        wait_line(&not_me, "data:", Duration::from_secs(1)).is_none(),
        "robot2 got robot1's command"
    );
}

#[test]
fn a_sample_keeps_its_publishers_source_timestamp_across_the_proxies() {
    // Within one DDS domain a reader sees the timestamp the writer gave each sample (rosbag2
    // records it; ddsperf reads its lowest bit as a request for a reply). Through roam it
    // must be the same, not the importing proxy's clock: here an hour old and odd.
    let net = Net::new("proxy-stamps");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let robot = net.proxy(
        "robot",
        55,
        &addr,
        "exports:\n  - topic: /stamped\n    realm: test\n",
    );
    let _base = net.proxy(
        "base",
        56,
        &addr,
        "imports:\n  - topic: /stamped\n    realm: test\n",
    );
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let base_stamp = (now_ns - 3_600_000_000_000) | 1;
    let stamp_arg = base_stamp.to_string();
    let _talker = python(
        "talker",
        "talker.py",
        &["55", "rt/stamped", "tick", "--stamp", &stamp_arg],
    );
    let listener = python("listener", "listener.py", &["56", "rt/stamped", "--stamps"]);
    let mut seen = 0;
    while seen < 5 {
        let Some(l) = wait_line(&listener, "data: tick", Duration::from_secs(30)) else {
            panic!("nothing crossed: {}", robot.logs());
        };
        // "data: tick N stamp: NS"
        let words: Vec<&str> = l.split_whitespace().collect();
        let n: u64 = words[2].parse().unwrap();
        let stamp: u64 = words[4].parse().unwrap();
        assert_eq!(
            stamp,
            base_stamp + n,
            "message {n} lost its source timestamp: {l}"
        );
        seen += 1;
    }
}
