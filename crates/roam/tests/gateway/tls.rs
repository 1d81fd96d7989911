//! The gateway over TLS with the deployment's PKI: clients verify the gateway's own identity
//! certificate against the deployment's `ca.pem`, and a client certificate from that PKI names
//! an identity with its own allow lists. Clients are Python programs on OpenSSL and the
//! `websockets` package (tests/py/gateway_wss.py), real sockets on loopback.
//!
//! Shown: a listed certificate reaches what its identity allows and is refused the rest; a
//! valid but unlisted certificate, no credentials, a certificate of another CA and plain
//! `ws://` reach nothing; with `client_certs: required`, a token alone no longer gets in.

use std::path::PathBuf;
use std::time::Duration;

use crate::common::*;
use crate::gateway_support::*;

const TOKEN: &str = "operator-token-0123456789";

fn auth(mode: &str) -> String {
    format!(
        "tls:\n  pki: true\n  client_certs: {mode}\nauth:\n  tokens:\n    - identity: operator\n      token: {TOKEN}\n      subscribe: {{allow: ['**']}}\n      publish: {{allow: ['**']}}\n  certificates:\n    - identity: alice\n      subscribe: {{allow: ['/chatter']}}\n      publish: {{allow: ['/chatter']}}\n"
    )
}

const SUBSCRIBE: &str = r#"{"op": "subscribe", "topic": "/chatter", "type": "std_msgs/String"}"#;

/// Client arguments: the URL, the deployment CA and the gateway's identity name, then `more`.
fn args<'a>(url: &'a str, ca: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![url, "--ca", ca, "--server-name", "gw.id.roam"];
    a.extend_from_slice(more);
    a
}

fn pem(net: &Net, name: &str) -> (String, String) {
    let p = PathBuf::from(&net.pki);
    (
        p.join(format!("{name}.pem")).display().to_string(),
        p.join(format!("{name}.key")).display().to_string(),
    )
}

/// The first `recv` line whose JSON satisfies `want`, or all lines seen.
fn recv_where(p: &Proc, want: impl Fn(&serde_json::Value) -> bool) -> Result<String, String> {
    let end = std::time::Instant::now() + T;
    let mut seen = Vec::new();
    while std::time::Instant::now() < end {
        if let Some(l) = p.line(Duration::from_millis(100)) {
            if l == "done" {
                break;
            }
            if let Some(j) = l.strip_prefix("recv ") {
                if serde_json::from_str(j).map(|v| want(&v)).unwrap_or(false) {
                    return Ok(l);
                }
            }
            seen.push(l);
        }
    }
    Err(format!("{seen:?}\n{}", p.logs()))
}

fn status_containing(p: &Proc, text: &str) -> Result<String, String> {
    recv_where(p, |v| {
        v["op"] == "status" && v["msg"].as_str().is_some_and(|m| m.contains(text))
    })
}

