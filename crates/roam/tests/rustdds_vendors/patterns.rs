//! `allow:`/`deny:` patterns in a proxy's file, per kind of endpoint (as the Zenoh ROS 2
//! bridge's): an import pattern imports what local subscribers read, once they appear, and
//! nothing else; service and action patterns export what local servers serve and import
//! what local clients call. Through real `roam router` and `roam proxy` processes with Python
//! cyclonedds talkers, listeners, service and action nodes, a ros2-client (RustDDS) client
//! and Fast DDS 2.9 nodes (tests/fastdds).
//!
//! Everything stays on loopback (see tests/rustdds_vendors/topics.rs). Domains 189..196 and router ports
//! 18184..18187 are this file's alone.

use std::time::{Duration, Instant};

use crate::common::*;
use crate::fastdds_support::fastdds;
use crate::rustdds_support::{ros_default_qos, rustdds_node};
use ros2_client::{Message, Name, ServiceMapping, ServiceTypeName};
use serde::{Deserialize, Serialize};

const T: Duration = Duration::from_secs(30);

#[test]
fn an_import_pattern_imports_what_local_subscribers_read_and_nothing_else() {
    let net = Net::new("patterns-imports");
    let (_router, addr) = net.router("cloud", "127.0.0.1:18184", &[]);
    // The robot exports every topic its nodes publish but /debug ones, by publishers pattern.
    let robot = net.proxy(
        "robot",
        189,
        &addr,
        "exports:\n  - allow: {publishers: ['.*']}\n    deny: {publishers: ['^/debug']}\n    realm: test\n",
    );
    // The base imports what its nodes subscribe to under /robot/, except /robot/secret.
    let base = net.proxy(
        "base",
        190,
        &addr,
        "imports:\n  - allow: {subscribers: ['^/robot/']}\n    deny: {subscribers: ['^/robot/secret$']}\n    realm: test\n",
    );
    let logs = || format!("\n--- robot:\n{}\n--- base:\n{}", robot.logs(), base.logs());
    let _status = python("status", "talker.py", &["189", "rt/robot/status", "ok"]);
    let _secret = python("secret", "talker.py", &["189", "rt/robot/secret", "s"]);
    let _debug = python("debug", "talker.py", &["189", "rt/debug/robot", "d"]);
    // Nobody at the base reads /robot/status yet: not imported.
    assert!(
        !base.wait_log("importing", Duration::from_secs(2)),
        "imported with no local subscriber:{}",
        logs()
    );
    let status = python(
        "status-listener",
        "listener.py",
        &["190", "rt/robot/status"],
    );
    let secret = python(
        "secret-listener",
        "listener.py",
        &["190", "rt/robot/secret"],
    );
    let other = python("other-listener", "listener.py", &["190", "rt/elsewhere"]);
    assert!(
        wait_line(&status, "data: ok", T).is_some(),
        "/robot/status was not imported for its subscriber:{}",
        logs()
    );
    assert!(
        base.wait_log("importing (a local subscriber reads it", T),
        "{}",
        logs()
    );
    // Denied and unmatched topics stay out, though the robot exports /robot/secret.
    assert!(
        wait_line(&secret, "data:", Duration::from_secs(2)).is_none(),
        "{}",
        logs()
    );
    assert!(wait_line(&other, "data:", Duration::from_millis(200)).is_none());
    let imported: Vec<String> = base
        .logs()
        .lines()
        .filter(|l| l.contains("importing"))
        .map(str::to_string)
        .collect();
    assert_eq!(imported.len(), 1, "one import, /robot/status: {imported:?}");
    assert!(imported[0].contains("rt/robot/status"), "{imported:?}");
    // The robot's /debug topic was never exported.
    assert!(!robot.logs().contains("rt/debug/robot"), "{}", logs());
}

/// A ros2-client (RustDDS) AddTwoInts request: rmw_fastrtps's convention on the wire.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct AddTwoIntsRequest {
    a: i64,
    b: i64,
}
impl Message for AddTwoIntsRequest {}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct AddTwoIntsResponse {
    sum: i64,
}
impl Message for AddTwoIntsResponse {}

