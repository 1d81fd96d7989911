//! What the gateway tests share: definitions on disk, starting `roam gateway`, roslibpy
//! clients (tests/py/gateway_client.py) and DDS peers (tests/py/gateway_dds.py).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::common::*;

pub const T: Duration = Duration::from_secs(40);

/// Interface definitions as a ROS install has them (a folder of packages), for the gateway.
pub fn definitions(dir: &Path) -> PathBuf {
    let root = dir.join("msgs");
    for (file, text) in [
        ("std_msgs/msg/String.msg", "string data\n"),
        (
            "std_msgs/msg/Header.msg",
            "builtin_interfaces/Time stamp\nstring frame_id\n",
        ),
        (
            "builtin_interfaces/msg/Time.msg",
            "int32 sec\nuint32 nanosec\n",
        ),
        (
            "geometry_msgs/msg/Point.msg",
            "float64 x\nfloat64 y\nfloat64 z\n",
        ),
        (
            "geometry_msgs/msg/PointStamped.msg",
            "std_msgs/Header header\nPoint point\n",
        ),
        (
            "example_interfaces/srv/AddTwoInts.srv",
            "int64 a\nint64 b\n---\nint64 sum\n",
        ),
        (
            "example_interfaces/action/Fibonacci.action",
            "int32 order\n---\nint32[] sequence\n---\nint32[] sequence\n",
        ),
    ] {
        let path = root.join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    root
}

/// Starts `roam gateway` linked to `router` with `extra` YAML; returns it and its port.
pub fn gateway(
    net: &Net,
    id: &str,
    router: &str,
    msg_paths: Option<&Path>,
    extra: &str,
) -> (Proc, u16) {
    // The gateway runs its own edge router: a router identity.
    net.issue(id, "router");
    let paths = msg_paths
        .map(|p| format!("msg_paths: [{}]\n", p.display()))
        .unwrap_or_default();
    let yaml = format!(
        "id: {id}\npki: {}\nupstream: [{router}]\nrealm: {}\n{paths}rosbridge:\n  listen: 127.0.0.1:0\n{extra}",
        net.pki, net.realm
    );
    let path = net.dir.join(format!("{id}.yaml"));
    std::fs::write(&path, yaml).unwrap();
    let p = Proc::spawn_without_ament(
        id,
        &["gateway".into(), "-c".into(), path.display().to_string()],
    );
    let end = Instant::now() + T;
    while Instant::now() < end {
        if let Some(l) = p.line(Duration::from_millis(200)) {
            let addr = l
                .strip_prefix("rosbridge listening ws://")
                .or_else(|| l.strip_prefix("rosbridge listening wss://"));
            if let Some(a) = addr {
                let port = a.rsplit(':').next().unwrap().parse().unwrap();
                return (p, port);
            }
        }
    }
    panic!("the gateway did not start: {}", p.logs());
}

/// A roslibpy program (tests/py/gateway_client.py).
pub fn client(name: &str, port: u16, args: &[&str]) -> Proc {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/gateway_client.py");
    let port = port.to_string();
    let mut a = vec!["-u", script.to_str().unwrap(), &port];
    a.extend_from_slice(args);
    Proc::spawn_system(name, "python3", &a)
}

/// A DDS peer of tests/py/gateway_dds.py.
pub fn dds(name: &str, args: &[&str]) -> Proc {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/gateway_dds.py");
    let mut a = vec!["-u", script.to_str().unwrap()];
    a.extend_from_slice(args);
    let p = Proc::spawn_system(name, "python3", &a);
    assert!(wait_line(&p, "ready", T).is_some(), "{name}: {}", p.logs());
    p
}

/// Like [`wait_line`], keeping the lines skipped (to show them when nothing came).
pub fn line_or_seen(p: &Proc, prefix: &str, timeout: Duration) -> Result<String, Vec<String>> {
    let end = Instant::now() + timeout;
    let mut seen = Vec::new();
    while Instant::now() < end {
        if let Some(l) = p.line(Duration::from_millis(100)) {
            if l.starts_with(prefix) {
                return Ok(l);
            }
            seen.push(l);
        }
    }
    Err(seen)
}

pub fn json_after(line: &str, prefix: &str) -> serde_json::Value {
    serde_json::from_str(line.strip_prefix(prefix).unwrap().trim()).unwrap()
}

/// A self-signed ECDSA P-256 certificate for 127.0.0.1 and localhost (as a site's own or a
/// public CA would give the gateway), made with openssl; returns (cert, key, the base64
/// SHA-256 of its public key, which a browser can be told to trust).
pub fn web_certificate(dir: &Path, name: &str) -> (PathBuf, PathBuf, String) {
    let cert = dir.join(format!("{name}.crt"));
    let key = dir.join(format!("{name}.key"));
    let ok = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:P-256",
        ])
        .args(["-nodes", "-days", "2", "-subj", &format!("/CN={name}")])
        .args(["-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl")
        .success();
    assert!(ok, "openssl req failed");
    let spki = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "openssl x509 -in '{}' -pubkey -noout | openssl pkey -pubin -outform der | openssl dgst -sha256 -binary | base64",
            cert.display()
        ))
        .output()
        .expect("openssl");
    let spki = String::from_utf8(spki.stdout).unwrap().trim().to_string();
    assert_eq!(spki.len(), 44, "SPKI hash: {spki:?}");
    (cert, key, spki)
}

/// A wss:// rosbridge client of tests/py/gateway_wss.py (Python's OpenSSL, `websockets`).
pub fn wss_client(name: &str, args: &[&str]) -> Proc {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/gateway_wss.py");
    let mut a = vec!["-u", script.to_str().unwrap()];
    a.extend_from_slice(args);
    Proc::spawn_system(name, "python3", &a)
}

/// The line starting with `prefix`, or a panic showing what the client and gateway said.
pub fn expect(p: &Proc, prefix: &str, gw: &Proc) -> String {
    line_or_seen(p, prefix, T).unwrap_or_else(|seen| {
        panic!(
            "{}: no {prefix:?} line; it printed {seen:?}\n{}\ngateway: {}",
            p.name,
            p.logs(),
            gw.logs()
        )
    })
}

/// A gRPC client program (tests/py/gateway_grpc_client.py).
pub fn grpc(name: &str, addr: &str, token: Option<&str>, args: &[&str]) -> Proc {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/gateway_grpc_client.py");
    let mut a = vec!["-u", script.to_str().unwrap(), addr];
    if let Some(t) = token {
        a.extend_from_slice(&["--token", t]);
    }
    a.extend_from_slice(args);
    Proc::spawn_system(name, "python3", &a)
}

/// `roam pub` of a std_msgs/String `{"data": "hi"}` on `topic` at 20 Hz through `router`, as
/// identity `id` (issued here).
pub fn string_talker(net: &Net, defs: &Path, router: &str, topic: &str, id: &str) -> Proc {
    net.issue(id, "client");
    let a: Vec<String> = [
        "pub",
        topic,
        "--type",
        "std_msgs/msg/String",
        "--realm",
        &net.realm,
        "--pki",
        &net.pki,
        "--id",
        id,
        "--connect",
        router,
        "--json",
        r#"{"data": "hi"}"#,
        "--count",
        "1000000",
        "--rate",
        "20",
        "--msg-path",
        defs.to_str().unwrap(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    Proc::spawn(&format!("pub-{id}"), &a, None)
}
