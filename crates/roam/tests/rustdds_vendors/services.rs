//! Services across DDS vendors and service conventions, through real `roam router` and
//! `roam proxy` processes: clients in one DDS domain, the server in another.
//!
//! Peers: ros2-client (RustDDS, in this test process) with `ServiceMapping::Enhanced`, which is
//! rmw_fastrtps's convention on the wire (no header; the request is known by its sample
//! identity, the reply names it in `related_sample_identity`), and the Python cyclonedds
//! AddTwoInts server and client (rmw_cyclonedds's convention: a header in the payload). The
//! proxies run with `convention: auto` (the default): RustDDS and Fast DDS endpoints are
//! served in rmw_fastrtps's convention, CycloneDDS ones in rmw_cyclonedds's.
//!
//! Everything stays on loopback (see tests/rustdds_vendors/topics.rs). Domains 210..219 and router ports
//! 18610..18619 are this file's alone.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::*;
use crate::fastdds_support::fastdds;
use crate::rustdds_support::rustdds_node;
use ros2_client::qos::{Durability, History, WhenFull};
use ros2_client::{Message, Name, QosProfile, ServiceMapping, ServiceTypeName};
use serde::{Deserialize, Serialize};

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

/// rmw's services profile: reliable, volatile, keep last 10.
fn services_qos() -> QosProfile {
    QosProfile::publisher_default()
        .reliability_reliable(WhenFull::DEFAULT)
        .durability(Durability::Volatile)
        .history(History::KeepLast { depth: 10 })
}

fn add_two_ints() -> (Name, ServiceTypeName) {
    (
        Name::new("/", "add_two_ints").unwrap(),
        ServiceTypeName::new("example_interfaces", "AddTwoInts"),
    )
}

/// A ros2-client AddTwoInts server on its own thread until dropped; counts what it served.
struct RustServer {
    stop: Arc<AtomicBool>,
    served: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RustServer {
    fn start(domain: u16, mapping: ServiceMapping) -> RustServer {
        let stop = Arc::new(AtomicBool::new(false));
        let served = Arc::new(AtomicU64::new(0));
        let (stop2, served2) = (stop.clone(), served.clone());
        let mut node = rustdds_node(domain.into(), "rustdds_server");
        let (name, ty) = add_two_ints();
        let server = node
            .create_server::<AddTwoIntsRequest, AddTwoIntsResponse>(
                mapping,
                &name,
                &ty,
                services_qos(),
                services_qos(),
            )
            .expect("server");
        let thread = std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                match server.receive_request() {
                    Ok(Some((id, r))) => {
                        let sum = r.a + r.b;
                        if server.send_response(id, AddTwoIntsResponse { sum }).is_ok() {
                            served2.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    // Polling: ros2-client's synchronous server has no blocking receive.
                    _ => std::thread::sleep(Duration::from_millis(2)),
                }
            }
            drop(server);
            drop(node);
        });
        RustServer {
            stop,
            served,
            thread: Some(thread),
        }
    }
}

impl Drop for RustServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a ros2-client client got: the sums of the calls answered, in call order.
type Answers = Arc<Mutex<Vec<(i64, i64, i64)>>>;