#[test]
fn client_certificates_name_identities_and_the_rest_reach_nothing() {
    let net = Net::new("gw-tls");
    let defs = definitions(&net.dir);
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    net.issue("alice", "client");
    net.issue("mallory", "client");
    let ca = PathBuf::from(&net.pki).join("ca.pem").display().to_string();
    let (gw, port) = gateway(&net, "gw", &addr, Some(&defs), &auth("optional"));
    let url = format!("wss://127.0.0.1:{port}/");
    let (alice_cert, alice_key) = pem(&net, "alice");
    let (mallory_cert, mallory_key) = pem(&net, "mallory");

    // Alice's certificate: she may subscribe to /chatter ...
    let alice = wss_client(
        "alice",
        &args(
            &url,
            &ca,
            &[
                "--cert",
                &alice_cert,
                "--key",
                &alice_key,
                "--seconds",
                "30",
                SUBSCRIBE,
                r#"{"op": "advertise", "topic": "/secret", "type": "std_msgs/String"}"#,
            ],
        ),
    );
    assert!(
        wait_line(&alice, "connected", T).is_some(),
        "alice: {}\ngateway: {}",
        alice.logs(),
        gw.logs()
    );
    // ... but not advertise /secret.
    let refused = status_containing(&alice, "alice may not publish on /secret");
    assert!(refused.is_ok(), "{refused:?}");
    // An operator with a token (no certificate: `optional`) publishes; Alice hears it.
    let _op = wss_client(
        "operator",
        &args(
            &url,
            &ca,
            &[
                "--token",
                TOKEN,
                "--seconds",
                "30",
                "--repeat",
                "0.2",
                r#"{"op": "advertise", "topic": "/chatter", "type": "std_msgs/String"}"#,
                r#"{"op": "publish", "topic": "/chatter", "msg": {"data": "over tls"}}"#,
            ],
        ),
    );
    let got = recv_where(&alice, |v| {
        v["op"] == "publish" && v["msg"]["data"] == "over tls"
    });
    assert!(
        got.is_ok(),
        "alice heard nothing: {got:?}\ngateway: {}",
        gw.logs()
    );

    // Mallory's certificate is valid but not listed: she reaches nothing.
    let mallory = wss_client(
        "mallory",
        &args(
            &url,
            &ca,
            &["--cert", &mallory_cert, "--key", &mallory_key, SUBSCRIBE],
        ),
    );
    let r = status_containing(&mallory, "\"mallory\" is valid but not listed");
    assert!(r.is_ok(), "{r:?}");
    let r = status_containing(&mallory, "not authenticated");
    assert!(r.is_ok(), "{r:?}");
    assert!(recv_where(&mallory, |v| v["op"] == "publish").is_err());

    // No certificate, no token: nothing.
    let nobody = wss_client("nobody", &args(&url, &ca, &[SUBSCRIBE]));
    let r = status_containing(&nobody, "not authenticated");
    assert!(r.is_ok(), "{r:?}");

    // A certificate of another CA fails the handshake; so does plain ws:// on a wss port.
    let (other_cert, other_key, _) = web_certificate(&net.dir, "stranger");
    let (oc, ok) = (
        other_cert.display().to_string(),
        other_key.display().to_string(),
    );
    let stranger = wss_client(
        "stranger",
        &args(&url, &ca, &["--cert", &oc, "--key", &ok, SUBSCRIBE]),
    );
    let l = line_or_seen(&stranger, "", T).expect("stranger printed nothing");
    assert!(
        l.starts_with("tls-error") || l.starts_with("error") || l.starts_with("closed"),
        "a certificate of another CA got in: {l}\n{}",
        stranger.logs()
    );
    assert!(recv_where(&stranger, |v| v["op"] == "publish").is_err());
    let plain = wss_client("plain", &[&format!("ws://127.0.0.1:{port}/"), SUBSCRIBE]);
    let l = line_or_seen(&plain, "", T).expect("plain client printed nothing");
    assert!(l.starts_with("error"), "plain ws:// on a wss port: {l}");
    // The server's certificate is checked too: a client expecting another name refuses it.
    let wrong = wss_client(
        "wrong-name",
        &[
            &url,
            "--ca",
            &ca,
            "--server-name",
            "cloud.id.roam",
            "--token",
            TOKEN,
        ],
    );
    let l = line_or_seen(&wrong, "", T).expect("wrong-name client printed nothing");
    assert!(l.starts_with("tls-error"), "{l}");
}

#[test]
fn with_client_certificates_required_a_token_alone_does_not_get_in() {
    let net = Net::new("gw-tls-required");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    net.issue("alice", "client");
    let ca = PathBuf::from(&net.pki).join("ca.pem").display().to_string();
    let (gw, port) = gateway(&net, "gw", &addr, None, &auth("required"));
    let url = format!("wss://127.0.0.1:{port}/");
    let (cert, key) = pem(&net, "alice");

    let token_only = wss_client(
        "token-only",
        &args(&url, &ca, &["--token", TOKEN, SUBSCRIBE]),
    );
    let l = line_or_seen(&token_only, "", T).expect("token-only client printed nothing");
    assert!(
        l.starts_with("tls-error") || l.starts_with("error") || l.starts_with("closed"),
        "a client without a certificate got in: {l}\ngateway: {}",
        gw.logs()
    );
    let alice = wss_client(
        "alice",
        &args(&url, &ca, &["--cert", &cert, "--key", &key, SUBSCRIBE]),
    );
    assert!(
        wait_line(&alice, "connected", T).is_some(),
        "alice: {}\ngateway: {}",
        alice.logs(),
        gw.logs()
    );
    // Connected and authenticated: no refusal comes back for her subscription.
    assert!(
        status_containing(&alice, "not").is_err(),
        "{}",
        alice.logs()
    );

    // Her certificate revoked, her next connection fails its handshake at the door.
    roam_ok(&["pki", "revoke", "alice", "--dir", &net.pki]);
    let again = wss_client(
        "alice-revoked",
        &args(&url, &ca, &["--cert", &cert, "--key", &key, SUBSCRIBE]),
    );
    let l = line_or_seen(&again, "", T).expect("the revoked client printed nothing");
    assert!(
        l.starts_with("tls-error") || l.starts_with("error") || l.starts_with("closed"),
        "a revoked certificate got in: {l}\ngateway: {}",
        gw.logs()
    );
}

/// A grpcio (PyPI) client of tests/py/gateway_grpc_client.py.
fn grpc_client(name: &str, args: &[&str]) -> Proc {
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/gateway_grpc_client.py");
    let mut a = vec!["-u", script.to_str().unwrap()];
    a.extend_from_slice(args);
    Proc::spawn_system(name, "python3", &a)
}

