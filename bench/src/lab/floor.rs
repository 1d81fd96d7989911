//! The machine's floor under E1: what a round trip costs when the processes on its path do
//! nothing but pass a datagram on. A message of each E1 size (in datagrams of at most
//! [`PIECE`] bytes) goes from the lab, over UDP on loopback, through 0, 2 or 3 processes
//! that only receive and send it on, to a process that echoes it once it has all of it, and
//! back. 0 is native DDS's shape (source and sink), 2 proxy to proxy's (and the Zenoh
//! bridge's), 3 a router's. What 2 and 3 add over 0 is what this machine charges for the
//! processes a bridge puts on the path (their wake-ups, system calls and loopback
//! deliveries); the rest of what roam adds is its own work (DDS on both sides, sealing,
//! QUIC). Nothing here is DDS or roam: `roam-lab --floor-forwarder` and `--floor-echo` are
//! the middle and the far end.

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use roam_bench::procs::Proc;
use serde::Serialize;

/// The most payload one datagram carries (CycloneDDS on loopback sends up to 65,000).
pub const PIECE: usize = 60_000;
/// Round, offset and total, before every piece's payload.
const HEADER: usize = 16;
/// How long one round may take before it counts as lost.
const ROUND_TIMEOUT: Duration = Duration::from_secs(1);
const WARMUP: u64 = 20;
const SOCKET_BUFFER: usize = 4 << 20;

/// One shape at one size.
#[derive(Clone, Debug, Serialize)]
pub struct FloorRun {
    /// Which of E1's rounds this ran next to (1: E1's own).
    pub round: usize,
    pub size: usize,
    /// Processes between the source and the echo.
    pub forwarders: usize,
    pub count: u64,
    pub median_us: Option<f64>,
    pub p99_us: Option<f64>,
    /// Rounds not back within [`ROUND_TIMEOUT`].
    pub lost: u64,
    /// CPU time of one process in between per round trip (the mean over them; each passes
    /// the message on twice), from the kernel's scheduler statistics.
    pub forwarder_cpu_us: Option<f64>,
    pub error: Option<String>,
}

/// The header of one piece: which round, where in the message, how long the message is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Piece {
    pub round: u64,
    pub offset: u32,
    pub total: u32,
}

impl Piece {
    pub fn encode(&self, out: &mut [u8]) {
        out[..8].copy_from_slice(&self.round.to_le_bytes());
        out[8..12].copy_from_slice(&self.offset.to_le_bytes());
        out[12..16].copy_from_slice(&self.total.to_le_bytes());
    }

    /// The header and the payload's length; None for a datagram too short to carry one.
    pub fn decode(datagram: &[u8]) -> Option<(Piece, usize)> {
        let h = datagram.get(..HEADER)?;
        Some((
            Piece {
                round: u64::from_le_bytes(h[0..8].try_into().ok()?),
                offset: u32::from_le_bytes(h[8..12].try_into().ok()?),
                total: u32::from_le_bytes(h[12..16].try_into().ok()?),
            },
            datagram.len() - HEADER,
        ))
    }
}

/// The pieces of a `size`-byte message: (offset, length) each.
pub fn pieces(size: usize) -> impl Iterator<Item = (usize, usize)> {
    let n = size.div_ceil(PIECE).max(1);
    (0..n).map(move |i| (i * PIECE, (size - i * PIECE).min(PIECE)))
}

/// Collects one round's payload bytes; says when the message is whole.
#[derive(Debug, Default)]
pub struct Gather {
    round: Option<u64>,
    got: u64,
}

impl Gather {
    /// Takes a piece; true when it completed its round (pieces of other rounds start over).
    pub fn take(&mut self, piece: Piece, len: usize) -> bool {
        if self.round != Some(piece.round) {
            self.round = Some(piece.round);
            self.got = 0;
        }
        self.got += len as u64;
        self.got >= u64::from(piece.total)
    }
}

fn socket() -> Result<UdpSocket, String> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None)
        .map_err(|e| format!("socket: {e}"))?;
    // Best effort: a kernel capping them at rmem_max still holds a 1 MiB message.
    let _ = s.set_recv_buffer_size(SOCKET_BUFFER);
    let _ = s.set_send_buffer_size(SOCKET_BUFFER);
    let any: SocketAddr = ([127, 0, 0, 1], 0).into();
    s.bind(&any.into()).map_err(|e| format!("bind: {e}"))?;
    Ok(s.into())
}

