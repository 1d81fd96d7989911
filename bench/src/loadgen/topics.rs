//! `roam-loadgen --topics N`: many topics from one participant (lab E12, E13).
//!
//! The source writes TOPIC/0 .. TOPIC/N-1 (one DDS writer each), every topic at `--rate` with
//! its own sequence numbers, the writes of one period spread evenly over it; the sink reads
//! all N and measures each topic and all of them together. Warm-up as in the one-topic mode,
//! per topic: the source sends warm-up messages on every topic whose path is not up yet, the
//! sink reflects them on the one topic TOPIC/echo, and the warm-up sequence number names the
//! topic ([`topics_plan::warmup_seq`]). With `--settle-ms` the source then sends at the rate
//! for a while, messages the sink ignores, so that the measured part does not start on a
//! cold path (a QUIC connection in slow start). The source prints `sending` when the
//! measured part starts and `sent` when its last write returned (or SIGTERM stopped it), so
//! the lab can take CPU figures over exactly that; then each side prints its JSON report.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use roam_bench::delivery::Tracker;
use roam_bench::ros_msgs::{self, Stamp};
use roam_dds::ros_discovery_info::{self, GidSize, NodeInfo};
use roam_dds::{Participant, Qos, Reader, Sample, TopicInfo, Writer};
use serde::Serialize;

use super::args::Args;
use super::topics_plan::{self, Received, Seq};
use super::{now_ns, qos, stop_flag, write};

fn topic(a: &Args, name: &str) -> TopicInfo {
    TopicInfo::keyless(format!("rt{}/{name}", a.topic), a.kind.dds_type())
}

/// Announces the node with all its endpoints in one `ros_discovery_info` sample (the Zenoh
/// bridge routes only announced endpoints). `NodeAnnouncer` re-announces on every endpoint
/// it is given, which for a thousand topics would be two thousand growing samples.
fn announce(
    p: &Participant,
    a: &Args,
    role: &str,
    writers: &[&Writer],
    readers: &[&Reader],
) -> Result<Writer, String> {
    let guids = |r: Vec<Result<roam_dds::Guid, roam_dds::DdsError>>| {
        r.into_iter()
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())
    };
    let node = NodeInfo {
        namespace: "/".into(),
        name: format!("roam_loadgen_{role}"),
        writers: guids(writers.iter().map(|w| w.guid()).collect())?,
        readers: guids(readers.iter().map(|r| r.guid()).collect())?,
    };
    let info = TopicInfo::keyless(ros_discovery_info::TOPIC, ros_discovery_info::TYPE);
    let w =
        Writer::new(p, &info, &Qos::latched(1)).map_err(|e| format!("ros_discovery_info: {e}"))?;
    let gid = GidSize::for_distro(a.ros_distro.as_deref());
    let sample = ros_discovery_info::encode(&p.guid(), std::slice::from_ref(&node), gid);
    w.write_cdr(&sample)
        .map_err(|e| format!("ros_discovery_info: {e}"))?;
    Ok(w)
}

// ---- source ---------------------------------------------------------------------------------

#[derive(Serialize)]
struct SourceReport {
    role: &'static str,
    kind: roam_bench::ros_msgs::Kind,
    size: usize,
    wire_bytes: usize,
    /// Per topic.
    rate_hz: f64,
    topics: usize,
    /// Topics whose warm-up came back before the measured part started.
    topics_up: usize,
    count_per_topic: u64,
    /// Messages written, all topics: fewer than topics x count when SIGTERM stopped it.
    sent: u64,
    stopped_early: bool,
    /// Unmeasured messages sent while the path settled (`--settle-ms`), all topics.
    settle_sent: u64,
    send_seconds: f64,
    send_rate: f64,
    /// From start until every topic's path was up (or the path timeout).
    path_up_ms: f64,
    /// The latest a write left after its due time: above a few ms, the source itself could
    /// not keep the rate (the machine's cores were busy).
    behind_ms_max: f64,
}

