//! `roam-wan-relay`: a small wide-area emulation relay for the performance lab (this kernel has
//! no `netem`). It sits on loopback between two sides of a path and forwards UDP datagrams and
//! TCP streams with emulated one-way delay, jitter and loss, in both directions.
//!
//! The model lives in two pure cores (no I/O, injected clock): [`delay_line`] (delay, jitter,
//! loss; seeded RNG) and [`bottleneck`] (an optional rate limit with a drop-tail queue that
//! every UDP flow shares); `udp` and `tcp` are thin tokio shells around them. The model and its
//! limits are documented in `docs/wan-relay.md`.

mod bottleneck;
mod delay_line;
mod stats;
mod tcp;
mod udp;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::{Parser, ValueEnum};
use serde::Serialize;

use bottleneck::{Bottleneck, BottleneckConfig};
use delay_line::{JitterDist, LineConfig, LossMode, Order};
use stats::{BottleneckDirStats, ListenerCounters};

/// Queue of the shared bottleneck when neither --bottleneck-packets nor --bottleneck-bytes is
/// given: a Linux interface's default txqueuelen.
const DEFAULT_BOTTLENECK_PACKETS: usize = 1000;
/// The smallest --bottleneck-bytes: one full-size Ethernet packet.
const MIN_BOTTLENECK_BYTES: usize = 1500;

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

    /// Also rewrite --stats-json every this many seconds while running (replaced whole, so a
    /// reader never sees half a file); each snapshot says when it was taken (`uptime_s`).
    #[arg(long, value_name = "F", requires = "stats_json")]
    stats_interval_s: Option<f64>,

    /// Shared bottleneck: UDP datagrams of every flow of every listener pass, per direction,
    /// through one drop-tail FIFO served at this rate (megabits per second of UDP payload)
    /// before the delay line, so paths through one relay compete for it like flows on one
    /// uplink. Off when absent. UDP only (refused with --tcp).
    #[arg(long, value_name = "F")]
    rate_mbit: Option<f64>,

    /// Shared bottleneck: most datagrams its queue holds per direction (waiting or being
    /// sent); an arrival beyond is dropped at the tail [default: 1000, a Linux interface's
    /// txqueuelen, unless --bottleneck-bytes is given].
    #[arg(long, value_name = "N", requires = "rate_mbit")]
    bottleneck_packets: Option<usize>,

    /// Shared bottleneck: most bytes of UDP payload its queue holds per direction (waiting or
    /// being sent), e.g. one bandwidth-delay product; with --bottleneck-packets too, whichever
    /// is reached first. At least 1500.
    #[arg(long, value_name = "N", requires = "rate_mbit")]
    bottleneck_bytes: Option<usize>,

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

    /// UDP: the path's MTU, the largest IP packet it carries (IPv4 and UDP headers, 28 bytes,
    /// included); a larger datagram is dropped, as a router on that path drops what it cannot
    /// forward unfragmented (counted as too_big). QUIC finds the path MTU by probing up to
    /// it. 1500 is Ethernet's, what a wide-area path offers.
    #[arg(long, value_name = "BYTES", default_value_t = 1500)]
    mtu: usize,

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
    mtu: usize,
    max_conns: usize,
    chunk_bytes: usize,
    stats_interval_s: Option<f64>,
    rate_mbit: Option<f64>,
    bottleneck_packets: Option<usize>,
    bottleneck_bytes: Option<usize>,
}

#[derive(Serialize)]
struct StatsFile<'a> {
    /// Seconds since the relay said "ready", when this snapshot was taken.
    uptime_s: f64,
    /// False for the snapshots of --stats-interval-s, true for the one written at exit.
    last: bool,
    config: &'a RunConfig,
    listeners: Vec<stats::ListenerStats>,
    /// The shared bottleneck (absent without --rate-mbit).
    #[serde(skip_serializing_if = "Option::is_none")]
    bottleneck: Option<BottleneckStatsFile>,
}

#[derive(Serialize)]
struct BottleneckStatsFile {
    client_to_target: BottleneckDirStats,
    target_to_client: BottleneckDirStats,
}

