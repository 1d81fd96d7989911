//! `roam-loadgen`: the lab's ROS 2-style load generator. A real DDS participant (CycloneDDS)
//! that publishes the seeds' message types on ROS 2 topics (`rt/...`), announces itself in
//! `ros_discovery_info` like a ROS 2 node, and measures what comes back.
//!
//! Two roles, one on each side of the system under test:
//! - `source` publishes numbered, time-stamped messages on TOPIC and listens on TOPIC/echo.
//! - `sink` subscribes to TOPIC; with `--echo` it writes every sample back verbatim on
//!   TOPIC/echo (round-trip mode), otherwise it measures one-way latency, throughput, loss,
//!   duplicates and reordering itself (stream mode) and reflects only warm-up messages, so the
//!   source knows the path is up before it starts counting.
//!
//! Each prints one JSON object on stdout when done (the lab reads it). `--topics N` runs the
//! same two roles over N topics from one participant (topics.rs).

use std::sync::mpsc;
use std::time::{Duration, Instant};

use roam_bench::delivery::{Counts, Summary, Tracker};
use roam_bench::ros_msgs::{self, Kind, Stamp};
use roam_dds::ros_discovery_info::{GidSize, NodeAnnouncer};
use roam_dds::{History, Participant, Qos, Reader, Sample, TopicInfo, Writer};
use serde::Serialize;

mod args;
mod topics;
mod topics_plan;

use args::{Args, Role};

/// Sequence numbers with this bit are warm-up messages, never counted.
const WARMUP: u64 = 1 << 62;

fn main() {
    let args = match args::parse(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => return,
        Err(e) => {
            eprintln!("roam-loadgen: {e}\n\n{}", args::USAGE);
            std::process::exit(2);
        }
    };
    if let Err(e) = run(&args) {
        eprintln!("roam-loadgen: {e}");
        std::process::exit(1);
    }
}

fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// The DDS side: participant, a writer and a reader, announced as one ROS 2 node.
struct Node {
    writer: Writer,
    _reader: Reader,
    _announcer: NodeAnnouncer,
}

fn qos(a: &Args) -> Qos {
    Qos {
        reliable: !a.best_effort,
        transient_local: false,
        history: if a.keep_all {
            History::KeepAll
        } else {
            History::KeepLast(a.depth)
        },
    }
}

fn node(
    a: &Args,
    write_topic: &str,
    read_topic: &str,
    on_sample: impl Fn(Sample) + Send + Sync + 'static,
) -> Result<Node, String> {
    let p = Participant::new(a.domain, None).map_err(|e| format!("DDS participant: {e}"))?;
    let q = qos(a);
    let wt = TopicInfo::keyless(format!("rt{write_topic}"), a.kind.dds_type());
    let rt = TopicInfo::keyless(format!("rt{read_topic}"), a.kind.dds_type());
    let writer = Writer::new(&p, &wt, &q).map_err(|e| format!("DDS writer: {e}"))?;
    let reader = Reader::new(&p, &rt, &q, on_sample).map_err(|e| format!("DDS reader: {e}"))?;
    let role = match a.role {
        Role::Source => "source",
        Role::Sink => "sink",
    };
    let mut announcer = NodeAnnouncer::new(
        &p,
        "/",
        &format!("roam_loadgen_{role}"),
        GidSize::for_distro(a.ros_distro.as_deref()),
    )
    .map_err(|e| format!("ros_discovery_info: {e}"))?;
    let guid = |r: Result<roam_dds::Guid, roam_dds::DdsError>| r.map_err(|e| e.to_string());
    announcer
        .set_endpoint(guid(writer.guid())?, true, true)
        .map_err(|e| e.to_string())?;
    announcer
        .set_endpoint(guid(reader.guid())?, false, true)
        .map_err(|e| e.to_string())?;
    Ok(Node {
        writer,
        _reader: reader,
        _announcer: announcer,
    })
}

fn write(w: &Writer, cdr: &[u8]) -> Result<(), String> {
    // A reliable write that finds the readers' queues full waits up to a second, then times
    // out: keep trying (that is back-pressure, not failure) unless it persists.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match w.write_cdr(cdr) {
            Ok(()) => return Ok(()),
            Err(e) if e.is_timeout() && Instant::now() < deadline => continue,
            Err(e) => return Err(format!("DDS write: {e}")),
        }
    }
}

