//! roam-mqtt-bench: seed 003's study on this machine. A 1.08 MB PointCloud2 and a 0.18 MB
//! scan (as a PointCloud2) at 10 Hz go vehicle DDS -> bridge -> Mosquitto -> bridge -> cloud
//! DDS -> echo -> back, through `roam mqtt` and through a Python bridge (paho + cyclonedds,
//! the role of mqtt_bridge in seed 003), with and without TLS to the broker, at QoS 0, 1 and
//! 2. Reports every hop inside the bridges and the round trip (mean, median, min, max, std)
//! and the round trip's ECDF. Writes bench/results/mqtt.json and bench/MQTT.md. Nothing is
//! asserted: this is a lab.

mod report;
mod run;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use roam_bench::machine;
use roam_bench::procs::Proc;
use run::{Env, Spec, System};

const USAGE: &str = "usage: roam-mqtt-bench [--quick] [--count N] [--only roam|python] [--out FILE.json] [--markdown FILE.md] [--report-from FILE.json]\n\
  --quick     50 messages per run (default 200), QoS 1 and 2 only for the point cloud\n\
  --count N   messages per run\n\
  --only S    one system\n\
  --out       results file (default bench/results/mqtt.json)\n\
  --markdown  report (default bench/MQTT.md)\n\
  --report-from FILE.json  write the report from earlier results, measuring nothing";

fn main() {
    let bench_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let (mut quick, mut count, mut only) = (false, None, None);
    let mut out = bench_dir.join("results/mqtt.json");
    let mut markdown = bench_dir.join("MQTT.md");
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_else(|| exit_usage());
        match a.as_str() {
            "--quick" => quick = true,
            "--count" => count = Some(value().parse().unwrap_or_else(|_| exit_usage())),
            "--only" => only = Some(value()),
            "--out" => out = PathBuf::from(value()),
            "--markdown" => markdown = PathBuf::from(value()),
            "--report-from" => {
                let path = value();
                let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
                    eprintln!("{path}: {e}");
                    std::process::exit(1)
                });
                let results: report::Results = serde_json::from_str(&text).unwrap_or_else(|e| {
                    eprintln!("{path}: {e}");
                    std::process::exit(1)
                });
                std::fs::write(&markdown, report::markdown(&results)).expect("writing the report");
                return;
            }
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            _ => exit_usage(),
        }
    }
    let count = count.unwrap_or(if quick { 50 } else { 200 });
    let (env, _broker) = match setup() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("roam-mqtt-bench: {e}");
            std::process::exit(1);
        }
    };
    let systems: Vec<System> = match only.as_deref() {
        Some("roam") => vec![System::Roam],
        Some("python") => vec![System::Python],
        _ => vec![System::Roam, System::Python],
    };
    let mut specs = Vec::new();
    for system in &systems {
        for (message, bytes) in [
            ("1.08 MB point cloud", 1_080_000),
            ("0.18 MB scan", 180_000),
        ] {
            for (tls, qos) in [(false, 0), (true, 0), (false, 1), (false, 2)] {
                if quick && bytes < 1_000_000 && qos > 0 {
                    continue;
                }
                specs.push(Spec {
                    system: *system,
                    message: message.to_string(),
                    bytes,
                    tls,
                    qos,
                    count,
                });
            }
        }
    }
    let mut results = report::Results {
        machine: machine::machine(),
        date: machine::date(),
        commit: machine::commit(),
        count,
        runs: Vec::new(),
        errors: Vec::new(),
    };
    for s in &specs {
        let t = Instant::now();
        eprintln!(
            "{} / {} / tls {} / QoS {} ...",
            s.system.label(),
            s.message,
            s.tls,
            s.qos
        );
        match run::run(&env, s) {
            Ok(r) => {
                eprintln!(
                    "  rtt median {:.0} us, {}/{} back ({:.0?})",
                    r.rtt.median_us,
                    r.received,
                    r.sent,
                    t.elapsed()
                );
                results.runs.push(r);
            }
            Err(e) => {
                eprintln!("  failed: {e}");
                results.errors.push(format!(
                    "{} {} tls={} qos={}: {e}",
                    s.system.label(),
                    s.message,
                    s.tls,
                    s.qos
                ));
            }
        }
    }
    let md = report::markdown(&results);
    print!("{md}");
    let json = serde_json::to_string_pretty(&results).expect("results serialize");
    if let Some(d) = out.parent() {
        let _ = std::fs::create_dir_all(d);
    }
    std::fs::write(&out, json + "\n").expect("writing the results");
    std::fs::write(&markdown, md).expect("writing the report");
    eprintln!("wrote {} and {}", out.display(), markdown.display());
    let _ = std::fs::remove_dir_all(&env.dir);
    if !results.errors.is_empty() {
        std::process::exit(1);
    }
}

/// Finds `roam` beside this program, makes TLS files, starts Mosquitto with a plain and a
/// TLS listener on loopback.
fn setup() -> Result<(Env, Proc), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let roam = exe.parent().ok_or("no program directory")?.join("roam");
    if !roam.is_file() {
        return Err(format!(
            "{} not found: build it first (cargo build --release -p roam -p roam-bench)",
            roam.display()
        ));
    }
    let dir = std::env::temp_dir().join(format!("roam-mqtt-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let openssl = |args: &[&str]| -> Result<(), String> {
        let o = Command::new("openssl")
            .args(args)
            .current_dir(&dir)
            .output()
            .map_err(|e| format!("openssl: {e}"))?;
        o.status
            .success()
            .then_some(())
            .ok_or_else(|| String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    openssl(
        &[
            &["req", "-x509"][..],
            &ec,
            &[
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "2",
                "-subj",
                "/CN=bench-ca",
            ],
        ]
        .concat(),
    )?;
    openssl(
        &[
            &["req"][..],
            &ec,
            &[
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=127.0.0.1",
            ],
        ]
        .concat(),
    )?;
    std::fs::write(dir.join("san.ext"), "subjectAltName=IP:127.0.0.1\n")
        .map_err(|e| e.to_string())?;
    openssl(&[
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
    ])?;
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(
        dir.join("server.key"),
        std::fs::Permissions::from_mode(0o644),
    );
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .map_err(|e| e.to_string())
    };
    let (plain_port, tls_port) = (free()?, free()?);
    let conf = format!(
        "per_listener_settings false\nallow_anonymous true\npersistence false\nlog_dest stderr\nlog_type error\nset_tcp_nodelay true\n\
         listener {plain_port} 127.0.0.1\n\
         listener {tls_port} 127.0.0.1\ncafile {d}/ca.pem\ncertfile {d}/server.pem\nkeyfile {d}/server.key\n",
        d = dir.display()
    );
    std::fs::write(dir.join("mosquitto.conf"), conf).map_err(|e| e.to_string())?;
    let broker = Proc::start(
        "mosquitto",
        std::path::Path::new("/usr/sbin/mosquitto"),
        &[
            "-c".into(),
            dir.join("mosquitto.conf").to_string_lossy().into_owned(),
        ],
    )?;
    let end = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", tls_port)).is_err() {
        if Instant::now() > end {
            return Err(format!("mosquitto did not start: {}", broker.log_tail()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let env = Env {
        roam,
        py_bridge: PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("mqtt/py_bridge.py"),
        ca: dir.join("ca.pem"),
        dir,
        plain_port,
        tls_port,
    };
    Ok((env, broker))
}

fn exit_usage() -> ! {
    eprintln!("{USAGE}");
    std::process::exit(2)
}