/// A ros2-client AddTwoInts client on its own thread: calls `count` times with
/// `a = base`, `b = call number`, one at a time, calling again when no answer comes within a
/// second (as a ROS client would after its own timeout), until all are answered, `deadline`
/// passes or it is dropped. Replies to other clients (and, for an Enhanced client, replies in
/// rmw_cyclonedds's layout meant for other clients, which it cannot read) are ignored.
struct RustClient {
    stop: Arc<AtomicBool>,
    answers: Answers,
    /// Replies it read that answer other calls (another client's, or an earlier try).
    foreign: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl RustClient {
    fn start(
        domain: u16,
        mapping: ServiceMapping,
        name: &str,
        base: i64,
        count: i64,
        deadline: Duration,
    ) -> RustClient {
        let stop = Arc::new(AtomicBool::new(false));
        let answers: Answers = Arc::default();
        let foreign = Arc::new(AtomicU64::new(0));
        let (stop2, answers2, foreign2) = (stop.clone(), answers.clone(), foreign.clone());
        let mut node = rustdds_node(domain.into(), name);
        let (svc, ty) = add_two_ints();
        let client = node
            .create_client::<AddTwoIntsRequest, AddTwoIntsResponse>(
                mapping,
                &svc,
                &ty,
                services_qos(),
                services_qos(),
            )
            .expect("client");
        let thread = std::thread::spawn(move || {
            let end = Instant::now() + deadline;
            let mut b = 1;
            while b <= count && Instant::now() < end && !stop2.load(Ordering::Relaxed) {
                let Ok(id) = client.send_request(AddTwoIntsRequest { a: base, b }) else {
                    std::thread::sleep(Duration::from_millis(50));
                    continue;
                };
                let retry = Instant::now() + Duration::from_secs(1);
                while Instant::now() < retry && !stop2.load(Ordering::Relaxed) {
                    match client.receive_response() {
                        Ok(Some((rid, r))) if rid == id => {
                            answers2.lock().unwrap().push((base, b, r.sum));
                            b += 1;
                            break;
                        }
                        Ok(Some(_)) => {
                            foreign2.fetch_add(1, Ordering::Relaxed);
                        }
                        Ok(None) | Err(_) => std::thread::sleep(Duration::from_millis(2)),
                    }
                }
            }
            drop(client);
            drop(node);
        });
        RustClient {
            stop,
            answers,
            foreign,
            thread: Some(thread),
        }
    }

    /// Waits until `count` calls are answered (or `timeout`); the answers.
    fn wait(&self, count: usize, timeout: Duration) -> Vec<(i64, i64, i64)> {
        let end = Instant::now() + timeout;
        while Instant::now() < end && self.answers.lock().unwrap().len() < count {
            std::thread::sleep(Duration::from_millis(20));
        }
        self.answers.lock().unwrap().clone()
    }
}

impl Drop for RustClient {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Every answer is right for its own call: sum = a + b, calls 1..=count in order.
fn assert_own_answers(
    answers: &[(i64, i64, i64)],
    base: i64,
    count: i64,
    logs: &dyn Fn() -> String,
) {
    let expected: Vec<(i64, i64, i64)> = (1..=count).map(|b| (base, b, base + b)).collect();
    assert_eq!(answers, expected.as_slice(), "{}", logs());
}

/// The lines of a Python service.py client up to its "done".
fn python_replies(c: &Proc, timeout: Duration, logs: &dyn Fn() -> String) -> Vec<String> {
    let end = Instant::now() + timeout;
    let mut replies = Vec::new();
    while Instant::now() < end {
        match c.line(Duration::from_millis(100)) {
            Some(l) if l == "done" => return replies,
            Some(l) => replies.push(l),
            None => {}
        }
    }
    panic!("the Python client did not finish ({replies:?}): {}", logs());
}

/// A router, the proxy of the server's domain and the proxy of the clients' domain, with
/// `convention` (if any) in both service entries.
struct Setup {
    net: Net,
    _router: Proc,
    server_side: Proc,
    client_side: Proc,
}

impl Setup {
    fn new(test: &str, port: u16, server_domain: u32, client_domain: u32, extra: &str) -> Setup {
        Self::with(test, port, (server_domain, extra), (client_domain, extra))
    }

    /// With each side's own extra lines in its service entry.
    fn with(
        test: &str,
        port: u16,
        (server_domain, server_extra): (u32, &str),
        (client_domain, client_extra): (u32, &str),
    ) -> Setup {
        let net = Net::new(test);
        let (router, addr) = net.router("cloud", &format!("127.0.0.1:{port}"), &[]);
        let server_side = net.proxy(
            "server-side",
            server_domain,
            &addr,
            &format!("exports:\n  - service: /add_two_ints\n    realm: test\n{server_extra}"),
        );
        let client_side = net.proxy(
            "client-side",
            client_domain,
            &addr,
            &format!("imports:\n  - service: /add_two_ints\n    realm: test\n{client_extra}"),
        );
        Setup {
            net,
            _router: router,
            server_side,
            client_side,
        }
    }