/// Parses and checks the bottleneck flags: `None` without --rate-mbit.
fn bottleneck_config(cli: &Cli) -> Result<Option<BottleneckConfig>, String> {
    let Some(mbit) = cli.rate_mbit else {
        return Ok(None);
    };
    if !mbit.is_finite() || mbit <= 0.0 || mbit > 100_000.0 {
        return Err(format!("--rate-mbit must be in (0, 100000], got {mbit}"));
    }
    if !cli.tcp.is_empty() {
        return Err(
            "--rate-mbit applies to UDP only: the TCP relay ends each connection \
                    and cannot drop bytes (run the TCP paths through another relay)"
                .into(),
        );
    }
    if cli.bottleneck_packets == Some(0) {
        return Err("--bottleneck-packets must be at least 1".into());
    }
    if cli
        .bottleneck_bytes
        .is_some_and(|b| b < MIN_BOTTLENECK_BYTES)
    {
        return Err(format!(
            "--bottleneck-bytes must be at least {MIN_BOTTLENECK_BYTES} (one full-size packet)"
        ));
    }
    let max_packets = match (cli.bottleneck_packets, cli.bottleneck_bytes) {
        (None, None) => Some(DEFAULT_BOTTLENECK_PACKETS),
        (p, _) => p,
    };
    Ok(Some(BottleneckConfig {
        rate_bps: (mbit * 1e6).round() as u64,
        max_packets,
        max_bytes: cli.bottleneck_bytes,
    }))
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
    if !(udp::MIN_MTU..=udp::MAX_MTU).contains(&cli.mtu) {
        return Err(format!(
            "--mtu must be in {}..={} (QUIC needs 1200-byte datagrams through), got {}",
            udp::MIN_MTU,
            udp::MAX_MTU,
            cli.mtu
        ));
    }
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
    if let Some(s) = cli.stats_interval_s {
        if !s.is_finite() || s <= 0.0 {
            return Err("--stats-interval-s must be > 0".into());
        }
    }
    let shaping = bottleneck_config(&cli)?;
    let shared = shaping.map(|c| {
        Arc::new(udp::SharedBottleneck {
            client_to_target: Mutex::new(Bottleneck::new(c)),
            target_to_client: Mutex::new(Bottleneck::new(c)),
        })
    });
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
        bottleneck: shared.clone(),
        max_payload: cli.mtu - udp::IP_UDP_HEADERS,
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
    let config = RunConfig {
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
        mtu: cli.mtu,
        max_conns: cli.max_conns,
        chunk_bytes: cli.chunk_bytes,
        stats_interval_s: cli.stats_interval_s,
        rate_mbit: cli.rate_mbit,
        bottleneck_packets: shaping.and_then(|c| c.max_packets),
        bottleneck_bytes: shaping.and_then(|c| c.max_bytes),
    };
    // Handlers before "ready", so a SIGTERM right after it still writes the stats.
    let mut stop = Box::pin(stop_signals()?);
    let ready = Instant::now();
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ready");
        let _ = out.flush();
    }
    let write_stats = |last: bool| -> Result<(), String> {
        let Some(path) = &cli.stats_json else {
            return Ok(());
        };
        let file = StatsFile {
            uptime_s: ready.elapsed().as_secs_f64(),
            last,
            config: &config,
            listeners: listeners
                .iter()
                .map(|(proto, m, c)| c.snapshot(proto, m.listen.to_string(), m.target.to_string()))
                .collect(),
            bottleneck: shared.as_deref().map(|b| {
                let dir = |m: &Mutex<Bottleneck>| {
                    BottleneckDirStats::from(m.lock().unwrap_or_else(|e| e.into_inner()).stats())
                };
                BottleneckStatsFile {
                    client_to_target: dir(&b.client_to_target),
                    target_to_client: dir(&b.target_to_client),
                }
            }),
        };
        let json = serde_json::to_string_pretty(&file).map_err(|e| e.to_string())?;
        // Written beside and renamed over: a reader sees the old snapshot or the new one.
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, json + "\n").map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
    };

    match cli.stats_interval_s {
        None => stop.await,
        Some(every) => {
            let mut tick = tokio::time::interval(Duration::from_secs_f64(every));
            tick.tick().await;
            loop {
                tokio::select! {
                    _ = &mut stop => break,
                    _ = tick.tick() => {
                        if let Err(e) = write_stats(false) {
                            eprintln!("roam-wan-relay: stats: {e}");
                        }
                    }
                }
            }
        }
    }
    write_stats(true)?;
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
