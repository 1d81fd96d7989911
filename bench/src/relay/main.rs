//! `roam-wan-relay`: a small wide-area emulation relay for the performance lab (this kernel has
//! no `netem`). It sits on loopback between two sides of a path and forwards UDP datagrams and
//! TCP streams with emulated one-way delay, jitter and loss, in both directions.
//!
//! The model lives in the pure [`delay_line`] core (no I/O, injected clock, seeded RNG); `udp`
//! and `tcp` are thin tokio shells around it. The model and its limits are documented in
//! `docs/wan-relay.md`.

mod delay_line;
mod stats;
mod tcp;
mod udp;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, ValueEnum};
use serde::Serialize;

use delay_line::{JitterDist, LineConfig, LossMode, Order};
use stats::ListenerCounters;

/// Forwards UDP and TCP on loopback with emulated one-way delay, jitter and loss (a netem
/// stand-in). Every direction of every flow gets the same parameters, so the added round-trip
/// time is twice --delay-ms. Prints "ready" on stdout once every listener is bound; on SIGTERM
/// or SIGINT writes --stats-json (if given) and exits.
#[derive(Parser, Debug)]
#[command(name = "roam-wan-relay", version)]
struct Cli {
    /// Relay UDP: listen on LISTEN, one upstream socket per client source address towards
    /// TARGET (e.g. 127.0.0.1:40000=127.0.0.1:7447). Repeatable.
    #[arg(long, value_name = "LISTEN=TARGET", value_parser = parse_mapping)]
    udp: Vec<Mapping>,

    /// Relay TCP: accept on LISTEN, connect each accepted connection to TARGET. Repeatable.
    #[arg(long, value_name = "LISTEN=TARGET", value_parser = parse_mapping)]
    tcp: Vec<Mapping>,

    /// One-way base delay in milliseconds, applied in each direction.
    #[arg(long, value_name = "F", default_value_t = 0.0)]
    delay_ms: f64,

    /// Jitter in milliseconds: per-packet extra delay drawn around --delay-ms (uniform in
    /// +-jitter, or normal with this standard deviation), clamped so delay is never negative.
    /// UDP packets may reorder unless --keep-order; TCP never reorders.
    #[arg(long, value_name = "F", default_value_t = 0.0)]
    jitter_ms: f64,

    /// Shape of the jitter.
    #[arg(long, value_enum, default_value_t = Dist::Uniform)]
    jitter_dist: Dist,

    /// Loss probability in [0, 1]. UDP: each datagram is dropped with this probability. TCP:
    /// each chunk read is, with this probability, held (with everything behind it) for an
    /// extra --rto-ms, the stall a retransmitted segment causes.
    #[arg(long, value_name = "F", default_value_t = 0.0)]
    loss: f64,

    /// TCP retransmission stall in milliseconds [default: max(200, 4 x delay-ms), i.e.
    /// max(200 ms, 2 x RTT)].
    #[arg(long, value_name = "F")]
    rto_ms: Option<f64>,

    /// Seed of the random draws (loss, jitter); each flow and direction derives its own
    /// stream from it. Random when absent (the value used is in the stats).
    #[arg(long, value_name = "N")]
    seed: Option<u64>,

    /// Keep UDP datagrams in arrival order: a packet never leaves before the one ahead of it
    /// (jitter then only adds delay). Without it jitter reorders, as netem does.
    #[arg(long)]
    keep_order: bool,

    /// Write packet/byte counters per listener and direction to FILE (JSON) on exit.
    #[arg(long, value_name = "FILE")]
    stats_json: Option<PathBuf>,

    /// Bytes held in flight per direction of each UDP flow or TCP connection; beyond it UDP
    /// datagrams are dropped (counted as overflow) and TCP stops reading (back-pressure).
    #[arg(long, value_name = "N", default_value_t = 4 << 20)]
    queue_bytes: usize,