/// Calls `/add_two_ints` from a ros2-client node in `domain` (`ServiceMapping::Enhanced`,
/// rmw_fastrtps's convention): `a = base`, `b = 1..=count`, one call at a time, made again
/// after a second without its answer (as a ROS client would after its own timeout), until
/// all are answered or `deadline` passes. The answers, in call order: (b, sum).
fn ros2_client_calls(domain: u32, base: i64, count: i64, deadline: Duration) -> Vec<(i64, i64)> {
    let qos = ros_default_qos();
    let mut node = rustdds_node(domain, "pattern_client");
    let client = node
        .create_client::<AddTwoIntsRequest, AddTwoIntsResponse>(
            ServiceMapping::Enhanced,
            &Name::new("/", "add_two_ints").unwrap(),
            &ServiceTypeName::new("example_interfaces", "AddTwoInts"),
            qos.clone(),
            qos,
        )
        .expect("client");
    let end = Instant::now() + deadline;
    let mut answers = Vec::new();
    let mut b = 1;
    while b <= count && Instant::now() < end {
        let Ok(id) = client.send_request(AddTwoIntsRequest { a: base, b }) else {
            std::thread::sleep(Duration::from_millis(50));
            continue;
        };
        let retry = Instant::now() + Duration::from_secs(1);
        while Instant::now() < retry {
            // Replies to the Python client (rmw_cyclonedds's layout) are errors here: skipped.
            match client.receive_response() {
                Ok(Some((rid, r))) if rid == id => {
                    answers.push((b, r.sum));
                    b += 1;
                    break;
                }
                _ => std::thread::sleep(Duration::from_millis(2)),
            }
        }
    }
    answers
}

/// Waits until the realm directory (`roam topics --json`, as a user asks it) lists the
/// service `name` offered by `offered` and imported by `imported`; the last listing if not.
fn wait_service_listed(
    net: &Net,
    router: &str,
    name: &str,
    (offered, imported): (&str, &str),
) -> Result<(), serde_json::Value> {
    net.issue("laptop", "client");
    let args = [
        "topics",
        "--realm",
        &net.realm,
        "--pki",
        &net.pki,
        "--id",
        "laptop",
        "--connect",
        router,
        "--json",
        "--wait",
        "3",
    ];
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let members = |v: &serde_json::Value| -> Vec<String> {
        let all = v.as_array().into_iter().flatten();
        all.filter_map(|m| m["member"].as_str().map(str::to_string))
            .collect()
    };
    let end = Instant::now() + T;
    let mut last = serde_json::Value::Null;
    while Instant::now() < end {
        let mut p = Proc::spawn("topics", &args, None);
        if !p.wait_exit(T).is_some_and(|s| s.success()) {
            continue;
        }
        let out = p.line(Duration::from_secs(1)).unwrap_or_default();
        last = serde_json::from_str(&out).unwrap_or(serde_json::Value::Null);
        let services = last["services"].as_array().cloned().unwrap_or_default();
        if services.iter().any(|s| {
            s["name"] == name
                && members(&s["offered_by"]) == [offered]
                && members(&s["imported_by"]) == [imported]
        }) {
            return Ok(());
        }
    }
    Err(last)
}

