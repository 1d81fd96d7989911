//! The command line as a user meets it, with real `roam` processes on loopback: signals,
//! message limits, names, connection messages, configuration mistakes, key files, and the
//! demo's children.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

fn roam_fails(args: &[&str]) -> String {
    let out = Command::new(ROAM).args(args).output().expect("run roam");
    assert!(!out.status.success(), "roam {args:?} should have failed");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Waits until `f` holds, or panics with `what` after `timeout`.
fn wait_until(timeout: Duration, what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if f() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("timed out waiting for {what}");
}

fn kill(pid: u32, signal: &str) {
    let ok = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success(), "kill {signal} {pid}");
}

fn alive(pid: u32) -> bool {
    // A zombie is gone for our purpose: it holds no socket and runs nothing.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

fn children(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(c) = std::fs::read_to_string(t.path().join("children")) {
                out.extend(c.split_whitespace().filter_map(|p| p.parse::<u32>().ok()));
            }
        }
    }
    out
}

/// A UDP port nobody listens on right now.
fn free_udp_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A TCP port nobody listens on right now.
fn free_tcp_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn sent_count(stderr: &str) -> u64 {
    let line = stderr
        .lines()
        .find(|l| l.starts_with("sent "))
        .unwrap_or_else(|| panic!("no summary in: {stderr}"));
    line.split(' ').nth(1).unwrap().parse().unwrap()
}

#[test]
fn pub_started_in_the_background_stops_on_sigint_with_its_summary() {
    let net = Net::new("cli-sigint");
    let (_r, addr) = net.router("r1", "127.0.0.1:0", &[]);
    let sub = net.sub("/bg", "cloud", &addr, &[]);
    wait_subscribed(&sub);
    net.issue("robot", "client");
    let err_file = net.dir.join("pub.err");
    // bash sets SIGINT to "ignore" for a background job of a script; `wait` reports how
    // the job ended.
    let script = format!(
        "{ROAM} pub /bg --type test_msgs/msg/Blob --realm {} --pki {} --id robot --connect {addr} --size 32 --rate 50 2> {} & echo $!; wait $!; echo exit=$?",
        net.realm,
        net.pki,
        err_file.display()
    );
    let shell = Proc::spawn_program("bash", "bash", &["-c".to_string(), script]);
    let pid: u32 = shell
        .line(Duration::from_secs(10))
        .expect("pid")
        .trim()
        .parse()
        .unwrap();
    let got = collect(&sub, 5, Duration::from_secs(15));
    assert_eq!(got.len(), 5, "no messages: {}", sub.logs());
    kill(pid, "-INT");
    let end = shell.line(Duration::from_secs(15));
    assert_eq!(
        end.as_deref(),
        Some("exit=0"),
        "{}",
        std::fs::read_to_string(&err_file).unwrap_or_default()
    );
    let stderr = std::fs::read_to_string(&err_file).unwrap();
    assert!(stderr.contains("SIGINT: stopping"), "{stderr}");
    let sent = sent_count(&stderr);
    // Nothing the publisher counted as sent is lost.
    let rest = collect(&sub, sent as usize - 5, Duration::from_secs(10));
    assert_eq!(5 + rest.len() as u64, sent, "{stderr}");
}

#[test]
fn pub_stops_on_sigterm_and_sighup_with_its_summary_and_status_0() {
    let net = Net::new("cli-sigterm");
    let (_r, addr) = net.router("r1", "127.0.0.1:0", &[]);
    for signal in ["-TERM", "-HUP"] {
        let sub = net.sub("/fg", "cloud", &addr, &[]);
        wait_subscribed(&sub);
        let mut p = net.publisher("/fg", "robot", &addr, &["--size", "32", "--rate", "50"]);
        assert_eq!(collect(&sub, 3, Duration::from_secs(15)).len(), 3);
        kill(p.pid(), signal);
        let status = p.wait_exit(Duration::from_secs(15)).expect("pub exits");
        assert!(status.success(), "{signal}: {status:?}: {}", p.logs());
        assert!(p.wait_log("sent ", Duration::from_secs(1)), "{}", p.logs());
    }
}