    fn logs(&self) -> String {
        format!(
            "\n--- server-side proxy:\n{}\n--- client-side proxy:\n{}",
            self.server_side.logs(),
            self.client_side.logs()
        )
    }
}

#[test]
fn a_fast_convention_client_calls_a_fast_convention_server_through_roam() {
    let s = Setup::new("svc-fast-fast", 18610, 210, 211, "");
    let server = RustServer::start(210, ServiceMapping::Enhanced);
    let client = RustClient::start(
        211,
        ServiceMapping::Enhanced,
        "enhanced_client",
        100,
        5,
        Duration::from_secs(60),
    );
    let answers = client.wait(5, Duration::from_secs(60));
    assert_own_answers(&answers, 100, 5, &|| s.logs());
    assert!(server.served.load(Ordering::Relaxed) >= 5);
    assert!(
        s.client_side
            .wait_log("rmw_fastrtps's convention", Duration::from_secs(1)),
        "{}",
        s.logs()
    );
    drop(s.net);
}

#[test]
fn a_fast_convention_client_calls_a_cyclonedds_server_through_roam() {
    let _domains = DOMAINS_212_213.lock().unwrap_or_else(|p| p.into_inner());
    let s = Setup::new("svc-fast-cyclone", 18611, 212, 213, "");
    let _server = python("server", "service.py", &["server", "212", "add_two_ints"]);
    let client = RustClient::start(
        213,
        ServiceMapping::Enhanced,
        "enhanced_client",
        300,
        5,
        Duration::from_secs(60),
    );
    let answers = client.wait(5, Duration::from_secs(60));
    assert_own_answers(&answers, 300, 5, &|| s.logs());
}

/// Two tests share domains 212 and 213 (the file has ten): one at a time.
static DOMAINS_212_213: Mutex<()> = Mutex::new(());

/// `convention: cyclonedds` on the clients' side: a ros2-client node built with
/// `ServiceMapping::Cyclone` (RustDDS, which `auto` takes for rmw_fastrtps's convention) is
/// forwarded verbatim, and calls a server in rmw_fastrtps's convention on the other side.
#[test]
fn a_configured_convention_overrides_the_vendor() {
    let _domains = DOMAINS_212_213.lock().unwrap_or_else(|p| p.into_inner());
    let s = Setup::with(
        "svc-configured",
        18611,
        (212, ""),
        (213, "    convention: cyclonedds\n"),
    );
    let _server = RustServer::start(212, ServiceMapping::Enhanced);
    let client = RustClient::start(
        213,
        ServiceMapping::Cyclone,
        "cyclone_mapping_client",
        600,
        5,
        Duration::from_secs(60),
    );
    let answers = client.wait(5, Duration::from_secs(60));
    assert_own_answers(&answers, 600, 5, &|| s.logs());
    // No RustDDS participant on the clients' side: nothing there needs one.
    assert!(
        !s.client_side.logs().contains("RustDDS participant up"),
        "{}",
        s.logs()
    );
}

#[test]
fn a_cyclonedds_client_calls_a_fast_convention_server_through_roam() {
    let s = Setup::new("svc-cyclone-fast", 18612, 214, 215, "");
    let server = RustServer::start(214, ServiceMapping::Enhanced);
    // The server side must see its server before the client calls: the proxy hands
    // requests to a server in the convention that server speaks.
    assert!(
        s.server_side
            .wait_log("a local server of the service", Duration::from_secs(30)),
        "{}",
        s.logs()
    );
    let c = python(
        "client",
        "service.py",
        &["client", "215", "add_two_ints", "4000", "5"],
    );
    let replies = python_replies(&c, Duration::from_secs(60), &|| s.logs());
    let expected: Vec<String> = (1..=5).map(|b| format!("reply {b} {}", 4000 + b)).collect();
    assert_eq!(replies, expected, "{}", s.logs());
    assert!(server.served.load(Ordering::Relaxed) >= 5);
}

#[test]
fn mixed_clients_at_once_each_get_exactly_their_own_answers() {
    let s = Setup::new("svc-mixed", 18613, 216, 217, "");
    let server = RustServer::start(216, ServiceMapping::Enhanced);
    assert!(
        s.server_side
            .wait_log("a local server of the service", Duration::from_secs(30)),
        "{}",
        s.logs()
    );
    // Two clients in rmw_fastrtps's convention and one in rmw_cyclonedds's, in one domain,
    // calling at the same time.
    let a = RustClient::start(
        217,
        ServiceMapping::Enhanced,
        "enhanced_a",
        1000,
        8,
        Duration::from_secs(90),
    );
    let b = RustClient::start(
        217,
        ServiceMapping::Enhanced,
        "enhanced_b",
        2000,
        8,
        Duration::from_secs(90),
    );
    let c = python(
        "client",
        "service.py",
        &["client", "217", "add_two_ints", "3000", "8"],
    );
    let replies = python_replies(&c, Duration::from_secs(90), &|| s.logs());
    let expected: Vec<String> = (1..=8).map(|n| format!("reply {n} {}", 3000 + n)).collect();
    assert_eq!(replies, expected, "{}", s.logs());
    assert_own_answers(&a.wait(8, Duration::from_secs(60)), 1000, 8, &|| s.logs());
    assert_own_answers(&b.wait(8, Duration::from_secs(60)), 2000, 8, &|| s.logs());
    // Replies go to every client, as on DDS: each saw the other's and took only its own.
    assert!(a.foreign.load(Ordering::Relaxed) + b.foreign.load(Ordering::Relaxed) > 0);
    assert!(server.served.load(Ordering::Relaxed) >= 24);
}

/// The "answer a=.. b=.. sum=.." lines of a Fast DDS client up to its "done ..." line.
fn fastdds_answers(
    c: &Proc,
    timeout: Duration,
    logs: &dyn Fn() -> String,
) -> (Vec<String>, String) {
    let end = Instant::now() + timeout;
    let mut answers = Vec::new();
    while Instant::now() < end {
        match c.line(Duration::from_millis(100)) {
            Some(l) if l.starts_with("done") => return (answers, l),
            Some(l) if l.starts_with("answer") || l.starts_with("timeout") => answers.push(l),
            _ => {}
        }
    }
    panic!(
        "the Fast DDS client did not finish ({answers:?}): {}\n--- client:\n{}",
        logs(),
        c.logs()
    );
}

fn fastdds_expected(a: i64, b: i64, calls: i64) -> Vec<String> {
    (0..calls)
        .map(|i| format!("answer a={} b={b} sum={}", a + i, a + i + b))
        .collect()
}

/// Real Fast DDS 2.9 nodes (tests/fastdds/node.cpp, rmw_fastrtps's convention): a Fast DDS
/// server called at once by a Fast DDS client, a Fast DDS client that does not name its reply
/// reader (older rmw_fastrtps) and a Python cyclonedds client (ros2-client clients are in the
/// tests above); then the same Fast DDS client calling a CycloneDDS server. Domains 218 and 219 only, so
/// the phases run one after the other.
#[test]
fn fastdds_nodes_call_and_serve_through_roam_with_every_other_kind_of_peer() {
    let s = Setup::new("svc-fastdds", 18614, 218, 219, "");
    let logs = || s.logs();
    let mut server = fastdds("fastdds-server", "server", 218, &[]);
    assert!(
        s.server_side
            .wait_log("a local server of the service", Duration::from_secs(30)),
        "{}",
        s.logs()
    );
    let calls = ["--calls", "6", "--b", "1", "--timeout", "5"];
    let fast = fastdds(
        "fastdds-client",
        "client",
        219,
        &[&calls[..], &["--a", "100"]].concat(),
    );
    let legacy = fastdds(
        "fastdds-legacy",
        "client",
        219,
        &[&calls[..], &["--a", "200", "--legacy"]].concat(),
    );
    let python_client = python(
        "python-client",
        "service.py",
        &["client", "219", "add_two_ints", "3000", "6"],
    );
    for (c, a) in [(&fast, 100), (&legacy, 200)] {
        let (answers, _) = fastdds_answers(c, Duration::from_secs(90), &logs);
        let expected = fastdds_expected(a, 1, 6);
        assert_eq!(answers, expected, "{}\n--- client:\n{}", logs(), c.logs());
    }
    let replies = python_replies(&python_client, Duration::from_secs(90), &logs);
    let expected: Vec<String> = (1..=6).map(|n| format!("reply {n} {}", 3000 + n)).collect();
    assert_eq!(replies, expected, "{}", logs());
    server.terminate();
    // The realm no longer hears of a server in that convention here.
    assert!(
        s.server_side
            .wait_log("no longer offered to the realm", Duration::from_secs(30)),
        "{}",
        s.logs()
    );

    // Phase 2: a Fast DDS client calls a CycloneDDS server.
    let _cyclone_server = python("server", "service.py", &["server", "218", "add_two_ints"]);
    let c = fastdds(
        "fastdds-client-2",
        "client",
        219,
        &["--calls", "5", "--a", "700", "--b", "2", "--timeout", "5"],
    );
    let (answers, _) = fastdds_answers(&c, Duration::from_secs(90), &logs);
    assert_eq!(
        answers,
        fastdds_expected(700, 2, 5),
        "{}\n--- client:\n{}",
        logs(),
        c.logs()
    );
}