/// `service_servers` in one proxy's `exports:`, `service_clients` in the other's `imports:`:
/// `/add_two_ints`, served by a CycloneDDS (Python) server, is exported once the server
/// appears and imported once a client calls it, and answers a CycloneDDS client and a
/// ros2-client one (rmw_fastrtps's convention) rightly; a service the export pattern does not
/// match (`/private_sum`) never crosses, though the clients' side would import it.
#[test]
fn service_patterns_export_what_local_servers_serve_and_import_what_local_clients_call() {
    let net = Net::new("patterns-services");
    let (_router, addr) = net.router("cloud", "127.0.0.1:18185", &[]);
    let server_side = net.proxy(
        "server-side",
        191,
        &addr,
        "exports:\n  - allow: {publishers: ['^/status$'], service_servers: ['^/add']}\n    deny: {service_servers: ['^/add_secret']}\n    realm: test\n",
    );
    let client_side = net.proxy(
        "client-side",
        192,
        &addr,
        "imports:\n  - allow: {service_clients: ['.*']}\n    realm: test\n",
    );
    let logs = || {
        format!(
            "\n--- server-side:\n{}\n--- client-side:\n{}",
            server_side.logs(),
            client_side.logs()
        )
    };
    let _server = python("server", "service.py", &["server", "191", "add_two_ints"]);
    let _private = python("private", "service.py", &["server", "191", "private_sum"]);
    let _secret = python("secret", "service.py", &["server", "191", "add_secret"]);
    assert!(
        server_side.wait_log("exporting it", T),
        "the server's service was not exported:{}",
        logs()
    );
    // Nobody calls yet: nothing imported.
    assert!(!client_side.logs().contains("importing"), "{}", logs());

    let python_client = python(
        "client",
        "service.py",
        &["client", "192", "add_two_ints", "4000", "5"],
    );
    let private_client = python(
        "private-client",
        "service.py",
        &["client", "192", "private_sum", "5000", "1"],
    );
    let answers = ros2_client_calls(192, 100, 5, Duration::from_secs(60));
    let expected: Vec<(i64, i64)> = (1..=5).map(|b| (b, 100 + b)).collect();
    assert_eq!(answers, expected, "ros2-client's answers:{}", logs());
    let replies = lines(&python_client, "reply ", 5, T);
    let expected: Vec<String> = (1..=5).map(|b| format!("reply {b} {}", 4000 + b)).collect();
    assert_eq!(
        replies,
        expected,
        "the CycloneDDS client's answers:{}",
        logs()
    );

    // /private_sum and /add_secret are served, but no export pattern takes them: the call
    // to /private_sum (imported on the clients' side, which imports whatever is called)
    // has no server in the realm.
    assert!(
        wait_line(&private_client, "reply ", Duration::from_secs(3)).is_none(),
        "{}",
        logs()
    );
    let server_logs = server_side.logs();
    let exported = server_logs.matches("exporting it").count();
    assert_eq!(exported, 1, "one service exported:{}", logs());
    assert!(
        server_logs.contains("name=/add_two_ints")
            && !server_logs.contains("name=/private_sum")
            && !server_logs.contains("name=/add_secret"),
        "{}",
        logs()
    );
    assert!(
        client_side.logs().contains("name=/private_sum"),
        "the clients' side imports what its clients call:{}",
        logs()
    );
    // The directory says who offers and who calls it.
    if let Err(last) =
        wait_service_listed(&net, &addr, "/add_two_ints", ("server-side", "client-side"))
    {
        panic!(
            "/add_two_ints never listed as offered and imported: {last:#}{}",
            logs()
        );
    }
}

/// The same with Fast DDS 2.9 nodes (rmw_fastrtps's convention, tests/fastdds/node.cpp): a
/// Fast DDS server exported by `service_servers` (its legs through the proxy's RustDDS
/// participant start when the pattern matches), called through `service_clients` by a Fast
/// DDS client and a CycloneDDS one at once.
#[test]
fn a_fast_dds_server_and_client_cross_by_service_patterns() {
    let net = Net::new("patterns-services-fastdds");
    let (_router, addr) = net.router("cloud", "127.0.0.1:18186", &[]);
    // The server is up before its proxy: the proxy sees all its endpoints at once.
    let _server = fastdds("fastdds-server", "server", 193, &[]);
    let server_side = net.proxy(
        "server-side",
        193,
        &addr,
        "exports:\n  - allow: {service_servers: ['.*']}\n    realm: test\n",
    );
    let client_side = net.proxy(
        "client-side",
        194,
        &addr,
        "imports:\n  - allow: {service_clients: ['^/add_two_ints$']}\n    realm: test\n",
    );
    let logs = || {
        format!(
            "\n--- server-side:\n{}\n--- client-side:\n{}",
            server_side.logs(),
            client_side.logs()
        )
    };
    assert!(
        server_side.wait_log("a local server of the service", T),
        "{}",
        logs()
    );
    let fast = fastdds(
        "fastdds-client",
        "client",
        194,
        &["--calls", "5", "--a", "100", "--b", "1", "--timeout", "5"],
    );
    let python_client = python(
        "client",
        "service.py",
        &["client", "194", "add_two_ints", "3000", "5"],
    );
    let answers = lines(&fast, "answer ", 5, Duration::from_secs(90));
    let expected: Vec<String> = (0..5)
        .map(|i| format!("answer a={} b=1 sum={}", 100 + i, 101 + i))
        .collect();
    assert_eq!(
        answers,
        expected,
        "{}\n--- client:\n{}",
        logs(),
        fast.logs()
    );
    let replies = lines(&python_client, "reply ", 5, T);
    let expected: Vec<String> = (1..=5).map(|b| format!("reply {b} {}", 3000 + b)).collect();
    assert_eq!(replies, expected, "{}", logs());
    assert!(
        server_side
            .logs()
            .contains("serving the realm's calls to a local server in rmw_fastrtps's convention"),
        "{}",
        logs()
    );
}

