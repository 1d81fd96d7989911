//! ROS 2 actions through real `roam router` and `roam proxy` processes, configured as one
//! `action:` entry on each side: the server's proxy exports `/fibonacci`, the client's
//! imports it, and the three services and two topics of the action cross together.
//!
//! Peers (example_interfaces/action/Fibonacci): ros2-client's action server and client
//! (RustDDS, in this test process; rmw_fastrtps's service convention), and a Python
//! cyclonedds server and client in rmw_cyclonedds's layout (crates/roam-dds/tests/py/action.py).
//! Each pair runs a goal to success (goal accepted, feedback, status, result) and cancels a
//! second one mid-way; then each kind of client calls the other kind of server.
//!
//! Everything stays on loopback (see tests/rustdds_vendors/topics.rs). Domains 220..227 and router ports
//! 18620..18623 are this file's alone.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::rustdds_support::rustdds_node;
use ros2_client::action::{
    ActionClientQosPolicies, ActionServerQosPolicies, GetResultResponse, SendGoalResponse,
};
use ros2_client::action_msgs::{
    CancelGoalRequest, CancelGoalResponse, CancelGoalResponseEnum, GoalId, GoalInfo, GoalStatus,
    GoalStatusArray, GoalStatusEnum,
};
use ros2_client::builtin_interfaces::Time;
use ros2_client::qos::{Durability, History, WhenFull};
use ros2_client::{ActionTypeName, Message, Name, QosProfile, ServiceMapping};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
struct FibonacciGoal {
    order: i32,
}
impl Message for FibonacciGoal {}

/// Fibonacci's result and feedback: the sequence so far.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct FibonacciSequence {
    sequence: Vec<i32>,
}
impl Message for FibonacciSequence {}

/// One step of a goal: what the servers wait between two numbers of the sequence.
const STEP: Duration = Duration::from_millis(100);
/// How long a client may take from its first goal to its result.
const CLIENT_DEADLINE: Duration = Duration::from_secs(60);

/// rcl_action's QoS: services and feedback reliable, volatile, keep last 10.
fn default_qos() -> QosProfile {
    QosProfile::publisher_default()
        .reliability_reliable(WhenFull::DEFAULT)
        .durability(Durability::Volatile)
        .history(History::KeepLast { depth: 10 })
}

/// rcl_action's status QoS: reliable, transient-local, keep last 1.
fn status_qos() -> QosProfile {
    default_qos()
        .durability(Durability::TransientLocal)
        .history(History::KeepLast { depth: 1 })
}

fn fibonacci() -> (Name, ActionTypeName) {
    (
        Name::new("/", "fibonacci").unwrap(),
        ActionTypeName::new("example_interfaces", "Fibonacci"),
    )
}

fn joined(seq: &[i32]) -> String {
    seq.iter().map(i32::to_string).collect::<Vec<_>>().join(",")
}

/// What a peer printed, line by line (the Python peers' stdout; the Rust peers' log).
type Lines = Arc<Mutex<Vec<String>>>;

fn say(lines: &Lines, line: String) {
    lines.lock().unwrap().push(line);
}

