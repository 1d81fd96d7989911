//! The rules file (docs/rules.md) on real traffic: ROS 2-style Python cyclonedds peers in two
//! DDS domains, a proxy in each and a router between them; the rules are evaluated by the
//! exporting proxy. Filter by TOPIC and by FIELD(header.frame_id), Drop, Copy to a second
//! topic, Limit, a topic bound to its node against a spoofing participant, and SIGHUP
//! reloads (a broken file keeps the rules in force).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::*;

const T: Duration = Duration::from_secs(30);

/// One of this file's Python peers (tests/py/rules_peer.py), with the CycloneDDS of its
/// wheel (not the cyclors build cargo puts on LD_LIBRARY_PATH).
fn peer(name: &str, args: &[&str]) -> Proc {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/rules_peer.py");
    let mut a: Vec<String> = ["-u", "LD_LIBRARY_PATH", "python3", "-u"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.push(script.to_string_lossy().into_owned());
    a.extend(args.iter().map(|s| s.to_string()));
    let p = Proc::spawn_program(name, "env", &a);
    assert_eq!(
        p.line(Duration::from_secs(20)).as_deref(),
        Some("ready"),
        "{name} did not start (run scripts/setup.sh): {}",
        p.logs()
    );
    p
}

/// Lines from `p` until `n` start with `prefix` or the deadline; every line seen.
fn lines(p: &Proc, prefix: &str, n: usize, timeout: Duration) -> Vec<String> {
    let end = Instant::now() + timeout;
    let mut out = Vec::new();
    while out
        .iter()
        .filter(|l: &&String| l.starts_with(prefix))
        .count()
        < n
        && Instant::now() < end
    {
        if let Some(l) = p.line(Duration::from_millis(100)) {
            out.push(l);
        }
    }
    out
}

/// Every line `p` printed in the next `d` (what is already queued included).
fn drain(p: &Proc, d: Duration) -> Vec<String> {
    let end = Instant::now() + d;
    let mut out = Vec::new();
    while Instant::now() < end {
        if let Some(l) = p.line(Duration::from_millis(50)) {
            out.push(l);
        }
    }
    out
}

fn write_rules(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("proxy.rules");
    std::fs::write(&path, text).unwrap();
    path
}

/// geometry_msgs/PointStamped and what it needs, as a ROS install has them.
fn definitions(dir: &Path) -> PathBuf {
    let root = dir.join("defs");
    for (pkg, ty, text) in [
        (
            "geometry_msgs",
            "PointStamped",
            "std_msgs/Header header\nPoint point\n",
        ),
        (
            "geometry_msgs",
            "Point",
            "float64 x\nfloat64 y\nfloat64 z\n",
        ),
        (
            "std_msgs",
            "Header",
            "builtin_interfaces/Time stamp\nstring frame_id\n",
        ),
        ("builtin_interfaces", "Time", "int32 sec\nuint32 nanosec\n"),
        ("std_msgs", "String", "string data\n"),
    ] {
        let d = root.join(pkg).join("msg");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(format!("{ty}.msg")), text).unwrap();
    }
    root
}