#[test]
fn a_message_over_the_limit_is_refused_before_it_is_sent() {
    let net = Net::new("cli-oversize");
    let (router, addr) = net.router("r1", "127.0.0.1:0", &[]);
    net.issue("robot", "client");
    // Generated payloads: refused before connecting.
    let stderr = roam_fails(&[
        "pub",
        "/big",
        "--type",
        "test_msgs/msg/Blob",
        "--realm",
        &net.realm,
        "--pki",
        &net.pki,
        "--id",
        "robot",
        "--connect",
        &addr,
        "--size",
        "140000000",
        "--no-wait",
    ]);
    assert!(
        stderr.contains("a message of 140000000 bytes")
            && stderr.contains("over the link's limit of 134217719 bytes")
            && stderr.contains("--max-message-bytes"),
        "{stderr}"
    );
    // Lines from stdin: the first fits, the second does not; the first still arrives.
    let sub = net.sub("/big", "cloud", &addr, &["--max-message-bytes", "1024"]);
    wait_subscribed(&sub);
    let mut p = net.publisher_stdin("/big", "robot", &addr, &["--max-message-bytes", "1024"]);
    {
        use std::io::Write;
        let mut stdin = p.stdin().unwrap();
        writeln!(stdin, "small").unwrap();
        writeln!(stdin, "{}", "x".repeat(2000)).unwrap();
    }
    let status = p.wait_exit(Duration::from_secs(15)).expect("pub exits");
    assert!(!status.success(), "{}", p.logs());
    let logs = p.logs();
    assert!(
        logs.contains("message 2: a message of 2000 bytes") && logs.contains("sent 1 messages"),
        "{logs}"
    );
    let got = collect(&sub, 1, Duration::from_secs(10));
    assert_eq!(got.len(), 1);
    assert!(got[0].body.contains("small"), "{got:?}");
    // The router never saw a frame it had to refuse.
    assert!(!router.logs().contains("bad frame"), "{}", router.logs());
}

#[test]
fn names_and_types_are_normalised_the_same_way_everywhere() {
    let net = Net::new("cli-names");
    let name = |topic: &str, ty: &str| {
        roam_ok(&["name", "--realm", &net.realm, topic, ty])
            .trim()
            .to_string()
    };
    let full = name("/chatter", "std_msgs/msg/String");
    assert_eq!(name("chatter", "std_msgs/String"), full);
    assert_eq!(name("chatter", "std_msgs::msg::dds_::String_"), full);
    let e = roam_fails(&["name", "--realm", &net.realm, "/chatter", "not-a-type"]);
    assert!(
        e.contains("\"not-a-type\" is not a ROS 2 type") && e.contains("std_msgs/msg/String"),
        "{e}"
    );
    let e = roam_fails(&["name", "--realm", &net.realm, "/7up", "std_msgs/msg/String"]);
    assert!(e.contains("must not start with a digit"), "{e}");
    // A subscriber that spells the topic the short way hears a publisher that spells it
    // the full way.
    let (_r, addr) = net.router("r1", "127.0.0.1:0", &[]);
    net.issue("cloud", "client");
    let sub = Proc::spawn(
        "sub-short",
        &[
            "sub",
            "chatter",
            "--type",
            "std_msgs/String",
            "--realm",
            net.realm.as_str(),
            "--pki",
            net.pki.as_str(),
            "--id",
            "cloud",
            "--connect",
            addr.as_str(),
        ]
        .map(String::from),
        None,
    );
    wait_subscribed(&sub);
    assert!(sub.wait_log(
        "note: topic \"chatter\" is /chatter",
        Duration::from_secs(1)
    ));
    net.issue("robot", "client");
    let mut p = Proc::spawn(
        "pub-full",
        &[
            "pub",
            "/chatter",
            "--type",
            "std_msgs/msg/String",
            "--realm",
            net.realm.as_str(),
            "--pki",
            net.pki.as_str(),
            "--id",
            "robot",
            "--connect",
            addr.as_str(),
            "--size",
            "8",
            "--count",
            "3",
        ]
        .map(String::from),
        None,
    );
    assert_eq!(collect(&sub, 3, Duration::from_secs(15)).len(), 3);
    assert!(p.wait_exit(Duration::from_secs(10)).unwrap().success());
}

