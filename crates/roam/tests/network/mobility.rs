//! A robot whose address changes keeps its QUIC link: no reconnect, no lost subscription.
//!
//! The robot runs in a network namespace of its own, joined to this one by a veth pair; the
//! test moves it to a new address while messages flow. Needs root (as CI has) for `ip netns`.

use std::process::Command;
use std::time::Duration;

use crate::common::*;

/// A namespace and veth pair, removed on drop.
struct Host {
    ns: String,
    veth: String,
}

fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .expect("run ip (iproute2)");
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Host {
    /// Namespace `ns` reachable at `addr`/24 from this namespace's `gateway`/24.
    fn new(tag: &str, gateway: &str, addr: &str) -> Host {
        let ns = format!("roam-{tag}-{}", std::process::id());
        let veth = format!("rv{}", std::process::id() % 100_000);
        let h = Host {
            ns: ns.clone(),
            veth: veth.clone(),
        };
        ip(&["netns", "add", &ns]);
        ip(&[
            "link", "add", &veth, "type", "veth", "peer", "name", "eth0", "netns", &ns,
        ]);
        ip(&["addr", "add", &format!("{gateway}/24"), "dev", &veth]);
        ip(&["link", "set", &veth, "up"]);
        ip(&[
            "-n",
            &ns,
            "addr",
            "add",
            &format!("{addr}/24"),
            "dev",
            "eth0",
        ]);
        ip(&["-n", &ns, "link", "set", "eth0", "up"]);
        ip(&["-n", &ns, "link", "set", "lo", "up"]);
        h
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["link", "del", &self.veth])
            .output();
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).output();
    }
}

#[test]
fn a_robot_keeps_its_link_when_its_address_changes() {
    assert!(
        Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|o| o.stdout.starts_with(b"0")),
        "this test needs root for network namespaces (CI runs as root)"
    );
    let net = Net::new("mobility");
    let host = Host::new("robot", "10.231.7.1", "10.231.7.2");
    let (_r1, _a1) = net.router("r1", "10.231.7.1:0", &[]);
    let addr = _a1.clone();
    // The robot's subscriber runs inside the namespace and dials the router.
    net.issue("robot", "client");
    let mut args: Vec<String> = vec!["netns".into(), "exec".into(), host.ns.clone(), ROAM.into()];
    args.extend(
        [
            "sub",
            "/cmd_vel",
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
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let sub = Proc::spawn_program("robot-sub", "ip", &args);
    wait_subscribed(&sub);
    let _p = net.publisher(
        "/cmd_vel",
        "operator",
        &addr,
        &["--size", "48", "--rate", "100"],
    );
    let before = collect(&sub, 50, Duration::from_secs(10));
    assert_eq!(
        before.len(),
        50,
        "no traffic before the move: {}",
        sub.logs()
    );

    // The robot moves: its only address changes. (Linux drops secondary addresses with the
    // primary unless told to promote them.)
    ip(&[
        "netns",
        "exec",
        &host.ns,
        "sysctl",
        "-qw",
        "net.ipv4.conf.eth0.promote_secondaries=1",
    ]);
    ip(&[
        "-n",
        &host.ns,
        "addr",
        "add",
        "10.231.7.3/24",
        "dev",
        "eth0",
    ]);
    ip(&[
        "-n",
        &host.ns,
        "addr",
        "del",
        "10.231.7.2/24",
        "dev",
        "eth0",
    ]);
    let after = collect(&sub, 200, Duration::from_secs(10));
    assert_eq!(
        after.len(),
        200,
        "traffic stopped after the address change: {}",
        sub.logs()
    );
    // Same connection: the subscriber never lost its router, and nothing was duplicated.
    assert!(!sub.logs().contains("lost router"), "{}", sub.logs());
    assert!(after.windows(2).all(|w| w[0].seq < w[1].seq));
    assert!(before.last().unwrap().seq < after[0].seq);
}