fn run(a: &Args) -> Result<(), String> {
    if let Some(n) = a.topics {
        return match a.role {
            Role::Source => topics::source(a, n),
            Role::Sink => topics::sink(a, n),
        };
    }
    let echo_topic = format!("{}/echo", a.topic);
    match a.role {
        Role::Source => source(a, &echo_topic),
        Role::Sink => sink(a, &echo_topic),
    }
}

// ---- source ---------------------------------------------------------------------------------

#[derive(Serialize)]
struct SourceReport {
    role: &'static str,
    kind: Kind,
    size: usize,
    wire_bytes: usize,
    rate_hz: f64,
    sent: u64,
    send_seconds: f64,
    send_rate: f64,
    /// Time from start to the first warm-up echo: the path is up.
    path_up_ms: f64,
    /// Round trips (only when the sink echoes).
    rtt: Option<Summary>,
    echo: Option<Counts>,
}

fn source(a: &Args, echo_topic: &str) -> Result<(), String> {
    let started = Instant::now();
    let (tx, rx) = mpsc::sync_channel::<(Instant, u64)>(1 << 16);
    let kind = a.kind;
    let node = node(a, &a.topic, echo_topic, move |s: Sample| {
        let at = Instant::now();
        // A full queue means the source fell behind; the echo is then lost to it (counted).
        let seq = ros_msgs::stamp(kind, &s.cdr).map_or(u64::MAX, |st| st.seq);
        let _ = tx.try_send((at, seq));
    })?;

    // Warm-up: one message every 100 ms until one comes back.
    let deadline = started + a.path_timeout;
    let mut k = 0u64;
    let path_up = loop {
        if Instant::now() > deadline {
            return Err(format!(
                "no warm-up echo within {:?}: the path from {} back to {echo_topic} is not up",
                a.path_timeout, a.topic
            ));
        }
        let msg = ros_msgs::encode(
            kind,
            a.size.min(1024),
            Stamp {
                seq: WARMUP | k,
                sent_ns: now_ns(),
            },
        );
        write(&node.writer, &msg)?;
        k += 1;
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok((_, seq)) if seq & WARMUP != 0 && seq != u64::MAX => break started.elapsed(),
            _ => {}
        }
    };
    // Drain late warm-up echoes.
    std::thread::sleep(Duration::from_millis(200));
    while rx.try_recv().is_ok() {}

    let mut sent_at: Vec<Option<Instant>> = vec![None; a.count as usize];
    let mut tracker = Tracker::new(a.count);
    let period = (a.rate > 0.0).then(|| Duration::from_secs_f64(1.0 / a.rate));
    let t0 = Instant::now();
    let mut wire = 0;
    for seq in 0..a.count {
        if let Some(p) = period {
            let due = t0 + p * seq as u32;
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                // Take echoes while waiting for the next send slot.
                let until = Instant::now() + wait;
                while let Some(left) = until.checked_duration_since(Instant::now()) {
                    match rx.recv_timeout(left) {
                        Ok(e) if a.echo => on_echo(e, &sent_at, &mut tracker),
                        _ => {}
                    }
                }
            }
        }
        let msg = ros_msgs::encode(
            kind,
            a.size,
            Stamp {
                seq,
                sent_ns: now_ns(),
            },
        );
        wire = msg.len();
        sent_at[seq as usize] = Some(Instant::now());
        write(&node.writer, &msg)?;
        if a.echo && period.is_none() {
            // Closed loop: one message in flight; wait for its echo (or give up on it).
            let until = Instant::now() + a.echo_timeout;
            while let Some(left) = until.checked_duration_since(Instant::now()) {
                match rx.recv_timeout(left) {
                    Ok(e) => {
                        let done = e.1 == seq;
                        on_echo(e, &sent_at, &mut tracker);
                        if done {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
        } else if a.echo {
            while let Ok(e) = rx.try_recv() {
                on_echo(e, &sent_at, &mut tracker);
            }
        }
    }
    let send_seconds = t0.elapsed().as_secs_f64();
    if a.echo {
        // The last echoes.
        let until = Instant::now() + a.echo_timeout;
        while tracker.received() < a.count {
            let Some(left) = until.checked_duration_since(Instant::now()) else {
                break;
            };
            match rx.recv_timeout(left) {
                Ok(e) => on_echo(e, &sent_at, &mut tracker),
                Err(_) => break,
            }
        }
    } else {
        // Let the reliable writer deliver what it holds before the participant goes.
        std::thread::sleep(a.linger);
    }
    let (echo, rtt) = if a.echo {
        let (c, s) = tracker.finish();
        (Some(c), Some(s))
    } else {
        (None, None)
    };
    let report = SourceReport {
        role: "source",
        kind,
        size: a.size,
        wire_bytes: wire,
        rate_hz: a.rate,
        sent: a.count,
        send_seconds,
        send_rate: a.count as f64 / send_seconds.max(1e-9),
        path_up_ms: path_up.as_secs_f64() * 1e3,
        rtt,
        echo,
    };
    println!(
        "{}",
        serde_json::to_string(&report).map_err(|e| e.to_string())?
    );
    Ok(())
}

/// Records the round trip of an echo that arrived at `at`.
fn on_echo((at, seq): (Instant, u64), sent_at: &[Option<Instant>], tracker: &mut Tracker) {
    if seq & WARMUP != 0 {
        return;
    }
    match sent_at.get(seq as usize).copied().flatten() {
        Some(t) => {
            tracker.record(seq, Some(at.duration_since(t).as_secs_f64() * 1e6));
        }
        None => tracker.foreign(),
    }
}

// ---- sink -----------------------------------------------------------------------------------

#[derive(Serialize)]
struct SinkReport {
    role: &'static str,
    kind: Kind,
    counts: Counts,
    /// Sender clock to receiver clock (same host): one-way latency.
    one_way: Summary,
    /// Measured messages per second between the first and the last arrival.
    rate: f64,
    /// Payload megabits per second over the same span.
    mbit_s: f64,
    seconds: f64,
}

fn sink(a: &Args, echo_topic: &str) -> Result<(), String> {
    // Bounded by bytes as well as count: at most about 256 MiB of samples waiting.
    let capacity = (256 << 20) / a.size.max(256);
    let (tx, rx) = mpsc::sync_channel::<(u64, Option<Sample>)>(capacity.clamp(16, 1 << 16));
    let echo_all = a.echo;
    let kind = a.kind;
    let node = node(a, echo_topic, &a.topic, move |s: Sample| {
        let at = now_ns();
        // Echo samples are handed to the writer thread: a reliable write may block, and this
        // callback runs on CycloneDDS's receive thread, which must keep taking acks.
        let _ = tx.try_send((at, Some(s)));
    })?;
    let stop = stop_flag();
    let mut tracker = Tracker::new(a.count);
    let mut bytes = 0u64;
    let mut first: Option<u64> = None;
    let mut last = 0u64;
    let mut last_progress = Instant::now();
    println!("ready");
    loop {
        if stop.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        if !echo_all && tracker.received() >= a.count {
            break;
        }
        if first.is_some() && last_progress.elapsed() > a.idle {
            break;
        }
        let Ok((at, s)) = rx.recv_timeout(Duration::from_millis(100)) else {
            continue;
        };
        let Some(s) = s else { continue };
        let st = ros_msgs::stamp(kind, &s.cdr);
        let warm = st.is_some_and(|st| st.seq & WARMUP != 0);
        if echo_all || warm {
            write(&node.writer, &s.cdr)?;
        }
        if echo_all || warm {
            continue;
        }
        match st {
            Some(st) => {
                let lat = at.saturating_sub(st.sent_ns) as f64 / 1e3;
                if tracker.record(st.seq, Some(lat)) {
                    bytes += s.cdr.len() as u64;
                    first.get_or_insert(at);
                    last = at;
                    last_progress = Instant::now();
                }
            }
            None => tracker.foreign(),
        }
    }
    if echo_all {
        return Ok(());
    }
    let seconds = first.map_or(0.0, |f| (last - f) as f64 / 1e9);
    let (counts, one_way) = tracker.finish();
    let rate = if seconds > 0.0 {
        (counts.received.saturating_sub(1)) as f64 / seconds
    } else {
        0.0
    };
    let report = SinkReport {
        role: "sink",
        kind,
        rate,
        mbit_s: if seconds > 0.0 {
            bytes as f64 * 8.0 / seconds / 1e6
        } else {
            0.0
        },
        seconds,
        counts,
        one_way,
    };
    println!(
        "{}",
        serde_json::to_string(&report).map_err(|e| e.to_string())?
    );
    Ok(())
}

/// Set on SIGTERM or SIGINT.
fn stop_flag() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let f = flag.clone();
    std::thread::spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        else {
            return;
        };
        rt.block_on(async {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut term), Ok(mut int)) = (
                signal(SignalKind::terminate()),
                signal(SignalKind::interrupt()),
            ) else {
                return;
            };
            tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
        });
        f.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    flag
}