    /// UDP: most client flows per listener; datagrams from further clients are dropped.
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_flows: usize,

    /// UDP: a flow with no datagram either way for this many seconds is forgotten.
    #[arg(long, value_name = "F", default_value_t = 60.0)]
    idle_timeout_s: f64,

    /// UDP: SO_RCVBUF and SO_SNDBUF of every relay socket, so bursts are not dropped by the
    /// kernel before the relay reads them (capped by net.core.rmem_max / wmem_max).
    #[arg(long, value_name = "N", default_value_t = 4 << 20)]
    udp_socket_buffer: usize,

    /// TCP: most concurrent connections per listener; further ones are closed at once.
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_conns: usize,

    /// TCP: largest chunk read at once, the unit the stall model applies to.
    #[arg(long, value_name = "N", default_value_t = 16 * 1024)]
    chunk_bytes: usize,
}

#[derive(Clone, Copy, Debug, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum Dist {
    Uniform,
    Normal,
}

#[derive(Clone, Debug)]
struct Mapping {
    listen: SocketAddr,
    target: SocketAddr,
}

fn parse_mapping(s: &str) -> Result<Mapping, String> {
    let (l, t) = s
        .split_once('=')
        .ok_or_else(|| format!("expected LISTEN=TARGET, got {s:?}"))?;
    let resolve = |a: &str| -> Result<SocketAddr, String> {
        a.to_socket_addrs()
            .map_err(|e| format!("{a}: {e}"))?
            .next()
            .ok_or_else(|| format!("{a}: no address"))
    };
    Ok(Mapping {
        listen: resolve(l)?,
        target: resolve(t)?,
    })
}

fn millis(name: &str, v: f64) -> Result<Duration, String> {
    if !v.is_finite() || v < 0.0 {
        return Err(format!("--{name} must be a finite number >= 0, got {v}"));
    }
    Ok(Duration::from_secs_f64(v / 1e3))
}

#[derive(Serialize)]
struct RunConfig {
    delay_ms: f64,
    jitter_ms: f64,
    jitter_dist: Dist,
    loss: f64,
    rto_ms: f64,
    seed: u64,
    keep_order: bool,
    queue_bytes: usize,
    max_flows: usize,
    idle_timeout_s: f64,
    udp_socket_buffer: usize,
    max_conns: usize,
    chunk_bytes: usize,
}

#[derive(Serialize)]
struct StatsFile {
    config: RunConfig,
    listeners: Vec<stats::ListenerStats>,
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = real_main(cli) {
        eprintln!("roam-wan-relay: {e}");
        std::process::exit(1);
    }
}

