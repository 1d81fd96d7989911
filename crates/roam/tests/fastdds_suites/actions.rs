//! ROS 2 actions between real Fast DDS 2.9 nodes, through real `roam router` and `roam proxy`
//! processes: the action server in one DDS domain, the client in another.
//!
//! Peers: `roam_fastdds_node action-server` / `action-client` (tests/fastdds/action.cpp),
//! example_interfaces/action/Fibonacci as a node on rmw_fastrtps puts it on the wire: three
//! services in rmw_fastrtps's convention (`rq/fibonacci/_action/send_goalRequest`, ...) and two
//! topics, `rt/fibonacci/_action/feedback` and the transient-local, keep-last-1
//! `rt/fibonacci/_action/status`. The proxies carry the action as one `action:` entry.
//!
//! Then across vendors: the Fast DDS client with a CycloneDDS server (Python cyclonedds in
//! rmw_cyclonedds's layout, crates/roam-dds/tests/py/action.py), and the CycloneDDS client
//! with the Fast DDS server.
//!
//! Everything stays on loopback (see tests/rustdds_vendors/topics.rs). Domains 228..232 and 185..188 and
//! router ports 18628..18632 and 18182..18183 are this file's alone.

use std::time::{Duration, Instant};

use crate::common::*;
use crate::fastdds_support::fastdds;

/// A router, the proxy of the server's domain exporting `/fibonacci` and the proxy of the
/// client's domain importing it.
struct Setup(ProxyPair);

impl Setup {
    fn new(test: &str, port: u16, server_domain: u32, client_domain: u32) -> Setup {
        let entry = "  - action: /fibonacci\n    realm: test\n";
        let (server, client) = (format!("exports:\n{entry}"), format!("imports:\n{entry}"));
        Setup(ProxyPair::new(
            test,
            port,
            (server_domain, &server),
            (client_domain, &client),
        ))
    }

    /// Both proxies' logs and the action nodes' diagnostics, for a failure's message.
    fn logs(&self, server: &Proc, client: &Proc) -> String {
        format!(
            "{}\n--- action server:\n{}\n--- action client:\n{}",
            self.0.logs(),
            server.logs(),
            client.logs()
        )
    }
}

/// Every stdout line of a Fast DDS action client up to and with its last, "result ...".
fn client_lines(c: &Proc, timeout: Duration, logs: &dyn Fn() -> String) -> Vec<String> {
    let end = Instant::now() + timeout;
    let mut got = Vec::new();
    while Instant::now() < end {
        if let Some(l) = c.line(Duration::from_millis(100)) {
            let last = l.starts_with("result ");
            got.push(l);
            if last {
                return got;
            }
        }
    }
    panic!(
        "the Fast DDS action client got no result ({got:?}): {}",
        logs()
    );
}

/// The numbers of a "feedback 0,1,1" or "result 4 0,1,1" line's sequence.
fn numbers(list: &str) -> Vec<i64> {
    list.split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().expect("a number"))
        .collect()
}

/// The first `n` Fibonacci numbers from 0.
fn fibonacci(n: usize) -> Vec<i64> {
    let mut v: Vec<i64> = Vec::with_capacity(n);
    for i in 0..n {
        v.push(if i < 2 { i as i64 } else { v[i - 1] + v[i - 2] });
    }
    v
}

/// Every feedback line carries a growing start of the Fibonacci sequence (the server's
/// partial result at that step); returns how many there were.
fn check_feedback(lines: &[String], logs: &dyn Fn() -> String) -> usize {
    let feedback: Vec<Vec<i64>> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("feedback "))
        .map(numbers)
        .collect();
    for (i, f) in feedback.iter().enumerate() {
        assert_eq!(f, &fibonacci(f.len()), "feedback {i} {lines:?}: {}", logs());
        if i > 0 {
            assert!(f.len() > feedback[i - 1].len(), "{lines:?}: {}", logs());
        }
    }
    feedback.len()
}

/// The UUID of the goal the server printed ("goal <uuid> order N"), which must be the one the
/// client sent (its stderr says "goal <uuid> order N" too).
fn server_goal(server: &Proc, client: &Proc, logs: &dyn Fn() -> String) -> String {
    let goal = wait_line(server, "goal ", Duration::from_secs(5))
        .unwrap_or_else(|| panic!("the server saw no goal: {}", logs()));
    let sent = client.stderr.lock().unwrap().contains(&goal);
    assert!(
        sent,
        "the server ran {goal:?}, not the client's goal: {}",
        logs()
    );
    goal.split(' ').nth(1).unwrap_or_default().to_string()
}