/// A thread polling until stopped; joined when dropped.
struct Peer {
    stop: Arc<AtomicBool>,
    lines: Lines,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Peer {
    fn spawn(body: impl FnOnce(&AtomicBool, &Lines) + Send + 'static) -> Peer {
        let stop = Arc::new(AtomicBool::new(false));
        let lines: Lines = Arc::default();
        let (stop2, lines2) = (stop.clone(), lines.clone());
        let thread = std::thread::spawn(move || body(&stop2, &lines2));
        Peer {
            stop,
            lines,
            thread: Some(thread),
        }
    }

    /// Waits for a line starting with `prefix`.
    fn wait_line(&self, prefix: &str, timeout: Duration) -> Option<String> {
        let end = Instant::now() + timeout;
        loop {
            let found = self
                .lines
                .lock()
                .unwrap()
                .iter()
                .find(|l| l.starts_with(prefix))
                .cloned();
            if found.is_some() || Instant::now() >= end {
                return found;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A goal a Rust server runs.
struct Goal {
    info: GoalInfo,
    order: i32,
    status: GoalStatusEnum,
    sequence: Vec<i32>,
    /// `get_result` calls waiting for the goal to end.
    waiting: Vec<ros2_client::RmwRequestId>,
}

fn ended(s: GoalStatusEnum) -> bool {
    matches!(
        s,
        GoalStatusEnum::Succeeded | GoalStatusEnum::Canceled | GoalStatusEnum::Aborted
    )
}

/// ros2-client's `CancelGoalRequest` keeps its goal private to the crate; its serde form is
/// the message, so the server reads the goal from that.
fn cancel_target(req: &CancelGoalRequest) -> GoalId {
    let v = serde_json::to_value(req).expect("a cancel request as JSON");
    let info: GoalInfo = serde_json::from_value(v["goal_info"].clone()).expect("its goal_info");
    info.goal_id
}

/// ros2-client's action server, served the way rclcpp's servers behave: accepts every goal,
/// one number per [`STEP`] with feedback and status, answers `get_result` when the goal
/// ends, cancels running goals. Logs "goal ID ORDER", "succeeded ID", "canceled ID".
fn rust_server(domain: u16) -> Peer {
    let mut node = rustdds_node(domain.into(), "fibonacci_server");
    let (name, ty) = fibonacci();
    let qos = ActionServerQosPolicies {
        goal_service: default_qos(),
        result_service: default_qos(),
        cancel_service: default_qos(),
        feedback_publisher: default_qos(),
        status_publisher: status_qos(),
    };
    let server = node
        .create_action_server::<FibonacciGoal, FibonacciSequence, FibonacciSequence>(
            ServiceMapping::Enhanced,
            &name,
            &ty,
            qos,
        )
        .expect("action server");
    Peer::spawn(move |stop, lines| {
        let _node = node;
        let mut goals: Vec<Goal> = Vec::new();
        let mut next_step = Instant::now() + STEP;
        while !stop.load(Ordering::Relaxed) {
            let mut changed = false;
            while let Ok(Some((id, req))) = server.receive_goal() {
                if !goals.iter().any(|g| g.info.goal_id == req.goal_id) {
                    say(lines, format!("goal {:?} {}", req.goal_id, req.goal.order));
                    let info = GoalInfo {
                        goal_id: req.goal_id,
                        stamp: Time::now(),
                    };
                    goals.push(Goal {
                        info,
                        order: req.goal.order,
                        status: GoalStatusEnum::Accepted,
                        sequence: vec![],
                        waiting: vec![],
                    });
                    changed = true;
                }
                let stamp = Time::now();
                let _ = server.send_goal_response(
                    id,
                    SendGoalResponse {
                        accepted: true,
                        stamp,
                    },
                );
            }
            while let Ok(Some((id, req))) = server.receive_result_request() {
                match goals.iter_mut().find(|g| g.info.goal_id == req.goal_id) {
                    Some(g) => g.waiting.push(id),
                    None => {
                        let result = FibonacciSequence { sequence: vec![] };
                        let status = GoalStatusEnum::Unknown;
                        let _ = server.send_result(id, GetResultResponse { status, result });
                    }
                }
            }
            while let Ok(Some((id, req))) = server.receive_cancel_request() {
                let target = cancel_target(&req);
                let (return_code, goals_canceling) = match goals
                    .iter_mut()
                    .find(|g| g.info.goal_id == target)
                {
                    None => (CancelGoalResponseEnum::UnknownGoal, vec![]),
                    Some(g) if ended(g.status) => (CancelGoalResponseEnum::GoalTerminated, vec![]),
                    Some(g) => {
                        g.status = GoalStatusEnum::Canceling;
                        changed = true;
                        (CancelGoalResponseEnum::None, vec![g.info.clone()])
                    }
                };
                let response = CancelGoalResponse {
                    return_code,
                    goals_canceling,
                };
                let _ = server.send_cancel_response(id, response);
            }
            if Instant::now() >= next_step {
                next_step += STEP;
                for g in goals.iter_mut().filter(|g| !ended(g.status)) {
                    if g.status == GoalStatusEnum::Canceling {
                        g.status = GoalStatusEnum::Canceled;
                        say(lines, format!("canceled {:?}", g.info.goal_id));
                    } else {
                        g.status = GoalStatusEnum::Executing;
                        let n = g.sequence.len();
                        let next = if n < 2 {
                            n as i32
                        } else {
                            g.sequence[n - 1] + g.sequence[n - 2]
                        };
                        g.sequence.push(next);
                        let feedback = FibonacciSequence {
                            sequence: g.sequence.clone(),
                        };
                        let _ = server.send_feedback(g.info.goal_id, feedback);
                        if g.sequence.len() > g.order as usize {
                            g.status = GoalStatusEnum::Succeeded;
                            say(lines, format!("succeeded {:?}", g.info.goal_id));
                        }
                    }
                    changed = true;
                    if ended(g.status) {
                        for id in g.waiting.drain(..) {
                            let result = FibonacciSequence {
                                sequence: g.sequence.clone(),
                            };
                            let status = g.status;
                            let _ = server.send_result(id, GetResultResponse { status, result });
                        }
                    }
                }
            }
            if changed {
                let status_list = goals
                    .iter()
                    .map(|g| GoalStatus {
                        goal_info: g.info.clone(),
                        status: g.status,
                    })
                    .collect();
                let _ = server.send_goal_statuses(GoalStatusArray { status_list });
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    })
}

/// Where a client's cancel call is.
#[derive(Clone, Copy, PartialEq)]
enum Cancel {
    NotYet,
    Asked(ros2_client::RmwRequestId),
    Answered,
}

/// ros2-client's action client: one goal of `order`, its result asked for at once (as
/// rclcpp does), cancelled after `cancel_after` feedback messages if that is not 0. Logs
/// what the Python client prints: "accepted", "feedback 0,1,...", "status CODE",
/// "cancel RETURN_CODE N", "result STATUS 0,1,...", "done". A goal or result call that gets
/// no answer within 2 s is made again (a new goal: the server may not have been reachable
/// yet), as a ROS client would after its own timeout.
fn rust_client(domain: u16, order: i32, cancel_after: usize) -> Peer {
    let mut node = rustdds_node(domain.into(), "fibonacci_client");
    let (name, ty) = fibonacci();
    let qos = ActionClientQosPolicies {
        goal_service: default_qos(),
        result_service: default_qos(),
        cancel_service: default_qos(),
        feedback_subscription: default_qos(),
        status_subscription: status_qos(),
    };
    let client = node
        .create_action_client::<FibonacciGoal, FibonacciSequence, FibonacciSequence>(
            ServiceMapping::Enhanced,
            &name,
            &ty,
            qos,
        )
        .expect("action client");
    Peer::spawn(move |stop, lines| {
        let _node = node;
        let end = Instant::now() + CLIENT_DEADLINE;
        let retry = Duration::from_secs(2);
        let running = || !stop.load(Ordering::Relaxed) && Instant::now() < end;
        // The goal, until one is accepted.
        let mut accepted = None;
        while accepted.is_none() && running() {
            let Ok((req, goal_id)) = client.send_goal(FibonacciGoal { order }) else {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            };
            let asked = Instant::now();
            while asked.elapsed() < retry && running() {
                match client.receive_goal_response(req) {
                    Ok(Some(r)) if r.accepted => {
                        accepted = Some(goal_id);
                        break;
                    }
                    _ => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        }
        let Some(goal_id) = accepted else { return };
        say(lines, "accepted".into());
        // Each change of this goal's status, as one line.
        let read_status = |last: &mut Option<GoalStatusEnum>| {
            while let Ok(Some(a)) = client.receive_status() {
                for s in a
                    .status_list
                    .iter()
                    .filter(|s| s.goal_info.goal_id == goal_id)
                {
                    if *last != Some(s.status) {
                        *last = Some(s.status);
                        say(lines, format!("status {}", s.status as i8));
                    }
                }
            }
        };
        let (mut feedbacks, mut last_status, mut cancel) = (0, None, Cancel::NotYet);
        let mut result_req = client.request_result(goal_id).ok();
        let mut result_asked = Instant::now();
        while running() {
            while let Ok(Some(f)) = client.receive_feedback(goal_id) {
                feedbacks += 1;
                say(lines, format!("feedback {}", joined(&f.sequence)));
            }
            read_status(&mut last_status);
            if cancel_after > 0 && feedbacks >= cancel_after && cancel == Cancel::NotYet {
                if let Ok(req) = client.cancel_goal(goal_id) {
                    cancel = Cancel::Asked(req);
                }
            }
            if let Cancel::Asked(req) = cancel {
                if let Ok(Some(r)) = client.receive_cancel_response(req) {
                    let n = r.goals_canceling.len();
                    say(lines, format!("cancel {} {n}", r.return_code as i8));
                    cancel = Cancel::Answered;
                }
            }
            if let Some(r) = result_req {
                if let Ok(Some((status, result))) = client.receive_result(r) {
                    // The status topic and the result are separate streams: the status
                    // that ends the goal may come after the result. Wait for it, within
                    // a deadline.
                    let end = Instant::now() + Duration::from_secs(10);
                    while last_status != Some(status) && Instant::now() < end {
                        read_status(&mut last_status);
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    say(
                        lines,
                        format!("result {} {}", status as i8, joined(&result.sequence)),
                    );
                    say(lines, "done".into());
                    return;
                }
            }
            // A result call made before the importing proxy served get_result is lost:
            // asked again, as the feedback shows the goal is still running.
            if result_req.is_none() || result_asked.elapsed() > Duration::from_secs(10) {
                result_req = client.request_result(goal_id).ok();
                result_asked = Instant::now();
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    })
}

/// A Python cyclonedds Fibonacci server (rmw_cyclonedds's layout).
fn python_server(domain: u32) -> Proc {
    let step = STEP.as_millis().to_string();
    python(
        "server",
        "action.py",
        &["server", &domain.to_string(), "fibonacci", &step],
    )
}

/// A Python cyclonedds Fibonacci client; `guid` tells its calls from other clients'.
fn python_client(domain: u32, guid: u64, order: i32, cancel_after: usize) -> Proc {
    let args = [
        "client".to_string(),
        domain.to_string(),
        "fibonacci".into(),
        guid.to_string(),
        order.to_string(),
        cancel_after.to_string(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    python("client", "action.py", &args)
}

/// The lines a Python client printed up to its "done".
fn python_lines(c: &Proc, logs: &dyn Fn() -> String) -> Vec<String> {
    let end = Instant::now() + CLIENT_DEADLINE;
    let mut got = Vec::new();
    while Instant::now() < end {
        if let Some(l) = c.line(Duration::from_millis(100)) {
            let done = l == "done";
            got.push(l);
            if done {
                return got;
            }
        }
    }
    panic!("the Python client did not finish ({got:?}): {}", logs());
}

/// The lines a Rust client logged up to its "done".
fn rust_lines(c: &Peer, logs: &dyn Fn() -> String) -> Vec<String> {
    let done = c.wait_line("done", CLIENT_DEADLINE);
    assert!(
        done.is_some(),
        "the client did not finish ({:?}): {}",
        c.lines(),
        logs()
    );
    c.lines()
}

/// A goal of order 6 ran to success across roam: accepted, feedback, the status changes,
/// the whole sequence as the result.
fn assert_succeeded(lines: &[String], logs: &dyn Fn() -> String) {
    let has = |l: &str| lines.iter().any(|x| x == l);
    let feedback = lines.iter().filter(|l| l.starts_with("feedback ")).count();
    assert!(has("accepted"), "{lines:?}{}", logs());
    assert!(feedback >= 1, "no feedback crossed: {lines:?}{}", logs());
    assert!(
        has("status 4"),
        "SUCCEEDED never seen on the status topic: {lines:?}{}",
        logs()
    );
    assert!(has("result 4 0,1,1,2,3,5,8"), "{lines:?}{}", logs());
}

/// A long goal cancelled after two feedback messages: the server took the cancel, the goal
/// ended CANCELED with the partial sequence as its result.
fn assert_cancelled(lines: &[String], logs: &dyn Fn() -> String) {
    assert!(
        lines.iter().any(|l| l == "cancel 0 1"),
        "{lines:?}{}",
        logs()
    );
    let result = lines
        .iter()
        .find(|l| l.starts_with("result "))
        .expect("a result");
    let mut parts = result.split(' ').skip(1);
    assert_eq!(parts.next(), Some("5"), "not CANCELED: {lines:?}{}", logs());
    let numbers = parts.next().map_or(0, |s| s.split(',').count());
    assert!((2..LONG_ORDER as usize).contains(&numbers), "{lines:?}");
}

/// A goal long enough to be cancelled: [`LONG_ORDER`] steps.
const LONG_ORDER: i32 = 40;

/// A router and two proxies: the server's domain exports the action, the client's imports it.
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

    /// Asks the realm directory (`roam topics --json`, as a user would) until it lists
    /// `/fibonacci` offered by the server's proxy and called from the client's, with its type.
    fn wait_listed(&self) {
        self.0.net.issue("laptop", "client");
        let args = [
            "topics",
            "--realm",
            &self.0.net.realm,
            "--pki",
            &self.0.net.pki,
            "--id",
            "laptop",
            "--connect",
            &self.0.addr,
            "--json",
            "--wait",
            "5",
        ];
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let want = serde_json::json!([{
            "name": "/fibonacci",
            "types": ["example_interfaces/action/Fibonacci"],
            "offered_by": ["server-side"],
            "imported_by": ["client-side"],
        }]);
        let end = Instant::now() + Duration::from_secs(60);
        let mut last = serde_json::Value::Null;
        while Instant::now() < end {
            let mut p = Proc::spawn("topics", &args, None);
            if p.wait_exit(Duration::from_secs(30))
                .is_some_and(|s| s.success())
            {
                let out = p.line(Duration::from_secs(1)).unwrap_or_default();
                last = serde_json::from_str(&out).unwrap_or(serde_json::Value::Null);
                let members = |v: &serde_json::Value| -> serde_json::Value {
                    v.as_array()
                        .into_iter()
                        .flatten()
                        .map(|m| m["member"].clone())
                        .collect()
                };
                let got: serde_json::Value = last["actions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|a| {
                        serde_json::json!({
                            "name": a["name"], "types": a["types"],
                            "offered_by": members(&a["offered_by"]),
                            "imported_by": members(&a["imported_by"]),
                        })
                    })
                    .collect();
                if got == want {
                    return;
                }
            }
        }
        panic!(
            "the directory never listed the action as {want}: {last:#}{}",
            self.logs()
        );
    }

    fn logs(&self) -> String {
        self.0.logs()
    }
}

#[test]
fn a_cyclonedds_fibonacci_client_and_server_meet_through_roam() {
    let s = Setup::new("actions-cyclone", 18620, 220, 221);
    let server = python_server(220);
    let logs = || format!("{}\n--- server:\n{}", s.logs(), server.logs());
    let c = python_client(221, 7, 6, 0);
    assert_succeeded(&python_lines(&c, &logs), &logs);
    s.wait_listed();
    let c = python_client(221, 8, LONG_ORDER, 2);
    assert_cancelled(&python_lines(&c, &logs), &logs);
    assert!(
        wait_line(&server, "canceled ", Duration::from_secs(5)).is_some(),
        "{}",
        logs()
    );
}

#[test]
fn a_ros2_client_action_client_and_server_meet_through_roam() {
    let s = Setup::new("actions-rustdds", 18621, 222, 223);
    let server = rust_server(222);
    let logs = || format!("{}\n--- server:\n{:?}", s.logs(), server.lines());
    let c = rust_client(223, 6, 0);
    assert_succeeded(&rust_lines(&c, &logs), &logs);
    let c = rust_client(223, LONG_ORDER, 2);
    assert_cancelled(&rust_lines(&c, &logs), &logs);
    assert!(
        server
            .wait_line("canceled ", Duration::from_secs(5))
            .is_some(),
        "{}",
        logs()
    );
}

#[test]
fn each_kind_of_action_client_calls_the_other_kind_of_server_through_roam() {
    // ros2-client's client (rmw_fastrtps's convention) -> the CycloneDDS server.
    let s = Setup::new("actions-rust-to-cyclone", 18622, 224, 225);
    let server = python_server(224);
    let logs = || format!("{}\n--- server:\n{}", s.logs(), server.logs());
    let c = rust_client(225, 6, 0);
    assert_succeeded(&rust_lines(&c, &logs), &logs);
    let c = rust_client(225, LONG_ORDER, 2);
    assert_cancelled(&rust_lines(&c, &logs), &logs);
    drop((c, server, s));

    // The CycloneDDS client -> ros2-client's server.
    let s = Setup::new("actions-cyclone-to-rust", 18623, 226, 227);
    let server = rust_server(226);
    let logs = || format!("{}\n--- server:\n{:?}", s.logs(), server.lines());
    let c = python_client(227, 9, 6, 0);
    assert_succeeded(&python_lines(&c, &logs), &logs);
    let c = python_client(227, 10, LONG_ORDER, 2);
    assert_cancelled(&python_lines(&c, &logs), &logs);
}