pub fn source(a: &Args, n: usize) -> Result<(), String> {
    let started = Instant::now();
    let p = Participant::new(a.domain, None).map_err(|e| format!("DDS participant: {e}"))?;
    let q = qos(a);
    let writers = (0..n)
        .map(|i| Writer::new(&p, &topic(a, &i.to_string()), &q))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("DDS writer: {e}"))?;
    let (tx, rx) = mpsc::sync_channel::<u64>(1 << 16);
    let kind = a.kind;
    let echo = Reader::new(&p, &topic(a, "echo"), &q, move |s: Sample| {
        if let Some(st) = ros_msgs::stamp(kind, &s.cdr) {
            let _ = tx.try_send(st.seq);
        }
    })
    .map_err(|e| format!("DDS reader: {e}"))?;
    let _node = announce(
        &p,
        a,
        "source",
        &writers.iter().collect::<Vec<_>>(),
        &[&echo],
    )?;

    let (up, path_up) = warm_up(a, &writers, &rx, started)?;
    let topics_up = up.iter().filter(|u| **u).count();
    // Late warm-up echoes.
    std::thread::sleep(Duration::from_millis(200));
    while rx.try_recv().is_ok() {}

    let stop = stop_flag();
    let settle = topics_plan::settle_writes(a.settle, a.rate, n);
    let settled = paced(a, &writers, settle, topics_plan::SETTLE, &stop)?;
    println!("sending");
    let t0 = Instant::now();
    let total = n as u64 * a.count;
    let measured = paced(a, &writers, total, 0, &stop)?;
    let send_seconds = t0.elapsed().as_secs_f64();
    println!("sent");
    // Let the reliable writers deliver what they hold before the participant goes.
    std::thread::sleep(a.linger);
    let report = SourceReport {
        role: "source",
        kind,
        size: a.size,
        rate_hz: a.rate,
        topics: n,
        topics_up,
        count_per_topic: a.count,
        sent: measured.written,
        stopped_early: measured.written < total,
        settle_sent: settled.written,
        send_seconds,
        send_rate: measured.written as f64 / send_seconds.max(1e-9),
        path_up_ms: path_up.as_secs_f64() * 1e3,
        behind_ms_max: measured.behind.as_secs_f64() * 1e3,
        wire_bytes: measured.wire_bytes,
    };
    println!(
        "{}",
        serde_json::to_string(&report).map_err(|e| e.to_string())?
    );
    Ok(())
}

/// What [`paced`] did.
struct Paced {
    written: u64,
    /// The latest a write left after its due time.
    behind: Duration,
    wire_bytes: usize,
}

/// Writes `total` messages at the rate, topics taking turns, sequence numbers with `flag`;
/// stops early, without error, once `stop` is set.
fn paced(
    a: &Args,
    writers: &[Writer],
    total: u64,
    flag: u64,
    stop: &AtomicBool,
) -> Result<Paced, String> {
    let n = writers.len();
    let t0 = Instant::now();
    let mut out = Paced {
        written: 0,
        behind: Duration::ZERO,
        wire_bytes: 0,
    };
    for j in 0..total {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if let Some(due) = topics_plan::due(t0, a.rate, n, j) {
            let now = Instant::now();
            match due.checked_duration_since(now) {
                Some(wait) => std::thread::sleep(wait),
                None => out.behind = out.behind.max(now - due),
            }
        }
        let (t, seq) = topics_plan::slot(j, n);
        let msg = ros_msgs::encode(
            a.kind,
            a.size,
            Stamp {
                seq: flag | seq,
                sent_ns: now_ns(),
            },
        );
        out.wire_bytes = msg.len();
        if !write_or_stop(&writers[t], &msg, stop)? {
            break;
        }
        out.written += 1;
    }
    Ok(out)
}

/// A reliable write that waits for as long as the readers push back (a timeout is
/// back-pressure: retry), until `stop`: then `Ok(false)`, nothing written. Unlike the
/// one-topic mode's 30 s limit: a flow the path cannot carry at its rate (13 MB images over
/// a lossy path, E12) is stopped by the lab once the flow next to it is done, and the
/// messages that did cross are its figures.
fn write_or_stop(w: &Writer, cdr: &[u8], stop: &AtomicBool) -> Result<bool, String> {
    loop {
        match w.write_cdr(cdr) {
            Ok(()) => return Ok(true),
            Err(e) if e.is_timeout() && stop.load(Ordering::Relaxed) => return Ok(false),
            Err(e) if e.is_timeout() => continue,
            Err(e) => return Err(format!("DDS write: {e}")),
        }
    }
}