fn announce(s: &UdpSocket) -> Result<(), String> {
    let port = s.local_addr().map_err(|e| e.to_string())?.port();
    println!("port {port}");
    use std::io::Write as _;
    std::io::stdout().flush().map_err(|e| e.to_string())
}

/// `roam-lab --floor-forwarder PORT`: sends what comes from 127.0.0.1:PORT (the right) to
/// whoever sent last from elsewhere (the left), and everything else to the right. Runs until
/// killed.
pub fn forwarder(right_port: &str) -> Result<(), String> {
    let right: SocketAddr = (
        [127, 0, 0, 1],
        right_port
            .parse::<u16>()
            .map_err(|e| format!("--floor-forwarder {right_port:?}: {e}"))?,
    )
        .into();
    let s = socket()?;
    announce(&s)?;
    let mut left = None;
    let mut buf = vec![0u8; 65_536];
    loop {
        let (n, from) = s.recv_from(&mut buf).map_err(|e| format!("recv: {e}"))?;
        let to = if from == right {
            match left {
                Some(l) => l,
                None => continue,
            }
        } else {
            left = Some(from);
            right
        };
        s.send_to(&buf[..n], to).map_err(|e| format!("send: {e}"))?;
    }
}

/// `roam-lab --floor-echo`: once a round's message is whole, sends a message of the same
/// size back to whoever sent its last piece. Runs until killed.
pub fn echo() -> Result<(), String> {
    let s = socket()?;
    announce(&s)?;
    let mut buf = vec![0u8; 65_536];
    let mut out = vec![0u8; HEADER + PIECE];
    let mut gather = Gather::default();
    loop {
        let (n, from) = s.recv_from(&mut buf).map_err(|e| format!("recv: {e}"))?;
        let Some((piece, len)) = Piece::decode(&buf[..n]) else {
            continue;
        };
        if gather.take(piece, len) {
            send_message(&s, from, &mut out, piece.round, piece.total as usize)?;
        }
    }
}

fn send_message(
    s: &UdpSocket,
    to: SocketAddr,
    out: &mut [u8],
    round: u64,
    size: usize,
) -> Result<(), String> {
    let total = u32::try_from(size).map_err(|_| format!("{size} bytes: too large"))?;
    for (offset, len) in pieces(size) {
        Piece {
            round,
            offset: offset as u32,
            total,
        }
        .encode(out);
        s.send_to(&out[..HEADER + len], to)
            .map_err(|e| format!("send: {e}"))?;
    }
    Ok(())
}

/// One shape at one size: `count` echoes (after a warm-up) through `forwarders` processes.
pub fn run(lab_exe: &Path, round: usize, size: usize, forwarders: usize, count: u64) -> FloorRun {
    let mut r = FloorRun {
        round,
        size,
        forwarders,
        count,
        median_us: None,
        p99_us: None,
        lost: 0,
        forwarder_cpu_us: None,
        error: None,
    };
    match measure(lab_exe, size, forwarders, count) {
        Ok(Echoes {
            mut rtts,
            lost,
            forwarder_cpu_ns,
        }) => {
            rtts.sort_by(f64::total_cmp);
            r.lost = lost;
            r.forwarder_cpu_us = forwarder_cpu_ns
                .filter(|_| forwarders > 0 && count > 0)
                .map(|ns| ns as f64 / 1e3 / forwarders as f64 / (WARMUP + count) as f64);
            if !rtts.is_empty() {
                r.median_us = Some(rtts[rtts.len() / 2]);
                r.p99_us = Some(rtts[(rtts.len() * 99 / 100).min(rtts.len() - 1)]);
            }
        }
        Err(e) => r.error = Some(e),
    }
    r
}

fn port_of(p: &Proc) -> Result<u16, String> {
    let line = p.wait_line(Duration::from_secs(10), |l| l.starts_with("port "))?;
    line[5..]
        .trim()
        .parse()
        .map_err(|e| format!("{}: {line:?}: {e}", p.name))
}