#[tokio::main]
async fn real_main(cli: Cli) -> Result<(), String> {
    if cli.udp.is_empty() && cli.tcp.is_empty() {
        return Err("nothing to relay: give at least one --udp or --tcp LISTEN=TARGET".into());
    }
    let delay = millis("delay-ms", cli.delay_ms)?;
    let jitter = millis("jitter-ms", cli.jitter_ms)?;
    if !(0.0..=1.0).contains(&cli.loss) {
        return Err(format!("--loss must be in [0, 1], got {}", cli.loss));
    }
    let rto = match cli.rto_ms {
        Some(v) => millis("rto-ms", v)?,
        None => Duration::from_millis(200).max(delay * 4),
    };
    if cli.queue_bytes < 65_536 {
        return Err("--queue-bytes must be at least 65536 (one datagram)".into());
    }
    if cli.chunk_bytes == 0 || cli.chunk_bytes > cli.queue_bytes {
        return Err("--chunk-bytes must be in 1..=--queue-bytes".into());
    }
    if !cli.idle_timeout_s.is_finite() || cli.idle_timeout_s <= 0.0 {
        return Err("--idle-timeout-s must be > 0".into());
    }
    let seed = cli.seed.unwrap_or_else(rand::random);
    let dist = match cli.jitter_dist {
        Dist::Uniform => JitterDist::Uniform,
        Dist::Normal => JitterDist::Normal,
    };
    let base = LineConfig {
        delay,
        jitter,
        dist,
        loss: cli.loss,
        order: if cli.keep_order {
            Order::Keep
        } else {
            Order::Reorder
        },
        loss_mode: LossMode::Drop,
        max_queued_bytes: cli.queue_bytes,
    };
    let udp_params = |listener| udp::UdpParams {
        line: base,
        idle_timeout: Duration::from_secs_f64(cli.idle_timeout_s),
        max_flows: cli.max_flows,
        seed,
        listener,
        socket_buffer: cli.udp_socket_buffer,
    };
    let tcp_params = |listener| tcp::TcpParams {
        line: LineConfig {
            order: Order::Keep,
            loss_mode: LossMode::Stall { rto },
            ..base
        },
        max_conns: cli.max_conns,
        chunk_bytes: cli.chunk_bytes,
        seed,
        listener,
    };

    // Bind everything before saying "ready"; fail as a whole if any bind fails.
    let mut listeners: Vec<(&'static str, &Mapping, Arc<ListenerCounters>)> = Vec::new();
    let mut index = 0u64;
    let mut udp_tasks = Vec::new();
    for m in &cli.udp {
        let sock = udp::bind(m.listen, cli.udp_socket_buffer)
            .map_err(|e| format!("udp bind {}: {e}", m.listen))?;
        let c = Arc::new(ListenerCounters::default());
        listeners.push(("udp", m, c.clone()));
        udp_tasks.push((sock, m.target, udp_params(index), c));
        index += 1;
    }
    let mut tcp_tasks = Vec::new();
    for m in &cli.tcp {
        let l = tokio::net::TcpListener::bind(m.listen)
            .await
            .map_err(|e| format!("tcp bind {}: {e}", m.listen))?;
        let c = Arc::new(ListenerCounters::default());
        listeners.push(("tcp", m, c.clone()));
        tcp_tasks.push((l, m.target, tcp_params(index), c));
        index += 1;
    }
    for (sock, target, p, c) in udp_tasks {
        tokio::spawn(udp::run(sock, target, p, c));
    }
    for (l, target, p, c) in tcp_tasks {
        tokio::spawn(tcp::run(l, target, p, c));
    }
    // Handlers before "ready", so a SIGTERM right after it still writes the stats.
    let stop = stop_signals()?;
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ready");
        let _ = out.flush();
    }

    stop.await;

    if let Some(path) = &cli.stats_json {
        let file = StatsFile {
            config: RunConfig {
                delay_ms: cli.delay_ms,
                jitter_ms: cli.jitter_ms,
                jitter_dist: cli.jitter_dist,
                loss: cli.loss,
                rto_ms: rto.as_secs_f64() * 1e3,
                seed,
                keep_order: cli.keep_order,
                queue_bytes: cli.queue_bytes,
                max_flows: cli.max_flows,
                idle_timeout_s: cli.idle_timeout_s,
                udp_socket_buffer: cli.udp_socket_buffer,
                max_conns: cli.max_conns,
                chunk_bytes: cli.chunk_bytes,
            },
            listeners: listeners
                .iter()
                .map(|(proto, m, c)| c.snapshot(proto, m.listen.to_string(), m.target.to_string()))
                .collect(),
        };
        let json = serde_json::to_string_pretty(&file).map_err(|e| e.to_string())?;
        std::fs::write(path, json + "\n").map_err(|e| format!("{}: {e}", path.display()))?;
    }
    // Leave without waiting for the relay tasks (they run forever).
    std::process::exit(0);
}

/// A future that completes on SIGTERM or SIGINT (handlers installed now).
fn stop_signals() -> Result<impl std::future::Future<Output = ()>, String> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM handler: {e}"))?;
    let mut int = signal(SignalKind::interrupt()).map_err(|e| format!("SIGINT handler: {e}"))?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    })
}
