//! What the MQTT bridge tests share: a Mosquitto broker (plain, or TLS with a password file)
//! started and stopped by PID, paho peers speaking mqtt_client's wire format
//! (tests/py/mqtt_client_peer.py), the echo node of seed 003's ping-pong, and `roam mqtt`.
#![allow(dead_code)]

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

pub const T: Duration = Duration::from_secs(30);

/// A free TCP port on loopback (bound and released: Mosquitto cannot be told to pick one).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A fresh directory for one test's files.
pub fn test_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("roam-mqtt-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// TLS material for the broker: a CA, and a server certificate for 127.0.0.1 (openssl).
pub struct BrokerTls {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

pub fn broker_tls(dir: &Path) -> BrokerTls {
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut a = vec!["req", "-x509"];
    a.extend(ec);
    a.extend([
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=mqtt-test-ca",
    ]);
    run(&a);
    let mut a = vec!["req"];
    a.extend(ec);
    a.extend([
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    run(&a);
    std::fs::write(
        dir.join("san.ext"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.pem",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    ]);
    // Mosquitto started as root drops to its own user, which must read the key.
    use std::os::unix::fs::PermissionsExt;
    let readable = std::fs::Permissions::from_mode(0o644);
    std::fs::set_permissions(dir.join("server.key"), readable).unwrap();
    BrokerTls {
        ca: dir.join("ca.pem"),
        cert: dir.join("server.pem"),
        key: dir.join("server.key"),
    }
}

/// A Mosquitto broker on 127.0.0.1, no persistence (a restart forgets sessions and
/// retained messages, as a crashed broker does).
pub struct Broker {
    pub port: u16,
    conf: PathBuf,
    pub proc: Option<Proc>,
}

impl Broker {
    /// Writes the configuration; `secure`: TLS and a password file (user `robot`, password
    /// `s3cret`), no anonymous clients.
    pub fn configure(dir: &Path, secure: Option<&BrokerTls>) -> Broker {
        Self::configure_with(dir, secure, "")
    }

    /// As [`Broker::configure`], with more configuration lines (e.g. `max_packet_size`).
    pub fn configure_with(dir: &Path, secure: Option<&BrokerTls>, extra: &str) -> Broker {
        let port = free_port();
        let mut conf = format!(
            "listener {port} 127.0.0.1\npersistence false\nlog_dest stderr\nlog_type error\nlog_type warning\nlog_type notice\n{extra}"
        );
        match secure {
            None => conf += "allow_anonymous true\n",
            Some(t) => {
                let pw = dir.join("passwords");
                let out = Command::new("mosquitto_passwd")
                    .args(["-b", "-c", pw.to_str().unwrap(), "robot", "s3cret"])
                    .output()
                    .expect("mosquitto_passwd (run scripts/setup.sh)");
                assert!(
                    out.status.success(),
                    "{}",
                    String::from_utf8_lossy(&out.stderr)
                );
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&pw, std::fs::Permissions::from_mode(0o644)).unwrap();
                conf += &format!(
                    "allow_anonymous false\npassword_file {}\ncafile {}\ncertfile {}\nkeyfile {}\n",
                    pw.display(),
                    t.ca.display(),
                    t.cert.display(),
                    t.key.display()
                );
            }
        }
        let path = dir.join("mosquitto.conf");
        std::fs::write(&path, conf).unwrap();
        Broker {
            port,
            conf: path,
            proc: None,
        }
    }

    /// Starts Mosquitto and waits for its port.
    pub fn start(&mut self) {
        let p = Proc::spawn_system(
            "mosquitto",
            "setpriv",
            &[
                "--pdeathsig",
                "KILL",
                "/usr/sbin/mosquitto",
                "-c",
                self.conf.to_str().unwrap(),
            ],
        );
        let end = Instant::now() + T;
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(
                Instant::now() < end,
                "mosquitto did not start: {}",
                p.logs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        self.proc = Some(p);
    }

    /// Kills Mosquitto (SIGKILL, by PID): a crash.
    pub fn kill(&mut self) {
        if let Some(mut p) = self.proc.take() {
            p.kill();
        }
    }

    pub fn started(dir: &Path, secure: Option<&BrokerTls>) -> Broker {
        let mut b = Broker::configure(dir, secure);
        b.start();
        b
    }
}

/// A paho peer (tests/py/mqtt_client_peer.py), after its "ready".
pub fn peer(name: &str, args: &[&str]) -> Proc {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/mqtt_client_peer.py");
    let mut a = vec!["-u", script.to_str().unwrap()];
    a.extend_from_slice(args);
    let p = Proc::spawn_system(name, "python3", &a);
    assert!(wait_line(&p, "ready", T).is_some(), "{name}: {}", p.logs());
    p
}

/// The echo node of seed 003's ping-pong (tests/py/mqtt_echo.py).
pub fn echo(domain: u32, from: &str, to: &str) -> Proc {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/py/mqtt_echo.py");
    let d = domain.to_string();
    let p = Proc::spawn_system(
        "echo",
        "python3",
        &["-u", script.to_str().unwrap(), &d, from, to],
    );
    assert!(wait_line(&p, "ready", T).is_some(), "echo: {}", p.logs());
    p
}

/// `roam mqtt --params FILE --domain D` with `params` written to `dir/name.yaml`.
pub fn bridge(dir: &Path, name: &str, domain: u32, params: &str, extra: &[&str]) -> Proc {
    let path = dir.join(format!("{name}.yaml"));
    std::fs::write(&path, params).unwrap();
    let mut a = vec![
        "mqtt".to_string(),
        "--params".to_string(),
        path.to_string_lossy().into_owned(),
        "--domain".to_string(),
        domain.to_string(),
    ];
    a.extend(extra.iter().map(|s| s.to_string()));
    let p = Proc::spawn(name, &a, None);
    assert!(
        wait_line(&p, "mqtt bridge up", T).is_some(),
        "{name}: {}",
        p.logs()
    );
    p
}