fn the_dir(net: &Net, name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("roam-rules-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    let _ = net;
    d
}

fn exports(topics: &[&str]) -> String {
    let mut s = String::from("exports:\n");
    for t in topics {
        s += &format!("  - topic: {t}\n    realm: test\n");
    }
    s
}

fn imports(topics: &[&str]) -> String {
    let mut s = String::from("imports:\n");
    for t in topics {
        s += &format!("  - topic: {t}\n    realm: test\n");
    }
    s
}

/// The last `key=N` on a stderr line of `p` containing every one of `needles`.
fn last_count(p: &Proc, needles: &[&str], key: &str) -> Option<u64> {
    p.logs()
        .lines()
        .rev()
        .filter(|l| needles.iter().all(|n| l.contains(n)))
        .find_map(|l| {
            let at = l.find(&format!(" {key}="))? + key.len() + 2;
            l[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
}

fn wait_count(p: &Proc, needles: &[&str], key: &str, at_least: u64) -> bool {
    let end = Instant::now() + T;
    while Instant::now() < end {
        if last_count(p, needles, key).is_some_and(|n| n >= at_least) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    false
}

/// The source timestamp the /chatter talker of the Log test writes its message 0 with.
const STAMP: u64 = 1_700_000_000_000_000_000;

#[test]
fn filter_drop_copy_and_a_field_condition_on_real_traffic() {
    let net = Net::new("rules-filter");
    let dir = the_dir(&net, "filter");
    let defs = definitions(&dir);
    let rules = write_rules(
        &dir,
        "# /noise never leaves; /chatter leaves and is copied; /points only in the map frame\n\
         Filter: TOPIC == \"/noise\" && Drop;\n\
         Filter: TOPIC == \"/chatter\" && Copy \"/chatter_copy\";\n\
         Filter: TOPIC == \"/points\" && FIELD(header.frame_id) == \"map\";\n\
         Monitor: TOPIC == \"/chatter\" && Count && Max;\n\
         # every /chatter message, and the odom points the Filter drops, recorded\n\
         Monitor: TOPIC == \"/chatter\" && Log \"chatter.mcap\";\n\
         Monitor: TOPIC == \"/points\" && FIELD(header.frame_id) == \"odom\" && Log \"odom.mcap\";\n",
    );
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let robot = net.proxy(
        "robot",
        81,
        &addr,
        &format!(
            "rules: {}\nmsg_paths: [{}]\nstatus_interval_s: 1\n{}",
            rules.display(),
            defs.display(),
            exports(&["/chatter", "/noise", "/points"])
        ),
    );
    let base = net.proxy(
        "base",
        82,
        &addr,
        &imports(&["/chatter", "/chatter_copy", "/noise", "/points"]),
    );
    let stamp = STAMP.to_string();
    let _talker = peer(
        "talker",
        &["talk", "81", "rt/chatter", "hello", "--stamp", &stamp],
    );
    let _noise = peer("noise", &["talk", "81", "rt/noise", "noise"]);
    let _map = peer("map", &["talk", "81", "rt/points", "", "--frame", "map"]);
    let _odom = peer("odom", &["talk", "81", "rt/points", "", "--frame", "odom"]);
    let chatter = peer("chatter", &["listen", "82", "rt/chatter"]);
    let copy = peer("copy", &["listen", "82", "rt/chatter_copy"]);
    let noise = peer("noise-l", &["listen", "82", "rt/noise"]);
    let points = peer("points", &["listen", "82", "rt/points", "--point"]);

    let got = lines(&chatter, "data: hello", 20, T);
    assert!(
        got.iter().filter(|l| l.starts_with("data: hello")).count() >= 20,
        "/chatter did not cross: {got:?}\nrobot: {}\nbase: {}",
        robot.logs(),
        base.logs()
    );
    let got = lines(&copy, "data: hello", 10, T);
    assert!(
        got.iter().filter(|l| l.starts_with("data: hello")).count() >= 10,
        "no copy arrived on /chatter_copy: {got:?}\nrobot: {}",
        robot.logs()
    );
    let got = lines(&points, "point: map", 20, T);
    assert!(
        got.iter().filter(|l| l.starts_with("point: map")).count() >= 20,
        "map points did not cross: {got:?}\nrobot: {}",
        robot.logs()
    );
    assert!(
        !got.iter().any(|l| l.contains("odom")),
        "a point in the odom frame crossed: {got:?}"
    );
    // The odom points and all of /noise were read (there are subscribers) and dropped by
    // the rules: counted on their topics.
    assert!(
        wait_count(&robot, &["export", "/noise"], "ruled", 20),
        "{}",
        robot.logs()
    );
    assert!(
        wait_count(&robot, &["export", "/points"], "ruled", 20),
        "{}",
        robot.logs()
    );
    let leaked: Vec<String> = drain(&noise, Duration::from_millis(500));
    assert!(leaked.is_empty(), "/noise leaked: {leaked:?}");
    assert!(
        !drain(&points, Duration::from_millis(500))
            .iter()
            .any(|l| l.contains("odom")),
        "a point in the odom frame crossed"
    );
    // Log: stopping the proxy finishes its MCAP files, which the `mcap` package and rosbags
    // read back: consecutive talker messages with their schema, and only odom points.
    let mut robot = robot;
    assert!(robot.terminate().is_some(), "{}", robot.logs());
    let lines = read_mcap(&dir.join("chatter.mcap"));
    for prefix in ["mcap-msg /chatter ", "rosbags-msg /chatter "] {
        let n: Vec<u64> = lines
            .iter()
            .filter_map(|l| l.strip_prefix(prefix))
            .map(|j| {
                let v: serde_json::Value = serde_json::from_str(j).unwrap();
                v["data"].as_str().unwrap()["hello ".len()..]
                    .parse()
                    .unwrap()
            })
            .collect();
        assert!(
            n.len() >= 20,
            "{prefix}: {lines:?}\nrobot: {}",
            robot.logs()
        );
        assert!(n.windows(2).all(|w| w[1] == w[0] + 1), "{prefix}: {n:?}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("mcap /chatter std_msgs/msg/String ros2msg/cdr ")),
        "{lines:?}"
    );
    // Each message's publish time is the talker's source timestamp (STAMP + N for "hello N"),
    // not the time the proxy logged it: what rosbag2 writes there.
    let published = publish_times(&lines, "/chatter", "hello ");
    assert!(published.len() >= 20, "{lines:?}");
    for (n, publish) in &published {
        assert_eq!(*publish, STAMP + n, "message {n}: {lines:?}");
    }
    let lines = read_mcap(&dir.join("odom.mcap"));
    let frames: Vec<&String> = lines
        .iter()
        .filter(|l| l.starts_with("rosbags-msg /points "))
        .collect();
    assert!(!frames.is_empty(), "no odom point logged: {lines:?}");
    assert!(
        frames.iter().all(|l| l.contains("\"frame_id\": \"odom\"")),
        "{frames:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn limit_10_on_a_100_hz_topic_lets_about_10_per_second_through() {
    let net = Net::new("rules-limit");
    let dir = the_dir(&net, "limit");
    let rules = write_rules(&dir, "Filter: TOPIC == \"/fast\" && Limit 10;\n");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let robot = net.proxy(
        "robot",
        83,
        &addr,
        &format!("rules: {}\n{}", rules.display(), exports(&["/fast"])),
    );
    let _base = net.proxy("base", 84, &addr, &imports(&["/fast"]));
    let _talker = peer(
        "talker",
        &["talk", "83", "rt/fast", "f", "--period", "0.01"],
    );
    let listener = peer("listener", &["listen", "84", "rt/fast"]);
    let first = lines(&listener, "data: f", 1, T);
    assert!(
        first.iter().any(|l| l.starts_with("data: f")),
        "nothing crossed: {}",
        robot.logs()
    );
    // Past the bucket's initial burst, count what arrives in a window of a few seconds.
    drain(&listener, Duration::from_secs(2));
    let window = Duration::from_secs(4);
    let start = Instant::now();
    let got = drain(&listener, window);
    let secs = start.elapsed().as_secs_f64();
    let seqs: Vec<u64> = got
        .iter()
        .filter_map(|l| l.strip_prefix("data: f ")?.parse().ok())
        .collect();
    let rate = seqs.len() as f64 / secs;
    // The talker really sent much faster: the sequence numbers span far more than arrived.
    let sent = seqs.last().unwrap_or(&0) - seqs.first().unwrap_or(&0);
    assert!(
        sent as f64 > 3.0 * seqs.len() as f64,
        "the talker was not faster than the limit: {} arrived, sequence span {sent}",
        seqs.len()
    );
    assert!(
        (6.0..=14.0).contains(&rate),
        "{rate:.1} messages/s through Limit 10 ({} in {secs:.1} s)",
        seqs.len()
    );
    assert!(
        wait_count(&robot, &["export", "/fast"], "ruled", 10),
        "{}",
        robot.logs()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_topic_bound_to_its_node_drops_a_spoofing_participant() {
    let net = Net::new("rules-spoof");
    let dir = the_dir(&net, "spoof");
    let rules = write_rules(
        &dir,
        "Filter: TOPIC == \"/cmd_vel\" && NODE == \"/teleop\";\n",
    );
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let robot = net.proxy(
        "robot",
        85,
        &addr,
        &format!(
            "rules: {}\nstatus_interval_s: 1\n{}",
            rules.display(),
            exports(&["/cmd_vel"])
        ),
    );
    let _base = net.proxy("base", 86, &addr, &imports(&["/cmd_vel"]));
    let _teleop = peer(
        "teleop",
        &["talk", "85", "rt/cmd_vel", "genuine", "--node", "teleop"],
    );
    // Another participant on the same topic: one announcing no node, one another node.
    let _spoof = peer("spoof", &["talk", "85", "rt/cmd_vel", "spoof"]);
    let _intruder = peer(
        "intruder",
        &["talk", "85", "rt/cmd_vel", "intruder", "--node", "intruder"],
    );
    let listener = peer("listener", &["listen", "86", "rt/cmd_vel"]);
    let got = lines(&listener, "data: genuine", 30, T);
    assert!(
        got.iter()
            .filter(|l| l.starts_with("data: genuine"))
            .count()
            >= 30,
        "the genuine publisher did not pass: {got:?}\n{}",
        robot.logs()
    );
    let more = drain(&listener, Duration::from_millis(500));
    assert!(
        !got.iter()
            .chain(&more)
            .any(|l| l.contains("spoof") || l.contains("intruder")),
        "a spoofed message crossed: {got:?} {more:?}"
    );
    assert!(
        wait_count(&robot, &["rule drops"], "spoofed", 20),
        "{}",
        robot.logs()
    );
    assert!(
        wait_count(&robot, &["export", "/cmd_vel"], "ruled", 20),
        "{}",
        robot.logs()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sighup_reloads_the_rules_and_a_broken_file_keeps_the_old_ones() {
    use nix::sys::signal::{kill, Signal};
    use nix::unistd::Pid;
    let net = Net::new("rules-reload");
    let dir = the_dir(&net, "reload");
    let rules = write_rules(&dir, "Filter: TOPIC == \"/a\" && Drop;\n");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let robot = net.proxy(
        "robot",
        87,
        &addr,
        &format!("rules: {}\n{}", rules.display(), exports(&["/a", "/b"])),
    );
    let _base = net.proxy("base", 88, &addr, &imports(&["/a", "/b"]));
    let _ta = peer("ta", &["talk", "87", "rt/a", "a"]);
    let _tb = peer("tb", &["talk", "87", "rt/b", "b"]);
    let la = peer("la", &["listen", "88", "rt/a"]);
    let lb = peer("lb", &["listen", "88", "rt/b"]);
    let hup = || kill(Pid::from_raw(robot.pid() as i32), Signal::SIGHUP).unwrap();

    let got = lines(&lb, "data: b", 10, T);
    assert!(got.len() >= 10, "/b did not cross: {}", robot.logs());
    assert!(
        drain(&la, Duration::from_millis(300)).is_empty(),
        "/a crossed"
    );

    // A broken file: refused with its line and column, the old rules stay.
    std::fs::write(
        &rules,
        "Filter: TOPIC == \"/b\" && Drop;\nFilter: TOPIC = \"/a\";\n",
    )
    .unwrap();
    hup();
    assert!(robot.wait_log("rules not reloaded", T), "{}", robot.logs());
    let shown = format!("{}:2:15: expected `==`", rules.display());
    assert!(
        robot.logs().contains(&shown),
        "no {shown} in {}",
        robot.logs()
    );
    drain(&lb, Duration::from_millis(200));
    let got = lines(&lb, "data: b", 10, T);
    assert!(
        got.len() >= 10,
        "/b stopped after a broken reload: {}",
        robot.logs()
    );
    assert!(
        drain(&la, Duration::from_millis(300)).is_empty(),
        "/a crossed"
    );

    // A good file: in force at once, on the same links and the same process.
    std::fs::write(&rules, "Filter: TOPIC == \"/b\" && Drop;\n").unwrap();
    hup();
    assert!(robot.wait_log("rules reloaded", T), "{}", robot.logs());
    let got = lines(&la, "data: a", 10, T);
    assert!(
        got.iter().filter(|l| l.starts_with("data: a")).count() >= 10,
        "/a did not start crossing: {got:?}\n{}",
        robot.logs()
    );
    drain(&lb, Duration::from_millis(500));
    assert!(
        drain(&lb, Duration::from_millis(500)).is_empty(),
        "/b still crosses"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_bad_rules_file_stops_the_proxy_at_start_with_its_line_and_column() {
    let net = Net::new("rules-start");
    let dir = the_dir(&net, "start");
    let rules = write_rules(
        &dir,
        "Filter: TOPIC == \"/a\";\nMonitor: TOPIC == \"/a\" && Limit 3;\n",
    );
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let mut robot = net.proxy(
        "robot",
        89,
        &addr,
        &format!("rules: {}\n{}", rules.display(), exports(&["/a"])),
    );
    let status = robot.wait_exit(T).expect("the proxy did not stop");
    assert!(!status.success());
    let shown = format!(
        "rules: {}:2:27: Limit is not an action of the Monitor module",
        rules.display()
    );
    assert!(
        robot.logs().contains(&shown),
        "no {shown} in {}",
        robot.logs()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn import_side_rules_read_type_realm_message_and_fields_with_every_operator() {
    let net = Net::new("rules-import");
    let dir = the_dir(&net, "import");
    let defs = definitions(&dir);
    // Evaluated by the importing proxy, on what arrives from the realm.
    let rules = write_rules(
        &dir,
        "Filter: TOPIC == \"/a\" && MESSAGE CONTAINS \"keep\";\n\
         Filter: TOPIC == \"/b\" && TYPE == \"std_msgs/msg/String\" && REALM == \"test\";\n\
         Filter: TOPIC == \"/c\" && TYPE != \"std_msgs/msg/String\";\n\
         Filter: TOPIC IN [\"/d\", \"/e\"] && FIELD(data) MATCHES \"^d [0-9]*[02468]$\";\n\
         Display: TOPIC == \"/b\" && Count && Max;\n",
    );
    let topics = ["/a", "/b", "/c", "/d"];
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let robot = net.proxy(
        "robot",
        78,
        &addr,
        &format!("msg_paths: [{}]\n{}", defs.display(), exports(&topics)),
    );
    let base = net.proxy(
        "base",
        79,
        &addr,
        &format!(
            "rules: {}\nmsg_paths: [{}]\nstatus_interval_s: 1\n{}",
            rules.display(),
            defs.display(),
            imports(&topics)
        ),
    );
    let _keep = peer("keep", &["talk", "78", "rt/a", "keep"]);
    let _toss = peer("toss", &["talk", "78", "rt/a", "toss"]);
    let _b = peer("b", &["talk", "78", "rt/b", "b"]);
    let _c = peer("c", &["talk", "78", "rt/c", "c"]);
    let _d = peer("d", &["talk", "78", "rt/d", "d"]);
    let la = peer("la", &["listen", "79", "rt/a"]);
    let lb = peer("lb", &["listen", "79", "rt/b"]);
    let lc = peer("lc", &["listen", "79", "rt/c"]);
    let ld = peer("ld", &["listen", "79", "rt/d"]);

    // TYPE and REALM hold: /b passes.
    let got = lines(&lb, "data: b", 10, T);
    assert!(
        got.iter().filter(|l| l.starts_with("data: b")).count() >= 10,
        "/b did not pass: {got:?}\nbase: {}\nrobot: {}",
        base.logs(),
        robot.logs()
    );
    // MESSAGE CONTAINS: only the keep talker's messages.
    let got = lines(&la, "data: keep", 10, T);
    assert!(
        got.iter().filter(|l| l.starts_with("data: keep")).count() >= 10,
        "{got:?}"
    );
    assert!(!got.iter().any(|l| l.contains("toss")), "{got:?}");
    // IN and FIELD MATCHES: even numbers only.
    let got = lines(&ld, "data: d", 10, T);
    let n: Vec<u64> = got
        .iter()
        .filter_map(|l| l.strip_prefix("data: d "))
        .map(|n| n.trim().parse().unwrap())
        .collect();
    assert!(n.len() >= 10, "{got:?}");
    assert!(n.iter().all(|n| n % 2 == 0), "an odd one passed: {n:?}");
    // TYPE != on the right type: no rule allows /c, so nothing passes (default-deny).
    assert!(
        wait_count(&base, &["import", "/c"], "ruled", 20),
        "{}",
        base.logs()
    );
    assert!(
        drain(&lc, Duration::from_millis(300)).is_empty(),
        "/c leaked"
    );
    let more = drain(&la, Duration::from_millis(300));
    assert!(!more.iter().any(|l| l.contains("toss")), "{more:?}");
    // Display: its figures in the status lines (count=Some(N), max_bytes=Some(M)).
    assert!(
        base.wait_log("count=Some(", T)
            && base
                .logs()
                .lines()
                .any(|l| l.contains("display line=5") && l.contains("max_bytes=Some(")),
        "{}",
        base.logs()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Signed mode across the realm: two proxies in two networks both export `/cmd_vel`, each
/// signing with its own identity's key; the importing proxy binds `/cmd_vel` to the member
/// `robot` with `PEER == "robot"`, which it reads from the verified signature, not from what
/// the announcing member says. The rogue member's commands never reach the listener and are
/// counted as spoofed.
#[test]
fn in_signed_mode_peer_is_the_verified_member_and_binds_a_topic_to_it() {
    let net = Net::new("rules-signed-peer");
    let dir = the_dir(&net, "signed-peer");
    for id in ["robot", "rogue", "base"] {
        net.issue(id, "router");
        roam_ok(&[
            "realm",
            "add-member",
            id,
            "--realm",
            &net.realm,
            "--pki",
            &net.pki,
        ]);
    }
    let text = std::fs::read_to_string(&net.realm).unwrap();
    assert!(text.contains("require_signed: false"), "{text}");
    std::fs::write(
        &net.realm,
        text.replace("require_signed: false", "require_signed: true"),
    )
    .unwrap();
    let rules = write_rules(
        &dir,
        "Filter: TOPIC == \"/cmd_vel\" && PEER == \"robot\";\n",
    );
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    // No `sign:` in the files: the realm requires signatures, so the proxies sign.
    let robot = net.proxy("robot", 170, &addr, &exports(&["/cmd_vel"]));
    let rogue = net.proxy("rogue", 171, &addr, &exports(&["/cmd_vel"]));
    let base = net.proxy(
        "base",
        172,
        &addr,
        &format!(
            "rules: {}\nstatus_interval_s: 1\n{}",
            rules.display(),
            imports(&["/cmd_vel"])
        ),
    );
    for p in [&robot, &rogue] {
        assert!(p.wait_log("signing every envelope as", T), "{}", p.logs());
    }
    let _genuine = peer("genuine", &["talk", "170", "rt/cmd_vel", "genuine"]);
    let _forged = peer("forged", &["talk", "171", "rt/cmd_vel", "forged"]);
    let listener = peer("listener", &["listen", "172", "rt/cmd_vel"]);
    let got = lines(&listener, "data: genuine", 20, T);
    assert!(
        got.iter()
            .filter(|l| l.starts_with("data: genuine"))
            .count()
            >= 20,
        "the signed member's commands did not pass: {got:?}\n{}",
        base.logs()
    );
    // The rogue member's stream was announced and its envelopes open (it is a member that
    // signs): the rule, on the verified signer, is what stops them.
    assert!(
        wait_count(&base, &["rule drops"], "spoofed", 10),
        "{}",
        base.logs()
    );
    let more = drain(&listener, Duration::from_millis(500));
    assert!(
        !got.iter().chain(&more).any(|l| l.contains("forged")),
        "the rogue member's commands crossed: {got:?} {more:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Copy on the import side: the importing proxy writes what passes also to another local
/// topic, with a writer of the same type and QoS; the original topic still gets everything.
#[test]
fn an_import_side_copy_writes_each_message_to_a_second_local_topic() {
    let net = Net::new("rules-import-copy");
    let dir = the_dir(&net, "import-copy");
    let rules = write_rules(
        &dir,
        "Filter: TOPIC == \"/chatter\" && Copy \"/chatter_copy\";\n",
    );
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _robot = net.proxy("robot", 173, &addr, &exports(&["/chatter"]));
    let base = net.proxy(
        "base",
        174,
        &addr,
        &format!("rules: {}\n{}", rules.display(), imports(&["/chatter"])),
    );
    let _talker = peer("talker", &["talk", "173", "rt/chatter", "hello"]);
    let original = peer("original", &["listen", "174", "rt/chatter"]);
    let copy = peer("copy", &["listen", "174", "rt/chatter_copy"]);
    let got = lines(&copy, "data: hello", 10, T);
    assert!(
        got.iter().filter(|l| l.starts_with("data: hello")).count() >= 10,
        "the copy did not arrive: {got:?}\n{}",
        base.logs()
    );
    let got = lines(&original, "data: hello", 10, T);
    assert!(
        got.iter().filter(|l| l.starts_with("data: hello")).count() >= 10,
        "the original stopped: {got:?}\n{}",
        base.logs()
    );
    assert!(
        base.logs().contains("copying an import here"),
        "{}",
        base.logs()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