#[test]
fn grpc_over_tls_with_a_given_certificate_and_client_certificates() {
    let net = Net::new("gw-tls-grpc");
    let defs = definitions(&net.dir);
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    net.issue("alice", "client");
    let (cert, key, _) = web_certificate(&net.dir, "gateway-web");
    let extra = format!(
        "grpc:\n  listen: 127.0.0.1:0\ntls:\n  cert: {}\n  key: {}\n  client_certs: optional\nauth:\n  tokens:\n    - identity: operator\n      token: {TOKEN}\n      subscribe: {{allow: ['**']}}\n  certificates:\n    - identity: alice\n      subscribe: {{allow: ['/chatter']}}\n      publish: {{allow: ['/chatter']}}\n",
        cert.display(),
        key.display()
    );
    let (gw, _) = gateway(&net, "gw", &addr, Some(&defs), &extra);
    let l = wait_line(&gw, "grpc listening ", T).unwrap_or_else(|| panic!("{}", gw.logs()));
    assert!(l.ends_with(" (TLS)"), "{l}");
    let g = l["grpc listening ".len()..]
        .trim_end_matches(" (TLS)")
        .to_string();
    let ca = cert.display().to_string();
    let (ac, ak) = pem(&net, "alice");
    let alice = |name: &str, more: &[&str]| {
        let mut a = vec![g.as_str(), "--ca", &ca, "--cert", &ac, "--key", &ak];
        a.extend_from_slice(more);
        grpc_client(name, &a)
    };

    // Alice's certificate (Ed25519, from the deployment's PKI) over grpcio's BoringSSL.
    let sub = alice(
        "alice-sub",
        &[
            "sub",
            "/chatter",
            "--type",
            "std_msgs/String",
            "--count",
            "2",
        ],
    );
    assert!(
        wait_line(&sub, "subscribed", T).is_some(),
        "{}\ngateway: {}",
        sub.logs(),
        gw.logs()
    );
    let _pub = alice(
        "alice-pub",
        &[
            "pub",
            "/chatter",
            "std_msgs/String",
            r#"{"data": "tls $N"}"#,
        ],
    );
    let m = line_or_seen(&sub, "msg ", T);
    assert!(
        m.as_ref().is_ok_and(|l| l.contains("\"tls ")),
        "{m:?}\ngateway: {}",
        gw.logs()
    );
    // What her identity does not allow.
    let call = alice(
        "alice-call",
        &[
            "call",
            "/add_two_ints",
            "example_interfaces/srv/AddTwoInts",
            r#"{"a": 1, "b": 2}"#,
            "--retry-for",
            "0",
        ],
    );
    let e = line_or_seen(&call, "error ", T);
    assert!(
        e.as_ref()
            .is_ok_and(|l| l.starts_with("error PERMISSION_DENIED alice may not call")),
        "{e:?}"
    );
    // TLS but no credentials: nothing.
    let nobody = grpc_client("nobody", &[&g, "--ca", &ca, "list"]);
    let e = line_or_seen(&nobody, "error ", T);
    assert!(
        e.as_ref()
            .is_ok_and(|l| l.starts_with("error UNAUTHENTICATED")),
        "{e:?}"
    );
    // A plaintext channel to the TLS port gets no answer.
    let plain = grpc_client("plain", &[&g, "--token", TOKEN, "list"]);
    let e = line_or_seen(&plain, "error ", T);
    assert!(
        e.as_ref().is_ok_and(|l| l.starts_with("error UNAVAILABLE")),
        "{e:?}"
    );
}

#[test]
fn grpcio_takes_the_deployments_own_tls_server_certificate() {
    // grpcio's BoringSSL offers no Ed25519 in its handshake: `roam pki tls-server` gives the
    // gateway an ECDSA certificate from the deployment's CA, which `tls: pki: true` serves.
    let net = Net::new("gw-tls-pki-grpc");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let out = roam_ok(&[
        "pki",
        "tls-server",
        "gw",
        "--dir",
        &net.pki,
        "--host",
        "127.0.0.1",
    ]);
    assert!(out.contains("gw.tls.pem"), "{out}");
    let extra = format!(
        "grpc:\n  listen: 127.0.0.1:0\ntls:\n  pki: true\nauth:\n  tokens:\n    - identity: operator\n      token: {TOKEN}\n      subscribe: {{allow: ['**']}}\n"
    );
    let (gw, _) = gateway(&net, "gw", &addr, None, &extra);
    let l = wait_line(&gw, "grpc listening ", T).unwrap_or_else(|| panic!("{}", gw.logs()));
    let g = l["grpc listening ".len()..]
        .trim_end_matches(" (TLS)")
        .to_string();
    let ca = PathBuf::from(&net.pki).join("ca.pem").display().to_string();
    for (name, server_name) in [("by-identity", "gw.id.roam"), ("by-address", "127.0.0.1")] {
        let c = grpc_client(
            name,
            &[
                &g,
                "--ca",
                &ca,
                "--server-name",
                server_name,
                "--token",
                TOKEN,
                "list",
            ],
        );
        let l = line_or_seen(&c, "list ", T);
        assert!(
            l.is_ok(),
            "{name}: {l:?}\n{}\ngateway: {}",
            c.logs(),
            gw.logs()
        );
    }
}
