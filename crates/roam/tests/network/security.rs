//! Security properties end to end: who may link, who may read, who may write.
#![allow(clippy::cloned_ref_to_slice_refs)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::common::*;

const T: Duration = Duration::from_secs(20);

#[test]
fn a_certificate_from_another_ca_is_refused() {
    let net = Net::new("foreign-ca");
    let other = Net::new("foreign-ca-other");
    let (r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    other.issue("intruder", "client");
    let args: Vec<String> = [
        "sub",
        "/x",
        "--type",
        "t/msg/T",
        "--realm",
        &net.realm,
        "--pki",
        &other.pki,
        "--id",
        "intruder",
        "--connect",
        &a1,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let sub = Proc::spawn("intruder", &args, None);
    assert!(
        r1.wait_log("refused QUIC connection", T),
        "router did not log the refusal: {}",
        r1.logs()
    );
    assert!(sub.wait_log("cannot reach router", T));
    assert!(sub.line(Duration::from_millis(300)).is_none());
    // And a router from another CA cannot join the mesh either.
    let args: Vec<String> = [
        "router",
        "--id",
        "rogue",
        "--pki",
        &other.pki,
        "--connect",
        &a1,
        "--status-interval",
        "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    other.issue("rogue", "router");
    let rogue = Proc::spawn("rogue", &args, None);
    assert!(rogue.wait_log("cannot link to", T), "{}", rogue.logs());
}

#[test]
fn an_expired_certificate_is_refused() {
    let net = Net::new("expired");
    let (r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    roam_ok(&[
        "pki",
        "issue",
        "old",
        "--dir",
        &net.pki,
        "--role",
        "client",
        "--days",
        "1",
        "--backdate-days",
        "10",
    ]);
    let args: Vec<String> = [
        "sub",
        "/x",
        "--type",
        "t/msg/T",
        "--realm",
        &net.realm,
        "--pki",
        &net.pki,
        "--id",
        "old",
        "--connect",
        &a1,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let _sub = Proc::spawn("old", &args, None);
    assert!(r1.wait_log("refused QUIC connection", T), "{}", r1.logs());
    assert!(
        r1.logs().to_lowercase().contains("expired"),
        "refusal does not say why: {}",
        r1.logs()
    );
}

#[test]
fn a_peer_without_a_certificate_is_refused() {
    let net = Net::new("no-cert");
    let (r1, _) = net.router_with("r1", "127.0.0.1:0", &[], &["--listen-tcp", "127.0.0.1:0"]);
    let tcp = r1
        .line(Duration::from_secs(5))
        .and_then(|l| l.strip_prefix("listening tcp ").map(str::to_string))
        .expect("tcp addr");
    // openssl s_client presents no client certificate.
    let out = std::process::Command::new("openssl")
        .args([
            "s_client",
            "-connect",
            &tcp,
            "-tls1_3",
            "-servername",
            "router.roam",
        ])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("openssl");
    let _ = out;
    assert!(r1.wait_log("refused TCP connection", T), "{}", r1.logs());
    // A client certificate may not serve as a router.
    net.issue("laptop", "client");
    let bad = std::process::Command::new(ROAM)
        .args([
            "router",
            "--id",
            "laptop",
            "--pki",
            &net.pki,
            "--listen",
            "127.0.0.1:0",
        ])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("client certificate"));
}

#[test]
fn an_outsider_with_a_valid_certificate_can_neither_read_nor_write() {
    let net = Net::new("outsider");
    let (_r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let other_realm = net.dir.join("other.realm").to_string_lossy().into_owned();
    roam_ok(&["realm", "new", "other", "--out", &other_realm]);
    // The outsider learned the name by watching a router; it holds a valid certificate.
    let name = roam_ok(&[
        "name",
        "--realm",
        &net.realm,
        "/plans",
        "test_msgs/msg/Blob",
    ])
    .trim()
    .to_string();
    net.issue("outsider", "client");
    let outsider_args = |cmd: &str, extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = [
            cmd,
            "/plans",
            "--type",
            "test_msgs/msg/Blob",
            "--realm",
            &other_realm,
            "--pki",
            &net.pki,
            "--id",
            "outsider",
            "--connect",
            &a1,
            "--raw-name",
            &name,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };

    let mut member_sub = net.sub("/plans", "member", &a1, &[]);
    let eavesdropper = Proc::spawn("eavesdropper", &outsider_args("sub", &[]), None);
    wait_subscribed(&member_sub);
    wait_subscribed(&eavesdropper);
    let _p = net.publisher("/plans", "robot", &a1, &["--count", "20", "--size", "128"]);
    assert_eq!(collect(&member_sub, 20, T).len(), 20);
    // The eavesdropper received the envelopes but opened none.
    assert!(
        eavesdropper.wait_log("dropped an envelope: authentication failed", T),
        "{}",
        eavesdropper.logs()
    );
    assert!(eavesdropper.line(Duration::from_millis(200)).is_none());

    // Envelopes the outsider seals are dropped by members and counted as forged.
    let mut forger = Proc::spawn(
        "forger",
        &outsider_args("pub", &["--count", "20", "--size", "64", "--no-wait"]),
        None,
    );
    assert!(forger.wait_exit(T).is_some());
    assert!(
        collect(&member_sub, 1, Duration::from_millis(500)).is_empty(),
        "a forged envelope was accepted"
    );
    member_sub.terminate();
    assert!(
        member_sub.wait_log("received 20 messages; dropped: 20 forged", T),
        "{}",
        member_sub.logs()
    );
}

#[test]
fn replayed_envelopes_are_dropped_and_counted() {
    let net = Net::new("replay");
    let (_r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let mut sub = net.sub("/r", "cloud", &a1, &[]);
    wait_subscribed(&sub);
    let _p = net.publisher(
        "/r",
        "robot",
        &a1,
        &["--count", "50", "--size", "32", "--replay"],
    );
    let got = collect(&sub, 100, Duration::from_secs(5));
    assert_eq!(got.len(), 50, "replays were delivered");
    sub.terminate();
    assert!(
        sub.wait_log("received 50 messages; dropped: 0 forged, 50 replayed", T),
        "{}",
        sub.logs()
    );
}

#[test]
fn signed_mode_names_the_sender_and_refuses_impostors() {
    let net = Net::new("signed");
    net.issue("alice", "client");
    net.issue("mallory", "client");
    roam_ok(&[
        "realm",
        "add-member",
        "alice",
        "--realm",
        &net.realm,
        "--pki",
        &net.pki,
    ]);
    // Require signatures in this realm.
    let text = std::fs::read_to_string(&net.realm)
        .unwrap()
        .replace("require_signed: false", "require_signed: true");
    std::fs::write(&net.realm, text).unwrap();
    let (_r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let sub = net.sub("/orders", "cloud", &a1, &[]);
    wait_subscribed(&sub);
    let mut p = net.publisher(
        "/orders",
        "alice",
        &a1,
        &["--count", "3", "--size", "16", "--sign"],
    );
    let got = collect(&sub, 3, T);
    assert_eq!(got.len(), 3);
    assert!(p.wait_exit(T).is_some());
    let mut m = net.publisher(
        "/orders",
        "mallory",
        &a1,
        &["--count", "3", "--size", "16", "--sign", "--no-wait"],
    );
    assert!(m.wait_exit(T).is_some());
    let mut u = net.publisher(
        "/orders",
        "alice",
        &a1,
        &["--count", "3", "--size", "16", "--no-wait"],
    );
    assert!(u.wait_exit(T).is_some());
    assert!(
        collect(&sub, 1, Duration::from_millis(500)).is_empty(),
        "an impostor's or unsigned envelope was accepted"
    );
    assert!(sub.wait_log("signature by a key that is not a realm member", T));
    assert!(sub.wait_log("unsigned envelope where signatures are required", T));
}

/// Relays TCP between two ports and keeps a copy of every byte, like a capture on the link.
fn capturing_relay(upstream: String) -> (String, Arc<Mutex<Vec<u8>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(a) = conn else { return };
            let Ok(b) = TcpStream::connect(&upstream) else {
                return;
            };
            for (mut from, mut to) in [(a.try_clone().unwrap(), b.try_clone().unwrap()), (b, a)] {
                let s = s.clone();
                std::thread::spawn(move || {
                    let mut buf = [0u8; 65536];
                    while let Ok(n) = from.read(&mut buf) {
                        if n == 0 || to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                        s.lock().unwrap().extend_from_slice(&buf[..n]);
                    }
                });
            }
        }
    });
    (addr, seen)
}

#[test]
fn a_capture_of_a_router_link_holds_no_plaintext() {
    let net = Net::new("capture");
    let (r1, _) = net.router_with("r1", "127.0.0.1:0", &[], &["--listen-tcp", "127.0.0.1:0"]);
    let tcp = r1
        .line(Duration::from_secs(5))
        .and_then(|l| l.strip_prefix("listening tcp ").map(str::to_string))
        .expect("tcp addr");
    let (relay, captured) = capturing_relay(tcp);
    let (_r2, a2) = net.router("r2", "127.0.0.1:0", &[format!("tcp://{relay}")]);
    let _r1 = r1;
    let sub = net.sub("/secret_plans", "cloud", &a2, &["--count", "5"]);
    wait_subscribed(&sub);
    let mut p = net.publisher_stdin("/secret_plans", "robot", &format!("tcp://{relay}"), &[]);
    let mut stdin = p.stdin().unwrap();
    for _ in 0..5 {
        writeln!(stdin, "TOP-SECRET-COORDINATES-48.8584N").unwrap();
    }
    drop(stdin);
    assert_eq!(collect(&sub, 5, T).len(), 5);
    let bytes = captured.lock().unwrap().clone();
    assert!(bytes.len() > 500, "nothing captured");
    for needle in [&b"TOP-SECRET"[..], b"secret_plans", b"test_msgs"] {
        assert!(
            !bytes.windows(needle.len()).any(|w| w == needle),
            "plaintext {:?} on the wire",
            String::from_utf8_lossy(needle)
        );
    }
}