#[test]
fn connecting_says_what_it_does_and_why_it_fails() {
    let net = Net::new("cli-connect");
    net.issue("cloud", "client");
    let base = |connect: &str| -> Vec<String> {
        [
            "sub",
            "/x",
            "--type",
            "std_msgs/msg/String",
            "--realm",
            net.realm.as_str(),
            "--pki",
            net.pki.as_str(),
            "--id",
            "cloud",
            "--connect",
            connect,
        ]
        .map(String::from)
        .to_vec()
    };
    let out = Command::new(ROAM).args(base("127.0.0.1")).output().unwrap();
    assert!(!out.status.success());
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("--connect: missing port in \"127.0.0.1\" (e.g. 127.0.0.1:7447)"),
        "{e}"
    );
    // Refused at once over TCP.
    let tcp = format!("tcp://127.0.0.1:{}", free_tcp_port());
    let sub = Proc::spawn("sub-tcp", &base(&tcp), None);
    assert!(
        sub.wait_log(
            &format!("connecting to router {tcp} ..."),
            Duration::from_secs(5)
        ),
        "{}",
        sub.logs()
    );
    assert!(
        sub.wait_log(
            "connection refused: nothing listens",
            Duration::from_secs(10)
        ),
        "{}",
        sub.logs()
    );
    // No answer over QUIC: said at once that it connects, then why it failed.
    let quic = format!("quic://127.0.0.1:{}", free_udp_port());
    let sub = Proc::spawn("sub-quic", &base(&quic), None);
    assert!(
        sub.wait_log(
            &format!("connecting to router {quic} ..."),
            Duration::from_secs(5)
        ),
        "{}",
        sub.logs()
    );
    assert!(
        sub.wait_log("no answer within", Duration::from_secs(30)),
        "{}",
        sub.logs()
    );
}

#[test]
fn configuration_mistakes_name_file_line_and_field() {
    let net = Net::new("cli-config");
    net.issue("p1", "router");
    let proxy = |name: &str, body: &str| -> String {
        let path = net.dir.join(name);
        std::fs::write(
            &path,
            format!(
                "id: p1\npki: {}\nrealms: {{test: {}}}\n{body}",
                net.pki, net.realm
            ),
        )
        .unwrap();
        roam_fails(&["proxy", "-c", &path.to_string_lossy()])
    };
    let e = proxy(
        "merged.yaml",
        "exports:\n  - topic: /a\n    realm: test\n    as: /same\n  - topic: /b\n    realm: test\n    as: /same\n",
    );
    assert!(
        e.contains("merged.yaml: line 10: exports[1].as: \"/same\" is already the realm name of exports[0] (/a)"),
        "{e}"
    );
    let e = proxy(
        "domain.yaml",
        "dds: {domain: 300}\nimports:\n  - {topic: /a, realm: test}\n",
    );
    assert!(
        e.contains(
            "domain.yaml: line 4: dds.domain: 300 is out of range: DDS domains are 0 to 232"
        ),
        "{e}"
    );
    let e = proxy(
        "iface.yaml",
        "dds: {interfaces: [roam-no-such0]}\nimports:\n  - {topic: /a, realm: test}\n",
    );
    assert!(
        e.contains("iface.yaml: line 4: dds.interfaces[0]: no network interface \"roam-no-such0\""),
        "{e}"
    );
    let router_file = net.dir.join("router.yaml");
    std::fs::write(
        &router_file,
        "id: r9\npki: /nonexistent/roam-pki\nlisten: 127.0.0.1:0\n",
    )
    .unwrap();
    let e = roam_fails(&["router", "-c", &router_file.to_string_lossy()]);
    assert!(
        e.contains("router.yaml: line 2: pki: PKI directory /nonexistent/roam-pki does not exist")
            && e.contains("roam pki init --dir"),
        "{e}"
    );
    std::fs::write(
        &router_file,
        format!("id: r9\npki: {}\nlink:\n  max_message_bytes: 0\n", net.pki),
    )
    .unwrap();
    let e = roam_fails(&["router", "-c", &router_file.to_string_lossy()]);
    assert!(
        e.contains("router.yaml: line 4: link.max_message_bytes: 0 cannot carry a message"),
        "{e}"
    );
}

