//! A router under a flood of connections that never finish their handshake: its file
//! descriptors stay bounded, legitimate peers still connect over TCP and QUIC, the stalled
//! connections are closed at the handshake timeout, and the log says so in a few lines.

use std::collections::HashSet;
use std::io::Write;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4, TcpStream, UdpSocket};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::common::*;

const T: Duration = Duration::from_secs(30);
/// The router's handshake timeout in this test (the default is 10 s).
const HANDSHAKE_MS: u64 = 2000;
/// The router's default limits on unauthenticated connections.
const MAX_UNAUTHENTICATED: usize = 256;
const FLOOD_CONNECTIONS: usize = 1000;

/// The start of a TLS record that announces a 512-byte ClientHello, of which only the
/// first 43 bytes ever arrive.
const PARTIAL_CLIENT_HELLO: [u8; 43] = {
    let mut b = [0x2a; 43];
    let head = [
        0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03,
    ];
    let mut i = 0;
    while i < head.len() {
        b[i] = head[i];
        i += 1;
    }
    b
};

fn raise_open_file_limit(wanted: u64) {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE).expect("RLIMIT_NOFILE");
    if soft < wanted {
        setrlimit(Resource::RLIMIT_NOFILE, wanted.min(hard), hard).expect("raise RLIMIT_NOFILE");
    }
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn wait_until(what: &str, timeout: Duration, mut cond: impl FnMut() -> bool) {
    let end = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < end, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Records the most file descriptors a process had open, sampled until stopped.
struct FdSampler {
    stop: Arc<AtomicBool>,
    max: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl FdSampler {
    fn start(pid: u32) -> Self {
        let (stop, max) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicUsize::new(0)),
        );
        let (s, m) = (stop.clone(), max.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                m.fetch_max(open_fds(pid), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        FdSampler {
            stop,
            max,
            thread: Some(thread),
        }
    }

    fn max(&self) -> usize {
        self.max.load(Ordering::Relaxed)
    }
}

impl Drop for FdSampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// `FLOOD_CONNECTIONS` TCP connections that each send half a ClientHello and wait, from
/// many loopback addresses (one of them opening far more than its share). While
/// `sustain` is set, connections the router closes are opened again (at most 50 per 50 ms).
struct Flood {
    stop: Arc<AtomicBool>,
    sustain: Arc<AtomicBool>,
    open: Arc<AtomicUsize>,
    attempts: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

fn source_of(slot: usize) -> Ipv4Addr {
    // Slots 0..120: one greedy address. The rest: 40 addresses, 22 slots each.
    if slot < 120 {
        Ipv4Addr::new(127, 0, 3, 1)
    } else {
        Ipv4Addr::new(127, 0, 1, 1 + ((slot - 120) % 40) as u8)
    }
}

fn stalled_connection(source: Ipv4Addr, target: SocketAddr) -> Option<TcpStream> {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).ok()?;
    s.bind(&SocketAddr::V4(SocketAddrV4::new(source, 0)).into())
        .ok()?;
    s.connect_timeout(&target.into(), Duration::from_secs(1))
        .ok()?;
    let mut s = TcpStream::from(s);
    s.write_all(&PARTIAL_CLIENT_HELLO).ok()?;
    s.set_nonblocking(true).ok()?;
    Some(s)
}

/// Whether the router closed (or reset) the connection.
fn closed(s: &TcpStream) -> bool {
    match s.peek(&mut [0u8; 1]) {
        Ok(0) => true,
        Ok(_) => false,
        Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
    }
}

impl Flood {
    fn start(target: SocketAddr) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let sustain = Arc::new(AtomicBool::new(true));
        let open = Arc::new(AtomicUsize::new(0));
        let attempts = Arc::new(AtomicUsize::new(0));
        let (st, su, op, at) = (
            stop.clone(),
            sustain.clone(),
            open.clone(),
            attempts.clone(),
        );
        let thread = std::thread::spawn(move || {
            let mut slots: Vec<Option<TcpStream>> = (0..FLOOD_CONNECTIONS).map(|_| None).collect();
            // Refills go round the slots, so the greedy address's refused connections do not
            // take every turn from the others.
            let (mut first, mut cursor) = (true, 0);
            while !st.load(Ordering::Relaxed) {
                for slot in slots.iter_mut() {
                    if slot.as_ref().is_some_and(closed) {
                        *slot = None;
                    }
                }
                let budget = match (first, su.load(Ordering::Relaxed)) {
                    (true, _) => FLOOD_CONNECTIONS,
                    (false, true) => 50,
                    (false, false) => 0,
                };
                let (mut opened, mut looked) = (0, 0);
                while opened < budget && looked < FLOOD_CONNECTIONS {
                    let i = (cursor + looked) % FLOOD_CONNECTIONS;
                    looked += 1;
                    if slots[i].is_none() {
                        opened += 1;
                        at.fetch_add(1, Ordering::Relaxed);
                        slots[i] = stalled_connection(source_of(i), target);
                    }
                }
                cursor = (cursor + looked) % FLOOD_CONNECTIONS;
                first = false;
                op.store(slots.iter().flatten().count(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        });
        Flood {
            stop,
            sustain,
            open,
            attempts,
            thread: Some(thread),
        }
    }

    /// Stops opening new connections; the open ones stay, stalled.
    fn hold(&self) {
        self.sustain.store(false, Ordering::Relaxed);
    }

    fn open(&self) -> usize {
        self.open.load(Ordering::Relaxed)
    }

    fn attempts(&self) -> usize {
        self.attempts.load(Ordering::Relaxed)
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Genuine QUIC Initial packets (each the first flight of a new connection attempt, with a
/// ClientHello), captured from a real quinn client that dialled a sink instead of the router.
fn quic_initials(net: &Net, n: usize) -> Vec<Vec<u8>> {
    net.issue("mallory", "client");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let id = roam_pki::load_identity(Path::new(&net.pki), "mallory").unwrap();
        let ep =
            roam_net::quic::endpoint(&id, &roam_net::link::LinkConfig::default(), None).unwrap();
        let sink = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let sink_addr = sink.local_addr().unwrap();
        let mut attempts = Vec::new();
        for _ in 0..n {
            attempts.push(ep.connect(sink_addr, "router.roam").unwrap());
        }
        let (mut seen, mut out) = (HashSet::new(), Vec::new());
        let mut buf = vec![0u8; 65536];
        while out.len() < n {
            let (len, _) = tokio::time::timeout(T, sink.recv_from(&mut buf))
                .await
                .expect("the client sends its Initials")
                .unwrap();
            let d = &buf[..len];
            // Long header: flags, version (4 bytes), DCID length, DCID. Retransmissions
            // repeat a DCID; keep one Initial per connection attempt.
            let dcid = d.get(6..6 + usize::from(d[5])).unwrap().to_vec();
            if d[0] & 0x80 != 0 && seen.insert(dcid) {
                out.push(d.to_vec());
            }
        }
        drop(attempts);
        out
    })
}

/// Sends each Initial from its own UDP socket on one of `sources` loopback addresses; the
/// sockets never answer. Returns them so they stay bound while the router talks to them.
fn send_initials(initials: &[Vec<u8>], sources: u8, router: &str) -> Vec<UdpSocket> {
    initials
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let src = Ipv4Addr::new(127, 0, 2, 1 + (i % usize::from(sources)) as u8);
            let s = UdpSocket::bind((src, 0)).unwrap();
            s.send_to(d, router).unwrap();
            s
        })
        .collect()
}

fn warn_lines(p: &Proc) -> Vec<String> {
    p.logs()
        .lines()
        .filter(|l| l.contains("WARN"))
        .map(str::to_string)
        .collect()
}

/// `name=value` from a log line.
fn field(line: &str, name: &str) -> Option<u64> {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{name}=")))
        .and_then(|v| v.parse().ok())
}

#[test]
fn a_flood_of_stalled_handshakes_neither_exhausts_the_router_nor_locks_peers_out() {
    raise_open_file_limit(4096);
    let net = Net::new("handshake-flood");
    let (mut router, quic) = net.router_with(
        "r1",
        "127.0.0.1:0",
        &[],
        &[
            "--listen-tcp",
            "127.0.0.1:0",
            "--handshake-timeout-ms",
            &HANDSHAKE_MS.to_string(),
        ],
    );
    let tcp = router
        .line(Duration::from_secs(5))
        .and_then(|l| l.strip_prefix("listening tcp ").map(str::to_string))
        .expect("tcp address");
    let pid = router.pid();

    // QUIC first, on a quiet router: attempts that never answer the server's flight are
    // admitted (one per address; the others must prove their address first, and cannot)
    // and closed at the handshake timeout.
    let initials = quic_initials(&net, 40);
    let _quic_attackers = send_initials(&initials, 10, &quic);
    assert!(
        router.wait_log("closed QUIC connection from 127.0.2.", T),
        "half-open QUIC connections were not closed at the handshake timeout: {}",
        router.logs()
    );

    // The router is up and has done some work: what it holds now is its own.
    let baseline = open_fds(pid);

    // Then 1,000 stalled TCP connections, kept up as the router closes them.
    let fds = FdSampler::start(pid);
    let flood = Flood::start(tcp.parse().unwrap());
    wait_until("the flood opened its connections", T, || {
        flood.attempts() >= FLOOD_CONNECTIONS
    });
    wait_until("the flood fills the router's handshake slots", T, || {
        open_fds(pid) >= baseline + MAX_UNAUTHENTICATED * 3 / 4
    });
    // A second QUIC wave, now that the router is under load: Retry for all of it.
    let second_wave = quic_initials(&net, 40);
    let _more_quic_attackers = send_initials(&second_wave, 10, &quic);

    // Meanwhile legitimate peers connect, over TCP and over QUIC, and receive.
    let sub_tcp = net.sub("/flood", "sub-tcp", &format!("tcp://{tcp}"), &[]);
    let sub_quic = net.sub("/flood", "sub-quic", &quic, &[]);
    wait_subscribed(&sub_tcp);
    wait_subscribed(&sub_quic);
    let _publisher = net.publisher("/flood", "talker", &quic, &["--size", "64", "--rate", "20"]);
    for (sub, how) in [(&sub_tcp, "TCP"), (&sub_quic, "QUIC")] {
        let got = collect(sub, 5, T);
        assert_eq!(
            got.len(),
            5,
            "the {how} subscriber received too little: {}",
            sub.logs()
        );
    }
    let bound = baseline + MAX_UNAUTHENTICATED + 16;
    assert!(
        fds.max() <= bound,
        "the router held {} file descriptors (baseline {baseline}, bound {bound})",
        fds.max()
    );

    // Stop reconnecting: every stalled connection is closed at the handshake timeout.
    flood.hold();
    wait_until("the router closed every stalled connection", T, || {
        flood.open() == 0
    });
    wait_until(
        "the router's descriptors are back to its baseline",
        T,
        || open_fds(pid) <= baseline + 4,
    );
    drop(fds);

    // The log: a few lines, and a count of what they stand for.
    assert!(
        router.wait_log("in the last", T),
        "no summary count in the log: {}",
        router.logs()
    );
    router.terminate();
    let logs = router.logs();
    let warns = warn_lines(&router);
    assert!(
        warns.len() <= 40,
        "{} WARN lines for {} connection attempts:\n{}",
        warns.len(),
        flood.attempts(),
        warns.join("\n")
    );
    for needle in [
        "refused TCP connection from 127.0.3.1",
        "not authenticated within 2s",
    ] {
        assert!(logs.contains(needle), "no {needle:?} in the log:\n{logs}");
    }
    let stats = logs
        .lines()
        .rfind(|l| l.contains("roam::stats") && l.contains("unauthenticated connections"))
        .unwrap_or_else(|| panic!("no admission status line:\n{logs}"));
    let n = |name| field(stats, name).unwrap_or_else(|| panic!("no {name} in {stats}"));
    assert!(n("refused_per_source") > 0, "{stats}");
    assert!(n("refused_total") + n("evicted") > 0, "{stats}");
    assert!(n("timed_out") >= MAX_UNAUTHENTICATED as u64 / 2, "{stats}");
    assert!(n("retried") >= 30, "{stats}");
    assert!(n("authenticated") >= 3, "{stats}");
    assert_eq!(n("pending"), 0, "{stats}");
}