/// The Fast DDS client's goal crosses roam (send_goal), is accepted, streams feedback back
/// (feedback topic), its status reaches SUCCEEDED (status topic) and its result comes back
/// (get_result, asked right after acceptance and answered only when the goal ends).
#[test]
fn a_fastdds_action_client_reaches_a_fastdds_action_server_through_roam() {
    let s = Setup::new("action-fastdds", 18628, 228, 229);
    let server = fastdds(
        "fastdds-action-server",
        "action-server",
        228,
        &["--name", "/fibonacci"],
    );
    let mut client = fastdds(
        "fastdds-action-client",
        "action-client",
        229,
        &["--name", "/fibonacci", "--order", "6", "--timeout", "5"],
    );
    let logs = || s.logs(&server, &client);
    let got = client_lines(&client, Duration::from_secs(90), &logs);
    assert!(got.iter().any(|l| l == "accepted"), "{got:?}: {}", logs());
    assert!(
        check_feedback(&got, &logs) >= 1,
        "no feedback {got:?}: {}",
        logs()
    );
    assert!(got.iter().any(|l| l == "status 4"), "{got:?}: {}", logs());
    assert_eq!(
        got.last().map(String::as_str),
        Some("result 4 0,1,1,2,3,5,8"),
        "{}",
        logs()
    );
    let exit = client.wait_exit(Duration::from_secs(10));
    let logs = || s.logs(&server, &client);
    assert!(exit.is_some_and(|e| e.success()), "{exit:?}: {}", logs());
    // The server ran the client's goal.
    let uuid = server_goal(&server, &client, &logs);
    assert_eq!(
        wait_line(&server, "succeeded ", Duration::from_secs(5)),
        Some(format!("succeeded {uuid}")),
        "{}",
        logs()
    );
}

/// A cancel_goal crosses roam while the goal runs: the server cancels it (return code NONE,
/// one goal canceling), ends it CANCELED with the numbers it had, and the client's pending
/// get_result is answered with that.
#[test]
fn a_fastdds_action_goal_is_cancelled_through_roam() {
    let s = Setup::new("action-fastdds-cancel", 18629, 230, 231);
    let server = fastdds(
        "fastdds-action-server",
        "action-server",
        230,
        &["--name", "/fibonacci", "--step-ms", "200"],
    );
    let mut client = fastdds(
        "fastdds-action-client",
        "action-client",
        231,
        &[
            "--name",
            "/fibonacci",
            "--order",
            "40",
            "--cancel-after",
            "2",
            "--timeout",
            "5",
        ],
    );
    let logs = || s.logs(&server, &client);
    let got = client_lines(&client, Duration::from_secs(90), &logs);
    assert!(got.iter().any(|l| l == "accepted"), "{got:?}: {}", logs());
    assert!(check_feedback(&got, &logs) >= 2, "{got:?}: {}", logs());
    assert!(got.iter().any(|l| l == "cancel 0 1"), "{got:?}: {}", logs());
    let last = got.last().cloned().unwrap_or_default();
    let partial = last
        .strip_prefix("result 5 ")
        .unwrap_or_else(|| panic!("not canceled: {got:?}: {}", logs()));
    let partial = numbers(partial);
    assert!(
        partial.len() >= 2 && partial.len() < 41,
        "{got:?}: {}",
        logs()
    );
    assert_eq!(partial, fibonacci(partial.len()), "{}", logs());
    assert!(got.iter().any(|l| l == "status 5"), "{got:?}: {}", logs());
    let exit = client.wait_exit(Duration::from_secs(10));
    let logs = || s.logs(&server, &client);
    assert!(exit.is_some_and(|e| e.success()), "{exit:?}: {}", logs());
    let uuid = server_goal(&server, &client, &logs);
    assert_eq!(
        wait_line(&server, "canceled ", Duration::from_secs(5)),
        Some(format!("canceled {uuid}")),
        "{}",
        logs()
    );
}

/// The Fast DDS client calls a CycloneDDS server (the proxies translate between rmw_fastrtps's
/// and rmw_cyclonedds's service conventions), and a CycloneDDS client the Fast DDS server.
#[test]
fn fastdds_and_cyclonedds_action_clients_and_servers_work_with_each_other_through_roam() {
    let s = Setup::new("action-fast-to-cyclone", 18182, 185, 186);
    let server = python(
        "cyclone-server",
        "action.py",
        &["server", "185", "fibonacci"],
    );
    let client = fastdds(
        "fastdds-action-client",
        "action-client",
        186,
        &["--name", "/fibonacci", "--order", "6", "--timeout", "5"],
    );
    let logs = || s.logs(&server, &client);
    let got = client_lines(&client, Duration::from_secs(90), &logs);
    assert!(check_feedback(&got, &logs) >= 1, "{got:?}: {}", logs());
    assert_eq!(
        got.last().map(String::as_str),
        Some("result 4 0,1,1,2,3,5,8"),
        "{}",
        logs()
    );
    drop((client, server, s));

    let s = Setup::new("action-cyclone-to-fast", 18183, 187, 188);
    let server = fastdds(
        "fastdds-action-server",
        "action-server",
        187,
        &["--name", "/fibonacci", "--step-ms", "200"],
    );
    let client = python(
        "cyclone-client",
        "action.py",
        &["client", "188", "fibonacci", "7", "40", "2"],
    );
    let logs = || s.logs(&server, &client);
    let end = Instant::now() + Duration::from_secs(90);
    let mut got = Vec::new();
    while Instant::now() < end && got.last().map(String::as_str) != Some("done") {
        got.extend(client.line(Duration::from_millis(100)));
    }
    assert!(got.iter().any(|l| l == "cancel 0 1"), "{got:?}: {}", logs());
    let result = got.iter().find_map(|l| l.strip_prefix("result 5 "));
    let partial = numbers(result.unwrap_or_else(|| panic!("not canceled: {got:?}: {}", logs())));
    assert!(
        partial.len() >= 2 && partial.len() < 41,
        "{got:?}: {}",
        logs()
    );
    assert_eq!(partial, fibonacci(partial.len()), "{}", logs());
}