/// A process's CPU time so far in nanoseconds: the first field of its main thread's
/// `/proc/PID/schedstat` (the processes in between have no other thread).
fn cpu_ns(pid: u32) -> Option<u64> {
    std::fs::read_to_string(format!("/proc/{pid}/schedstat"))
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

struct Echoes {
    /// Round trips in microseconds.
    rtts: Vec<f64>,
    /// Rounds that did not come back.
    lost: u64,
    /// CPU the processes in between spent over all rounds (warm-up included), together.
    forwarder_cpu_ns: Option<u64>,
}

fn measure(lab_exe: &Path, size: usize, forwarders: usize, count: u64) -> Result<Echoes, String> {
    // Started from the echo outwards: each forwarder is told its right-hand neighbour.
    let mut procs = vec![Proc::start(
        "floor-echo",
        lab_exe,
        &["--floor-echo".into()],
    )?];
    let mut next = port_of(&procs[0])?;
    for i in (1..=forwarders).rev() {
        let p = Proc::start(
            &format!("floor-forwarder-{i}"),
            lab_exe,
            &["--floor-forwarder".into(), next.to_string()],
        )?;
        next = port_of(&p)?;
        procs.push(p);
    }
    let s = socket()?;
    s.connect(("127.0.0.1", next))
        .map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(ROUND_TIMEOUT))
        .map_err(|e| e.to_string())?;
    let mut out = vec![0u8; HEADER + PIECE];
    let mut buf = vec![0u8; 65_536];
    let mut rtts = Vec::with_capacity(count as usize);
    let mut lost = 0;
    let total = u32::try_from(size).map_err(|_| format!("{size} bytes: too large"))?;
    let in_between = || -> Option<u64> { procs[1..].iter().map(|p| cpu_ns(p.pid())).sum() };
    let cpu_before = in_between();
    for round in 0..WARMUP + count {
        let started = Instant::now();
        for (offset, len) in pieces(size) {
            Piece {
                round,
                offset: offset as u32,
                total,
            }
            .encode(&mut out);
            s.send(&out[..HEADER + len])
                .map_err(|e| format!("send: {e}"))?;
        }
        let mut gather = Gather::default();
        let back = loop {
            let n = match s.recv(&mut buf) {
                Ok(n) => n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    break false
                }
                Err(e) => return Err(format!("recv: {e}")),
            };
            // Pieces of an earlier, timed-out round are left behind.
            if let Some((piece, len)) = Piece::decode(&buf[..n]).filter(|(p, _)| p.round == round) {
                if gather.take(piece, len) {
                    break true;
                }
            }
        };
        if round < WARMUP {
            continue;
        }
        if back {
            rtts.push(started.elapsed().as_secs_f64() * 1e6);
        } else {
            lost += 1;
        }
    }
    let forwarder_cpu_ns = cpu_before
        .zip(in_between())
        .map(|(a, b)| b.saturating_sub(a));
    drop(procs);
    Ok(Echoes {
        rtts,
        lost,
        forwarder_cpu_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_piece_header_round_trips_and_short_datagrams_are_refused() {
        let p = Piece {
            round: 7,
            offset: 60_000,
            total: 1 << 20,
        };
        let mut b = [0u8; HEADER + 3];
        p.encode(&mut b);
        assert_eq!(Piece::decode(&b), Some((p, 3)));
        assert_eq!(Piece::decode(&b[..HEADER - 1]), None);
    }

    #[test]
    fn a_message_is_cut_into_pieces_that_cover_it_once() {
        assert_eq!(pieces(8).collect::<Vec<_>>(), [(0, 8)]);
        assert_eq!(pieces(PIECE).collect::<Vec<_>>(), [(0, PIECE)]);
        let mib: Vec<_> = pieces(1 << 20).collect();
        assert_eq!(mib.len(), 18);
        assert_eq!(mib.iter().map(|p| p.1).sum::<usize>(), 1 << 20);
        assert!(mib.windows(2).all(|w| w[0].0 + w[0].1 == w[1].0));
    }

    #[test]
    fn a_message_is_whole_when_its_round_has_all_its_bytes() {
        let mut g = Gather::default();
        let piece = |round, total| Piece {
            round,
            offset: 0,
            total,
        };
        assert!(!g.take(piece(1, 100), 60));
        // A late piece of another round starts over instead of completing this one.
        assert!(!g.take(piece(0, 100), 60));
        assert!(!g.take(piece(1, 100), 60));
        assert!(g.take(piece(1, 100), 40));
    }
}