/// The lines an action.py client printed up to its "done".
fn until_done(c: &Proc, logs: &dyn Fn() -> String) -> Vec<String> {
    let end = Instant::now() + Duration::from_secs(60);
    let mut got = Vec::new();
    while Instant::now() < end {
        match c.line(Duration::from_millis(100)) {
            Some(l) if l == "done" => return got,
            Some(l) => got.push(l),
            None => {}
        }
    }
    panic!("the action client did not finish ({got:?}):{}", logs());
}

/// `action_servers` and `action_clients`: the Fibonacci action of a CycloneDDS (Python)
/// server crosses, all five parts, once its server and a client appear: a goal to success
/// (accepted, feedback, the status topic's SUCCEEDED, the whole sequence) and a long goal
/// cancelled mid-way.
#[test]
fn action_patterns_export_a_served_action_and_import_a_used_one() {
    let net = Net::new("patterns-actions");
    let (_router, addr) = net.router("cloud", "127.0.0.1:18187", &[]);
    // A writer of one of the action's parts is there before the action's server (and
    // before the proxy): it crosses too once the server makes the pattern match.
    let _early = python(
        "early-status",
        "talker.py",
        &["195", "rt/fibonacci/_action/status", "early"],
    );
    let server_side = net.proxy(
        "server-side",
        195,
        &addr,
        "exports:\n  - allow: {action_servers: ['^/fib']}\n    realm: test\n",
    );
    let client_side = net.proxy(
        "client-side",
        196,
        &addr,
        "imports:\n  - allow: {action_clients: ['.*']}\n    deny: {action_clients: ['^/secret']}\n    realm: test\n",
    );
    let logs = || {
        format!(
            "\n--- server-side:\n{}\n--- client-side:\n{}",
            server_side.logs(),
            client_side.logs()
        )
    };
    assert!(server_side.wait_log("DDS participant up", T), "{}", logs());
    let _server = python(
        "server",
        "action.py",
        &["server", "195", "fibonacci", "100"],
    );
    assert!(server_side.wait_log("exporting it", T), "{}", logs());
    let client = python(
        "client",
        "action.py",
        &["client", "196", "fibonacci", "7", "6"],
    );
    let got = until_done(&client, &logs);
    let has = |l: &str| got.iter().any(|x| x == l);
    assert!(has("accepted"), "{got:?}{}", logs());
    assert!(
        got.iter().any(|l| l.starts_with("feedback ")),
        "{got:?}{}",
        logs()
    );
    assert!(has("status 4"), "SUCCEEDED not seen: {got:?}{}", logs());
    assert!(has("result 4 0,1,1,2,3,5,8"), "{got:?}{}", logs());

    let client = python(
        "client",
        "action.py",
        &["client", "196", "fibonacci", "8", "40", "2"],
    );
    let got = until_done(&client, &logs);
    assert!(got.iter().any(|l| l == "cancel 0 1"), "{got:?}{}", logs());
    assert!(
        got.iter().any(|l| l.starts_with("result 5 ")),
        "not CANCELED: {got:?}{}",
        logs()
    );
    // The early writer's stream crossed with the action's (a std_msgs/String: only a
    // reader of that type gets it).
    let early = python(
        "early-listener",
        "listener.py",
        &["196", "rt/fibonacci/_action/status"],
    );
    assert!(
        wait_line(&early, "data: early", T).is_some(),
        "the action's part seen before its server did not cross:{}",
        logs()
    );
    // The action was set up once on each side, as one thing.
    for (side, p) in [("server", &server_side), ("client", &client_side)] {
        let n = p.logs().matches("what=action name=/fibonacci").count();
        assert_eq!(n, 1, "{side} side:{}", logs());
    }
}
