//! What a router or proxy says when it cannot listen: a bind error names the address and
//! what to do.

mod common;

use std::time::Duration;

use common::*;

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