/// Warm-up rounds on every topic not up yet, until all are or the path timeout passed (an
/// error only when no topic is up). Returns which topics are up and when that was decided.
fn warm_up(
    a: &Args,
    writers: &[Writer],
    echoes: &mpsc::Receiver<u64>,
    started: Instant,
) -> Result<(Vec<bool>, Duration), String> {
    let n = writers.len();
    let mut up = vec![false; n];
    let mut n_up = 0;
    let deadline = started + a.path_timeout;
    let period = topics_plan::warmup_period(n);
    let mut k = 0u64;
    while n_up < n && Instant::now() < deadline {
        for (i, w) in writers.iter().enumerate().filter(|(i, _)| !up[*i]) {
            let msg = ros_msgs::encode(
                a.kind,
                a.size.min(1024),
                Stamp {
                    seq: topics_plan::warmup_seq(i, k),
                    sent_ns: now_ns(),
                },
            );
            write(w, &msg)?;
        }
        k += 1;
        let until = Instant::now() + period;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            let Ok(seq) = echoes.recv_timeout(left) else {
                break;
            };
            if let Some(i) = topics_plan::warmup_topic(seq).filter(|i| *i < n && !up[*i]) {
                up[i] = true;
                n_up += 1;
                if n_up == n {
                    break;
                }
            }
        }
    }
    if n_up == 0 {
        return Err(format!(
            "no warm-up echo within {:?} on any of {n} topics: the path from {}/N back to {}/echo is not up",
            a.path_timeout, a.topic, a.topic
        ));
    }
    Ok((up, started.elapsed()))
}

// ---- sink -----------------------------------------------------------------------------------

pub fn sink(a: &Args, n: usize) -> Result<(), String> {
    let p = Participant::new(a.domain, None).map_err(|e| format!("DDS participant: {e}"))?;
    let q = qos(a);
    // Bounded by bytes as well as count, as the one-topic sink: about 256 MiB waiting.
    let capacity = ((256 << 20) / a.size.max(256)).clamp(16, 1 << 16);
    let (tx, rx) = mpsc::sync_channel::<(usize, u64, Sample)>(capacity);
    let dropped = Arc::new(AtomicU64::new(0));
    let readers = (0..n)
        .map(|i| {
            let tx = tx.clone();
            let dropped = dropped.clone();
            Reader::new(&p, &topic(a, &i.to_string()), &q, move |s: Sample| {
                let at = now_ns();
                // Handed to the main thread: this runs on CycloneDDS's receive thread, which
                // must keep taking acks (and echoing may block on a reliable write).
                if tx.try_send((i, at, s)).is_err() {
                    dropped.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("DDS reader: {e}"))?;
    drop(tx);
    let echo = Writer::new(&p, &topic(a, "echo"), &q).map_err(|e| format!("DDS writer: {e}"))?;
    let _node = announce(&p, a, "sink", &[&echo], &readers.iter().collect::<Vec<_>>())?;
    let stop = stop_flag();
    let mut got = Received {
        kind: a.kind,
        trackers: (0..n).map(|_| Tracker::new(a.count)).collect(),
        latencies_us: Vec::with_capacity((n as u64 * a.count).min(1 << 22) as usize),
        bytes: 0,
        first_ns: None,
        last_ns: 0,
        dropped_in_sink: 0,
    };
    let expected = n as u64 * a.count;
    let mut received = 0u64;
    let mut last_progress = Instant::now();
    println!("ready");
    while !stop.load(Ordering::Relaxed)
        && received < expected
        && !(got.first_ns.is_some() && last_progress.elapsed() > a.idle)
    {
        let Ok((i, at, s)) = rx.recv_timeout(Duration::from_millis(100)) else {
            continue;
        };
        let Some(st) = ros_msgs::stamp(a.kind, &s.cdr) else {
            got.trackers[i].foreign();
            continue;
        };
        let seq = match topics_plan::classify(st.seq) {
            Seq::Warmup => {
                write(&echo, &s.cdr)?;
                continue;
            }
            Seq::Settle => continue,
            Seq::Measured(seq) => seq,
        };
        let lat = at.saturating_sub(st.sent_ns) as f64 / 1e3;
        if got.trackers[i].record(seq, Some(lat)) {
            got.latencies_us.push(lat);
            got.bytes += s.cdr.len() as u64;
            got.first_ns.get_or_insert(at);
            got.last_ns = at;
            received += 1;
            last_progress = Instant::now();
        }
    }
    got.dropped_in_sink = dropped.load(Ordering::Relaxed);
    println!(
        "{}",
        serde_json::to_string(&got.report()).map_err(|e| e.to_string())?
    );
    Ok(())
}
