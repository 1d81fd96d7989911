//! One run of seed 003's ping-pong: a vehicle DDS domain and a cloud DDS domain, one bridge on
//! each, joined only through Mosquitto. This process is both ROS sides: on the vehicle it
//! publishes `/ping` (a PointCloud2 stamped with the send time and a sequence number) at
//! 10 Hz and reads `/pong`; on the cloud it echoes `/ping` onto `/pong` unchanged. The round
//! trip is measured here; each bridge reports the time messages spent inside it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use roam_bench::procs::{cyclonedds_uri, Proc, Usage};
use roam_bench::ros_msgs::{self, Kind, Stamp};
use roam_dds::{Participant, Qos, Reader, TopicInfo, Writer};
use serde::{Deserialize, Serialize};

/// Which bridge carries the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum System {
    /// `roam mqtt` with mqtt_client parameter files.
    Roam,
    /// bench/mqtt/py_bridge.py (paho-mqtt + cyclonedds).
    Python,
}

impl System {
    pub fn label(self) -> &'static str {
        match self {
            System::Roam => "roam mqtt",
            System::Python => "Python bridge (paho + cyclonedds)",
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Spec {
    pub system: System,
    pub message: String,
    pub bytes: usize,
    pub tls: bool,
    pub qos: u8,
    pub count: usize,
}

/// Figures in microseconds, as roam-mqtt's hop stats give them.
pub type Summary = roam_mqtt::hops::HopSummary;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Run {
    pub spec: Spec,
    pub sent: usize,
    pub received: usize,
    pub rtt: Summary,
    /// Every round trip in microseconds, sorted (the ECDF).
    pub rtt_us: Vec<f64>,
    /// The hops inside the bridges: vehicle ros2mqtt, cloud mqtt2ros, cloud ros2mqtt,
    /// vehicle mqtt2ros.
    pub hops: BTreeMap<String, Summary>,
    pub usage: Vec<Usage>,
}

pub struct Env {
    pub roam: PathBuf,
    pub py_bridge: PathBuf,
    pub dir: PathBuf,
    pub plain_port: u16,
    pub tls_port: u16,
    pub ca: PathBuf,
}

const VEHICLE: u32 = 61;
const CLOUD: u32 = 62;

fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

pub fn run(env: &Env, spec: &Spec) -> Result<Run, String> {
    let port = if spec.tls {
        env.tls_port
    } else {
        env.plain_port
    };
    let tag = format!(
        "{:?}-{}-{}-q{}",
        spec.system, spec.bytes, spec.tls, spec.qos
    );
    let stats = |side: &str| env.dir.join(format!("{tag}-{side}.json"));
    let mut bridges = match spec.system {
        System::Roam => vec![
            roam_bridge(env, "vehicle", VEHICLE, port, spec, &stats("vehicle"))?,
            roam_bridge(env, "cloud", CLOUD, port, spec, &stats("cloud"))?,
        ],
        System::Python => vec![
            py_bridge(env, "vehicle", VEHICLE, port, spec, &stats("vehicle"))?,
            py_bridge(env, "cloud", CLOUD, port, spec, &stats("cloud"))?,
        ],
    };

    let config = cyclonedds_uri();
    let dds = |d| Participant::new(d, Some(&config)).map_err(|e| format!("DDS: {e}"));
    let (vehicle, cloud) = (dds(VEHICLE)?, dds(CLOUD)?);
    let ty = Kind::PointCloud2.dds_type();
    let qos = Qos::default();
    let ping = Writer::new(&vehicle, &TopicInfo::keyless("rt/ping", ty), &qos)
        .map_err(|e| format!("ping writer: {e}"))?;
    let pong_w = Arc::new(
        Writer::new(&cloud, &TopicInfo::keyless("rt/pong", ty), &qos)
            .map_err(|e| format!("pong writer: {e}"))?,
    );
    let echo = pong_w.clone();
    let _echo = Reader::new(&cloud, &TopicInfo::keyless("rt/ping", ty), &qos, move |s| {
        let _ = echo.write_cdr(&s.cdr);
    })
    .map_err(|e| format!("echo reader: {e}"))?;
    let rtts: Arc<Mutex<BTreeMap<u64, f64>>> = Arc::default();
    let r = rtts.clone();
    let _pong = Reader::new(
        &vehicle,
        &TopicInfo::keyless("rt/pong", ty),
        &qos,
        move |s| {
            if let Some(st) = ros_msgs::stamp(Kind::PointCloud2, &s.cdr) {
                let us = now_ns().saturating_sub(st.sent_ns) as f64 / 1e3;
                r.lock().unwrap().entry(st.seq).or_insert(us);
            }
        },
    )
    .map_err(|e| format!("pong reader: {e}"))?;

    // Warm up until a ping comes back (discovery, type messages, subscriptions).
    let warm = Instant::now();
    let mut seq = 1_000_000u64;
    while rtts.lock().unwrap().is_empty() {
        if warm.elapsed() > Duration::from_secs(30) {
            let logs: Vec<String> = bridges.iter().map(|b| b.log_tail()).collect();
            return Err(format!("no pong within 30 s: {}", logs.join("\n")));
        }
        let cdr = ros_msgs::encode(
            Kind::PointCloud2,
            spec.bytes,
            Stamp {
                seq,
                sent_ns: now_ns(),
            },
        );
        let _ = ping.write_cdr(&cdr);
        seq += 1;
        std::thread::sleep(Duration::from_millis(200));
    }
    std::thread::sleep(Duration::from_millis(500));
    rtts.lock().unwrap().clear();

    for b in &mut bridges {
        b.begin_window();
    }
    let start = Instant::now();
    for n in 0..spec.count {
        let due = start + Duration::from_millis(100) * n as u32;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        let cdr = ros_msgs::encode(
            Kind::PointCloud2,
            spec.bytes,
            Stamp {
                seq: n as u64,
                sent_ns: now_ns(),
            },
        );
        ping.write_cdr(&cdr).map_err(|e| format!("ping: {e}"))?;
        for b in &mut bridges {
            b.sample();
        }
    }
    // The last ones' way back.
    let end = Instant::now() + Duration::from_secs(5);
    while rtts.lock().unwrap().len() < spec.count && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    let usage: Vec<Usage> = bridges.iter_mut().filter_map(|b| b.end_window()).collect();
    for b in &mut bridges {
        b.stop(Duration::from_secs(5));
    }
    let mut rtt_us: Vec<f64> = rtts
        .lock()
        .unwrap()
        .iter()
        .filter(|(s, _)| (**s as usize) < spec.count)
        .map(|(_, v)| *v)
        .collect();
    rtt_us.sort_by(|a, b| a.total_cmp(b));
    let mut hops = BTreeMap::new();
    for (side, dirs) in [
        ("vehicle", ["ros2mqtt", "mqtt2ros", "dds_write"]),
        ("cloud", ["mqtt2ros", "dds_write", "ros2mqtt"]),
    ] {
        let text = std::fs::read_to_string(stats(side))
            .map_err(|e| format!("{side} bridge's hop figures: {e}"))?;
        let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        for d in dirs {
            let figures = v[d]
                .as_object()
                .and_then(|m| m.values().next())
                .cloned()
                .ok_or_else(|| format!("{side}: no {d} figures in {text}"))?;
            let s: Summary = serde_json::from_value(figures).map_err(|e| e.to_string())?;
            hops.insert(format!("{side} {d}"), s);
        }
    }
    Ok(Run {
        spec: spec.clone(),
        sent: spec.count,
        received: rtt_us.len(),
        rtt: roam_mqtt::hops::summarize(&rtt_us, rtt_us.len() as u64),
        rtt_us,
        hops,
        usage,
    })
}

/// `roam mqtt` with an mqtt_client parameter file for one side.
fn roam_bridge(
    env: &Env,
    side: &str,
    domain: u32,
    port: u16,
    spec: &Spec,
    stats: &Path,
) -> Result<Proc, String> {
    let (out, inn) = topics(side);
    let tls = if spec.tls {
        format!(
            "      tls: {{enabled: true, ca_certificate: {}}}\n",
            env.ca.display()
        )
    } else {
        String::new()
    };
    let q = spec.qos;
    let params = format!(
        "/**/*:\n  ros__parameters:\n    broker:\n      host: 127.0.0.1\n      port: {port}\n{tls}    bridge:\n      ros2mqtt:\n        ros_topics: [{}]\n        {}: {{mqtt_topic: {}, advanced: {{mqtt: {{qos: {q}}}, ros: {{queue_size: 10}}}}}}\n      mqtt2ros:\n        mqtt_topics: [{}]\n        {}: {{ros_topic: {}, advanced: {{mqtt: {{qos: {q}}}, ros: {{queue_size: 10}}}}}}\n",
        out.0, out.0, out.1, inn.0, inn.0, inn.1
    );
    let file = env.dir.join(format!("{side}.yaml"));
    std::fs::write(&file, params).map_err(|e| e.to_string())?;
    let args: Vec<String> = [
        "mqtt",
        "--params",
        &file.to_string_lossy(),
        "--domain",
        &domain.to_string(),
        "--hop-stats-file",
        &stats.to_string_lossy(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let p = Proc::start(&format!("roam-{side}"), &env.roam, &args)?;
    p.wait_line(Duration::from_secs(20), |l| l.starts_with("mqtt bridge up"))?;
    Ok(p)
}

/// The Python bridge for one side.
fn py_bridge(
    env: &Env,
    side: &str,
    domain: u32,
    port: u16,
    spec: &Spec,
    stats: &Path,
) -> Result<Proc, String> {
    let (out, inn) = topics(side);
    let mut args: Vec<String> = vec![
        "-u".into(),
        env.py_bridge.to_string_lossy().into_owned(),
        "--domain".into(),
        domain.to_string(),
        "--port".into(),
        port.to_string(),
        "--qos".into(),
        spec.qos.to_string(),
        "--out".into(),
        format!("rt{}={}", out.0, out.1),
        "--in".into(),
        format!("{}=rt{}", inn.0, inn.1),
        "--stats".into(),
        stats.to_string_lossy().into_owned(),
    ];
    if spec.tls {
        args.extend(["--ca".into(), env.ca.to_string_lossy().into_owned()]);
    }
    let p = Proc::start(&format!("py-{side}"), Path::new("python3"), &args)?;
    p.wait_line(Duration::from_secs(30), |l| l == "ready")?;
    Ok(p)
}

/// ((ROS topic out, MQTT topic), (MQTT topic in, ROS topic)) of a side.
fn topics(side: &str) -> ((&'static str, &'static str), (&'static str, &'static str)) {
    match side {
        "vehicle" => (("/ping", "bench/ping"), ("bench/pong", "/pong")),
        _ => (("/pong", "bench/pong"), ("bench/ping", "/ping")),
    }
}