#[test]
fn key_files_are_read_by_openssl_and_by_roam() {
    let net = Net::new("cli-keys");
    net.issue("r1", "router");
    net.issue("cloud", "client");
    for key in ["ca.key", "r1.key", "cloud.key"] {
        let out = Command::new("openssl")
            .args(["pkey", "-noout", "-text", "-in"])
            .arg(Path::new(&net.pki).join(key))
            .stderr(Stdio::piped())
            .output()
            .expect("openssl (Debian package openssl)");
        assert!(
            out.status.success(),
            "openssl pkey {key}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The same files carry TLS links and sign envelopes.
    net.issue("robot", "client");
    let realm_member = roam_ok(&[
        "realm",
        "add-member",
        "robot",
        "--realm",
        &net.realm,
        "--pki",
        &net.pki,
    ]);
    assert!(realm_member.contains("may now sign"), "{realm_member}");
    let (_r, addr) = net.router("r1", "127.0.0.1:0", &[]);
    let sub = net.sub("/k", "cloud", &addr, &[]);
    wait_subscribed(&sub);
    let _p = net.publisher(
        "/k",
        "robot",
        &addr,
        &["--size", "8", "--count", "2", "--sign"],
    );
    for _ in 0..2 {
        let line = sub.line(Duration::from_secs(15)).unwrap_or_default();
        assert!(line.contains("signer=robot"), "{line:?}: {}", sub.logs());
    }
}

#[test]
fn no_demo_child_outlives_the_demo() {
    let check = Command::new("python3")
        .args(["-c", "import cyclonedds"])
        .env_remove("LD_LIBRARY_PATH")
        .status()
        .expect("python3");
    assert!(
        check.success(),
        "the demo needs Python cyclonedds (scripts/setup.sh)"
    );
    let dir = std::env::temp_dir().join(format!("roam-e2e-{}-demo", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let port = free_udp_port().to_string();
    let dir_s = dir.to_string_lossy().into_owned();
    let start = || {
        let d = Proc::spawn_system(
            "demo",
            ROAM,
            &["demo", "--duration", "0", "--port", &port, "--dir", &dir_s],
        );
        let end = Instant::now() + Duration::from_secs(60);
        loop {
            assert!(Instant::now() < end, "demo did not start: {}", d.logs());
            match d.line(Duration::from_millis(200)) {
                Some(l) if l.contains("could not listen") => panic!("{l}"),
                Some(l) if l.contains("Ctrl-C to stop") => break,
                _ => {}
            }
        }
        let kids = children(d.pid());
        // Router, two proxies, two talkers, two listeners.
        assert_eq!(kids.len(), 7, "{kids:?}");
        (d, kids)
    };
    // The terminal closes: SIGHUP.
    let (mut demo, kids) = start();
    kill(demo.pid(), "-HUP");
    let status = demo.wait_exit(Duration::from_secs(30)).expect("demo exits");
    assert!(status.success(), "{status:?}: {}", demo.logs());
    wait_until(
        Duration::from_secs(10),
        "the demo's children to end",
        || kids.iter().all(|&k| !alive(k)),
    );
    // The ports are free again, and a demo killed outright still takes its children along.
    let (mut demo, kids) = start();
    demo.kill();
    wait_until(
        Duration::from_secs(10),
        "a killed demo's children to end",
        || kids.iter().all(|&k| !alive(k)),
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// The runtime's worker threads of a running process.
fn runtime_workers(pid: u32) -> usize {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("the process's threads");
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "tokio-rt-worker")
        .count()
}

#[test]
fn a_router_runs_one_worker_thread_unless_told_more_by_flag_or_file() {
    let net = Net::new("cli-workers");
    let (mut one, _) = net.router("r1", "127.0.0.1:0", &[]);
    // Under an environment that sets the variable (CI runners may), the default is its.
    // A new thread takes its name a moment after it exists, so every count is waited for.
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        wait_until(Duration::from_secs(10), "one worker", || {
            runtime_workers(one.pid()) == 1
        });
    }
    let (mut three, _) = net.router_with("r3", "127.0.0.1:0", &[], &["--worker-threads", "3"]);
    wait_until(Duration::from_secs(10), "three workers", || {
        runtime_workers(three.pid()) == 3
    });
    // The file's key, where no flag is given.
    let file = std::env::temp_dir().join(format!("roam-cli-workers-{}.yaml", std::process::id()));
    std::fs::write(&file, "worker_threads: 2\n").unwrap();
    let path = file.to_str().unwrap();
    let (mut two, _) = net.router_with("r2", "127.0.0.1:0", &[], &["-c", path]);
    wait_until(Duration::from_secs(10), "two workers", || {
        runtime_workers(two.pid()) == 2
    });
    // Long after its start, the first router still has its one worker.
    if std::env::var_os("TOKIO_WORKER_THREADS").is_none() {
        assert_eq!(runtime_workers(one.pid()), 1, "{}", one.logs());
    }
    one.kill();
    three.kill();
    two.kill();
    std::fs::remove_file(&file).unwrap();
    let e = roam_fails(&["router", "--worker-threads", "0"]);
    assert!(e.contains("--worker-threads"), "{e}");
}

/// The threads of a process named `name`.
fn threads_named(pid: u32, name: &str) -> usize {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("the process's threads");
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|n| n.trim() == name)
        .count()
}

/// A CYCLONEDDS_URI that keeps DDS on loopback, asks for a 2 MiB receive buffer and has
/// CycloneDDS write where each setting came from to `trace`.
fn traced_uri(trace: &Path) -> String {
    format!(
        "<CycloneDDS><Domain>{}<Internal><SocketReceiveBufferSize min=\"default\" max=\"2MiB\"/></Internal><Tracing><Verbosity>config</Verbosity><OutputFile>{}</OutputFile></Tracing></Domain></CycloneDDS>",
        roam_dds::loopback_config(),
        trace.display()
    )
}

/// `p`, started with [`traced_uri`], runs a receive thread for its unicast data socket, and
/// CycloneDDS's trace says roam's settings came first and the environment's after them.
fn expect_roams_dds_settings_first(p: &Proc, trace: &Path) {
    let end = Instant::now() + Duration::from_secs(20);
    while threads_named(p.pid(), "recvUC") != 1 {
        assert!(
            Instant::now() < end,
            "no unicast receive thread: {}",
            p.logs()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let config = std::fs::read_to_string(trace).expect("CycloneDDS's trace");
    let line = |key: &str| {
        config
            .lines()
            .find(|l| l.contains(key))
            .unwrap_or_else(|| panic!("no {key} in the trace: {config}"))
            .to_string()
    };
    // "{0}": from the first source (roam's), "{0,1}": set by both, the last one's value.
    let threads = line("MultipleReceiveThreads/#text");
    assert!(threads.ends_with("true {0}"), "{threads}");
    let buffer = line("SocketReceiveBufferSize[@max]");
    assert!(buffer.ends_with("2 MiB {0,1}"), "{buffer}");
    let interface = line("NetworkInterface[@name]");
    assert!(interface.ends_with("lo {1}"), "{interface}");
}

/// `roam mqtt` on its own gives its DDS participant the same settings as a proxy does.
#[test]
fn the_standalone_mqtt_bridge_adds_the_proxys_dds_settings() {
    let net = Net::new("cli-mqtt-dds-settings");
    let params = net.dir.join("params.yaml");
    // No broker listens there: the bridge starts and keeps trying to connect.
    std::fs::write(
        &params,
        format!(
            "broker:\n  host: 127.0.0.1\n  port: {}\nbridge:\n  ros2mqtt:\n    ros_topics: [/chatter]\n    /chatter:\n      mqtt_topic: chatter\n",
            free_tcp_port()
        ),
    )
    .unwrap();
    let trace = net.dir.join("cyclonedds-mqtt.log");
    let args = [
        "mqtt",
        "--params",
        params.to_str().unwrap(),
        "--domain",
        "153",
    ]
    .map(String::from);
    let mut bridge = Proc::spawn_with_cyclonedds_uri("mqtt", &args, &traced_uri(&trace));
    expect_roams_dds_settings_first(&bridge, &trace);
    bridge.kill();
}

/// A proxy without interfaces or peers in its file: roam's CycloneDDS settings come first
/// (a receive thread for the unicast data socket, an 8 MiB receive buffer), then
/// `CYCLONEDDS_URI`, whose settings win where both say something. CycloneDDS's own trace of
/// its configuration says where each value came from.
#[test]
fn a_proxy_adds_its_dds_settings_before_cyclonedds_uri() {
    let net = Net::new("cli-dds-settings");
    let (mut router, addr) = net.router("r1", "127.0.0.1:0", &[]);
    net.issue("robot", "router");
    let yaml = net.dir.join("robot.yaml");
    std::fs::write(
        &yaml,
        format!(
            "id: robot\npki: {}\nupstream: [{addr}]\ndds: {{domain: 151}}\nrealms: {{test: {}}}\nexports:\n  - topic: /chatter\n    realm: test\n",
            net.pki, net.realm
        ),
    )
    .unwrap();
    let trace = net.dir.join("cyclonedds.log");
    let args = ["proxy", "-c", yaml.to_str().unwrap()].map(String::from);
    let mut proxy = Proc::spawn_with_cyclonedds_uri("robot", &args, &traced_uri(&trace));
    expect_roams_dds_settings_first(&proxy, &trace);
    proxy.kill();
    router.kill();
}
