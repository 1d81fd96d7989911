//! What a router or proxy says when it cannot listen, and when it stops: a bind error names
//! the address and what to do; links closed by a clean shutdown are not reported as lost.

use std::time::Duration;

use crate::common::*;

const T: Duration = Duration::from_secs(20);
/// A proxy needs something to do to start.
const IMPORT: &str = "imports:\n  - topic: /x\n    realm: test\n";

/// Runs `roam ARGS` to its end; returns its stderr, and asserts that it failed.
fn roam_fails(args: &[&str]) -> String {
    let out = std::process::Command::new(ROAM)
        .args(args)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "roam {args:?} should fail: {err}");
    err
}

#[test]
fn a_port_in_use_is_named_with_what_to_do() {
    let net = Net::new("port-in-use");
    let (mut r1, quic) =
        net.router_with("r1", "127.0.0.1:0", &[], &["--listen-tcp", "127.0.0.1:0"]);
    let tcp = r1
        .line(Duration::from_secs(5))
        .and_then(|l| l.strip_prefix("listening tcp ").map(str::to_string))
        .expect("tcp address");
    net.issue("r2", "router");
    let base = ["router", "--id", "r2", "--pki", &net.pki];

    let err = roam_fails(&[&base[..], &["--listen", &quic]].concat());
    for needle in [
        &format!("cannot listen for QUIC (UDP) links on {quic}"),
        "another roam router or proxy",
        "--listen",
    ] {
        assert!(err.contains(needle), "no {needle:?} in: {err}");
    }

    let err = roam_fails(
        &[
            &base[..],
            &["--listen", "127.0.0.1:0", "--listen-tcp", &tcp],
        ]
        .concat(),
    );
    for needle in [
        &format!("cannot listen for TCP+TLS links on {tcp}"),
        "another roam router or proxy",
        "--listen-tcp",
    ] {
        assert!(err.contains(needle), "no {needle:?} in: {err}");
    }

    // A proxy's edge router says the same, for its `listen:` address.
    let mut proxy = net.proxy("edge", 31, &quic, &format!("listen: {quic}\n{IMPORT}"));
    assert!(
        proxy.wait_exit(T).is_some_and(|s| !s.success()),
        "the proxy should stop: {}",
        proxy.logs()
    );
    let err = proxy.logs();
    assert!(
        err.contains(&format!("cannot listen for QUIC (UDP) links on {quic}"))
            && err.contains("listen: in the config file"),
        "{err}"
    );
    r1.terminate();
}

#[test]
fn links_closed_by_a_clean_shutdown_are_not_reported_lost() {
    let net = Net::new("clean-shutdown");
    let (_r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let (mut r2, _) = net.router("r2", "127.0.0.1:0", std::slice::from_ref(&a1));
    let mut proxy = net.proxy("robot", 32, &a1, IMPORT);
    for (p, what) in [(&r2, "router"), (&proxy, "proxy")] {
        assert!(
            p.wait_log(&format!("link to r1 (quic://{a1}) up"), T),
            "the {what} did not link: {}",
            p.logs()
        );
    }
    for (p, what) in [(&mut r2, "router"), (&mut proxy, "proxy")] {
        assert!(p.terminate().is_some_and(|s| s.success()), "{}", p.logs());
        let logs = p.logs();
        assert!(
            logs.contains(&format!(
                "link to quic://{a1} closed: the router is shutting down"
            )),
            "the {what} did not say why its link closed:\n{logs}"
        );
        assert!(
            !logs.contains("lost; reconnecting"),
            "the {what} took its own shutdown for a lost link:\n{logs}"
        );
    }
}
