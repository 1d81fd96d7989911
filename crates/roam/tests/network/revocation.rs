//! A stolen identity cut off: `roam pki revoke` handed to one router, the list across a mesh
//! with a cycle, the identity's links closed and its new ones refused at every router, while
//! everyone else's topic goes on in full and in order; a router that was down learns the list
//! when it comes back; forged and older lists refused; a certificate's expiry ends its link.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

const T: Duration = Duration::from_secs(20);

/// `roam` with `args`, its stdout and whether it succeeded.
fn roam(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(ROAM).args(args).output().expect("run roam");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `roam pki hand-in FILE` to `router` as the deployment's `admin`.
fn hand_in(net: &Net, file: &std::path::Path, router: &str) -> (bool, String, String) {
    roam(&[
        "pki",
        "hand-in",
        file.to_str().unwrap(),
        "--connect",
        router,
        "--pki",
        &net.pki,
        "--id",
        "admin",
    ])
}

fn tcp_addr(router: &Proc) -> String {
    router
        .line(Duration::from_secs(5))
        .and_then(|l| l.strip_prefix("listening tcp ").map(str::to_string))
        .expect("tcp address")
}

/// Lines of `p` read until `until`, each with when it was read.
fn drain_until(p: &Proc, until: Instant, into: &mut Vec<(Instant, Msg)>) {
    while Instant::now() < until {
        if let Some(l) = p.line(Duration::from_millis(5)) {
            if let Some(m) = parse_line(&l) {
                into.push((Instant::now(), m));
            }
        }
    }
}

#[test]
fn a_revoked_client_is_cut_off_across_the_mesh_and_refused_by_every_router() {
    let net = Net::new("revoke-mesh");
    // Three routers, each with its own PKI directory, in a triangle.
    let p1 = net.own_pki("r1", "router");
    let p2 = net.own_pki("r2", "router");
    let p3 = net.own_pki("r3", "router");
    let (r1, a1) = net.router_in(&p1, "r1", "127.0.0.1:0", &[], &[]);
    let (r2, a2) = net.router_in(&p2, "r2", "127.0.0.1:0", std::slice::from_ref(&a1), &[]);
    let (r3, a3) = net.router_in(
        &p3,
        "r3",
        "127.0.0.1:0",
        &[a1.clone(), a2.clone()],
        &["--listen-tcp", "127.0.0.1:0"],
    );
    let t3 = tcp_addr(&r3);
    for r in [&r1, &r2] {
        assert!(r.wait_log("link up", T), "{}", r.logs());
    }

    // The operator's reader on r1, the stolen laptop on r3 reading the same commands and
    // writing its own topic, and a reader of that topic on r1.
    let stolen = net.own_pki("stolen", "client");
    let operator_sub = net.sub("/cmd", "operator-sub", &a1, &[]);
    let thief_in = Proc::spawn(
        "thief-in",
        &net.endpoint_args_in(&stolen, "sub", "/cmd", "stolen", &a3, &[]),
        None,
    );
    let watch_sub = net.sub("/injected", "watcher", &a1, &[]);
    wait_subscribed(&operator_sub);
    wait_subscribed(&thief_in);
    wait_subscribed(&watch_sub);
    // The laptop writes with a second identity of its own.
    let stolen_out_pki = net.own_pki("stolen-out", "client");
    let thief_out = Proc::spawn(
        "thief-out",
        &net.endpoint_args_in(
            &stolen_out_pki,
            "pub",
            "/injected",
            "stolen-out",
            &a3,
            &["--size", "64", "--rate", "100", "--count", "100000"],
        ),
        None,
    );
    let count = 1500u64;
    let publisher = net.publisher(
        "/cmd",
        "operator",
        &a2,
        &[
            "--size",
            "64",
            "--rate",
            "300",
            "--count",
            &count.to_string(),
        ],
    );
    assert!(
        !collect(&thief_in, 20, T).is_empty(),
        "the stolen laptop reads before the revocation: {}",
        thief_in.logs()
    );
    assert!(
        !collect(&watch_sub, 5, T).is_empty(),
        "its messages arrive before"
    );

    // The operator revokes both of the laptop's identities from a shell of its own, handing
    // the list to r1 only.
    net.issue("admin", "client");
    let pki = net.pki.clone();
    let a1c = a1.clone();
    let started = Instant::now();
    let revoke = std::thread::spawn(move || {
        let first = roam(&[
            "pki",
            "revoke",
            "stolen-out",
            "--dir",
            &pki,
            "--reason",
            "key-compromise",
        ]);
        let second = roam(&[
            "pki",
            "revoke",
            "stolen",
            "--dir",
            &pki,
            "--reason",
            "key-compromise",
            "--connect",
            &a1c,
            "--id",
            "admin",
        ]);
        (first, second, Instant::now())
    });
    let mut read_by_thief = Vec::new();
    let mut injected = Vec::new();
    let until = Instant::now() + Duration::from_secs(6);
    while Instant::now() < until {
        drain_until(
            &thief_in,
            Instant::now() + Duration::from_millis(20),
            &mut read_by_thief,
        );
        drain_until(
            &watch_sub,
            Instant::now() + Duration::from_millis(20),
            &mut injected,
        );
    }
    let (first, second, done) = revoke.join().unwrap();
    assert!(first.0, "{first:?}");
    assert!(second.0, "revoke --connect failed: {second:?}");
    assert!(second.1.contains("holds revocation list 2"), "{second:?}");
    let last_read = read_by_thief
        .last()
        .map(|(t, _)| t.saturating_duration_since(started));
    let last_injected = injected
        .last()
        .map(|(t, _)| t.saturating_duration_since(started));
    eprintln!(
        "revocation: command took {:?}; last message read by the revoked identity {:?} after it started, last it delivered {:?}",
        done - started,
        last_read,
        last_injected
    );
    // Loopback goal: cut off within 2 s of the command (the command itself is a process
    // start and a handshake).
    assert!(
        last_read.is_none_or(|t| t < Duration::from_secs(2)),
        "{last_read:?}"
    );
    assert!(
        last_injected.is_none_or(|t| t < Duration::from_secs(2)),
        "{last_injected:?}"
    );
    assert!(
        r3.wait_log("closing the link: certificate revoked", T),
        "{}",
        r3.logs()
    );
    for r in [&r1, &r2, &r3] {
        assert!(
            r.wait_log("took revocation list 2", T),
            "{}: {}",
            r.name,
            r.logs()
        );
    }
    // The list reached r2 and r3 over links and is kept in their directories.
    for dir in [&p2, &p3] {
        assert!(std::path::Path::new(dir).join("revoked.crl").exists());
    }

    // Its new links are refused at every router, over QUIC and TCP.
    for (i, addr) in [a1.as_str(), a2.as_str(), &format!("tcp://{t3}")]
        .iter()
        .enumerate()
    {
        let again = Proc::spawn(
            &format!("thief-again-{i}"),
            &net.endpoint_args_in(&stolen, "sub", "/cmd", "stolen", addr, &[]),
            None,
        );
        assert!(
            again.wait_log("revoked", T),
            "reconnection to {addr} not refused as revoked: {}",
            again.logs()
        );
        assert!(again.line(Duration::from_millis(300)).is_none());
    }

    // The operator's own topic lost nothing and kept its order throughout.
    let got = collect(&operator_sub, count as usize, Duration::from_secs(30));
    let seqs: Vec<u64> = got.iter().map(|m| m.seq).collect();
    assert_eq!(
        seqs.len() as u64,
        count,
        "operator lost messages: {}",
        operator_sub.logs()
    );
    let in_order = seqs.iter().zip(1..).all(|(s, want)| *s == want);
    assert!(in_order, "operator's topic out of order or duplicated");
    drop(publisher);
    drop(thief_out);
}

/// A stolen robot: its proxy (a router identity with its own edge router) exports a DDS
/// talker's topic into the realm through r2; an operator's reader on r1 reads it. Revoking the
/// proxy's identity at r1 closes its link at r2 and refuses its redials: the robot's network
/// goes quiet in the realm within a fraction of a second.
#[test]
fn a_revoked_proxy_is_cut_off_and_its_robot_network_goes_quiet() {
    let net = Net::new("revoke-proxy");
    let (r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let (r2, a2) = net.router("r2", "127.0.0.1:0", std::slice::from_ref(&a1));
    assert!(r2.wait_log("link up", T), "{}", r2.logs());
    let robot = net.proxy(
        "stolen-robot",
        123,
        &a2,
        "exports:\n  - topic: /scan\n    realm: test\n",
    );
    let _talker = python(
        "talker",
        "talker.py",
        &["123", "rt/scan", "scan", "--period", "0.01"],
    );
    net.issue("watcher", "client");
    let mut args = net.endpoint_args_in(&net.pki, "sub", "/scan", "watcher", &a1, &[]);
    let at = args.iter().position(|a| a == "--type").unwrap() + 1;
    args[at] = "std_msgs/msg/String".into();
    let watcher = Proc::spawn("watcher", &args, None);
    wait_subscribed(&watcher);
    assert!(
        !collect(&watcher, 20, T).is_empty(),
        "the robot's topic crosses before: {}",
        robot.logs()
    );

    net.issue("admin", "client");
    let started = Instant::now();
    let (ok, out, err) = roam(&[
        "pki",
        "revoke",
        "stolen-robot",
        "--dir",
        &net.pki,
        "--reason",
        "key-compromise",
        "--connect",
        &a1,
        "--id",
        "admin",
    ]);
    assert!(
        ok && out.contains("holds revocation list 1"),
        "{out}\n{err}"
    );
    let mut seen = Vec::new();
    drain_until(&watcher, Instant::now() + Duration::from_secs(3), &mut seen);
    let last = seen
        .last()
        .map(|(t, _)| t.saturating_duration_since(started));
    eprintln!("revoked proxy: last message delivered {last:?} after the command started");
    assert!(last.is_none_or(|t| t < Duration::from_secs(2)), "{last:?}");
    assert!(
        r2.wait_log("closing the link: certificate revoked", T),
        "{}",
        r2.logs()
    );
    // Its redials are refused: the proxy is told why, and nothing crosses any more.
    assert!(robot.wait_log("revoked", T), "{}", robot.logs());
    assert!(watcher.line(Duration::from_secs(1)).is_none());
    drop(r1);
}

#[test]
fn a_router_that_was_down_learns_the_list_and_forged_or_older_lists_are_refused() {
    let net = Net::new("revoke-late");
    let p1 = net.own_pki("r1", "router");
    let p2 = net.own_pki("r2", "router");
    let (r1, a1) = net.router_in(&p1, "r1", "127.0.0.1:0", &[], &[]);
    let (mut r2, _) = net.router_in(&p2, "r2", "127.0.0.1:0", std::slice::from_ref(&a1), &[]);
    assert!(r1.wait_log("link up", T));
    r2.terminate();

    // Revoked while r2 is down; the operator puts the list in r1's directory, which r1
    // watches.
    net.issue("lost-laptop", "client");
    roam_ok(&["pki", "revoke", "lost-laptop", "--dir", &net.pki]);
    // A standard CRL: openssl prints it and verifies it against the CA.
    let crl = std::path::Path::new(&net.pki).join("revoked.crl");
    let ca = std::path::Path::new(&net.pki).join("ca.pem");
    let out = Command::new("openssl")
        .args(["crl", "-noout", "-text", "-in"])
        .arg(&crl)
        .arg("-CAfile")
        .arg(&ca)
        .output()
        .expect("openssl");
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && text.contains("verify OK") && text.contains("Revoked Certificates"),
        "{text}"
    );
    std::fs::copy(
        std::path::Path::new(&net.pki).join("revoked.crl"),
        std::path::Path::new(&p1).join("revoked.crl"),
    )
    .unwrap();
    assert!(r1.wait_log("took revocation list 1", T), "{}", r1.logs());

    // r2 comes back with the directory it had, learns the list from r1 and keeps it.
    let (r2, a2) = net.router_in(&p2, "r2", "127.0.0.1:0", std::slice::from_ref(&a1), &[]);
    assert!(r2.wait_log("took revocation list 1", T), "{}", r2.logs());
    assert!(std::path::Path::new(&p2).join("revoked.crl").exists());
    let laptop = net.sub("/x", "lost-laptop", &a2, &[]);
    assert!(laptop.wait_log("revoked", T), "{}", laptop.logs());

    // A list signed by another CA is refused, counted and changes nothing.
    let other = Net::new("revoke-late-other");
    other.issue("someone", "client");
    roam_ok(&["pki", "revoke", "someone", "--dir", &other.pki]);
    net.issue("admin", "client");
    let forged = std::path::Path::new(&other.pki).join("revoked.crl");
    let (ok, out, err) = hand_in(&net, &forged, &a1);
    assert!(!ok, "a forged list was handed in: {out}");
    assert!(err.contains("not by this deployment's CA"), "{err}");

    // An older list (number 1, after list 2) is answered with the newer one.
    let older = net.dir.join("list-1.crl");
    std::fs::copy(std::path::Path::new(&net.pki).join("revoked.crl"), &older).unwrap();
    net.issue("old-tablet", "client");
    roam_ok(&[
        "pki",
        "revoke",
        "old-tablet",
        "--dir",
        &net.pki,
        "--connect",
        &a1,
        "--id",
        "admin",
    ]);
    let (ok, out, err) = hand_in(&net, &older, &a1);
    assert!(ok, "{err}");
    assert!(
        out.contains("holds revocation list 2"),
        "never downgraded: {out}"
    );
    assert!(r2.wait_log("took revocation list 2", T), "{}", r2.logs());
}

#[test]
fn a_link_ends_when_its_certificate_expires() {
    let net = Net::new("expiry");
    let (r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    roam_ok(&[
        "pki",
        "issue",
        "temp",
        "--dir",
        &net.pki,
        "--role",
        "client",
        "--seconds",
        "4",
    ]);
    let sub = net.sub("/x", "temp", &a1, &[]);
    wait_subscribed(&sub);
    let up = Instant::now();
    assert!(
        r1.wait_log("closing the link: certificate expired", T),
        "{}",
        r1.logs()
    );
    eprintln!("expired link closed {:?} after it came up", up.elapsed());
    // And it cannot come back.
    assert!(sub.wait_log("expired", T), "{}", sub.logs());
}

#[test]
fn a_revoked_identity_is_cut_off_through_an_mqtt_broker_too() {
    let dir = crate::mqtt_support::test_dir("revoke-mqtt");
    let broker = crate::mqtt_support::Broker::started(&dir, None);
    let url = format!("mqtt://127.0.0.1:{}/site-3", broker.port);
    let net = Net::new("revoke-mqtt");
    // The hub's PKI directory is the CA's own, which it watches: the revocation reaches it
    // as a file.
    let (hub, _) = net.router_with("hub", "127.0.0.1:0", &[], &["--listen-mqtt", &url]);
    let laptop = net.sub("/x", "laptop", &url, &[]);
    wait_subscribed(&laptop);
    roam_ok(&["pki", "revoke", "laptop", "--dir", &net.pki]);
    assert!(
        hub.wait_log("closing the link: certificate revoked", T),
        "{}",
        hub.logs()
    );
    // Its next session through the broker is refused in the handshake. (Through a broker
    // the refused side sees no answer rather than the alert: the tunnel ends with the
    // handshake.)
    let again = net.sub("/x", "laptop", &url, &[]);
    assert!(
        hub.wait_log("refused a client: the peer certificate has been revoked", T),
        "{}",
        hub.logs()
    );
    assert!(again.wait_log("cannot reach router", T), "{}", again.logs());
    assert!(
        !again.logs().contains("subscribed through"),
        "{}",
        again.logs()
    );
    drop(laptop);
}
