//! The UDP shell: one listening socket; per client source address a flow with its own upstream
//! socket connected to the target and a [`DelayLine`] per direction.
//!
//! The listening task only stamps arrivals and hands them to the flow's task (bounded channel);
//! the flow task owns both lines, sleeps until the next departure and sends what is due. A flow
//! with nothing queued and no packet either way for `idle_timeout` ends and is forgotten.
//!
//! With a shared bottleneck (`--rate-mbit`), every datagram of every flow of every listener
//! passes, per direction, through one [`Bottleneck`] before its flow's delay line: the
//! bottleneck says when the datagram has been sent at the link's rate (or drops it), and the
//! datagram enters the delay line at that instant.

use std::collections::HashMap;
use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::net::UdpSocket;
use tokio::sync::mpsc;

use crate::bottleneck::{Admission, Bottleneck};
use crate::delay_line::{derive_seed, DelayLine, LineConfig, Verdict};
use crate::stats::{DirCounters, ListenerCounters};

/// Largest datagram the relay carries.
const MAX_DATAGRAM: usize = 65_536;
/// IPv4 and UDP headers: a datagram of N bytes is an IP packet of N + this.
pub const IP_UDP_HEADERS: usize = 28;
/// The --mtu range: QUIC's 1200-byte datagrams must pass; at most what UDP carries.
pub const MIN_MTU: usize = 1200 + IP_UDP_HEADERS;
pub const MAX_MTU: usize = MAX_DATAGRAM;
/// Packets waiting between the listening task and a flow task (beyond: counted as overflow).
/// The flow task drains it at once; this only absorbs scheduling hiccups.
const FLOW_CHANNEL: usize = 1024;

/// The bottleneck every UDP flow of the process shares, one per direction.
pub struct SharedBottleneck {
    pub client_to_target: Mutex<Bottleneck>,
    pub target_to_client: Mutex<Bottleneck>,
}

#[derive(Clone)]
pub struct UdpParams {
    pub line: LineConfig,
    pub idle_timeout: Duration,
    pub max_flows: usize,
    pub seed: u64,
    /// This listener's number, for seed derivation.
    pub listener: u64,
    /// SO_RCVBUF / SO_SNDBUF of every relay socket (the kernel caps it at net.core.rmem_max).
    pub socket_buffer: usize,
    /// The shared bottleneck, if any (`--rate-mbit`).
    pub bottleneck: Option<Arc<SharedBottleneck>>,
    /// Largest datagram the emulated path carries (`--mtu` less the headers).
    pub max_payload: usize,
}

struct FlowHandle {
    id: u64,
    tx: mpsc::Sender<(Instant, Bytes)>,
}

/// Relays datagrams arriving on `sock` to `target` and the replies back, until the process ends.
pub async fn run(sock: UdpSocket, target: SocketAddr, p: UdpParams, c: Arc<ListenerCounters>) {
    let sock = Arc::new(sock);
    let mut flows: HashMap<SocketAddr, FlowHandle> = HashMap::new();
    let (expired_tx, mut expired_rx) = mpsc::unbounded_channel::<(SocketAddr, u64)>();
    let mut next_id = 0u64;
    let mut buf = vec![0u8; MAX_DATAGRAM];
    loop {
        let (n, from) = tokio::select! {
            r = sock.recv_from(&mut buf) => match r {
                Ok(x) => x,
                // ICMP errors for earlier replies surface here on some systems: not fatal.
                Err(_) => continue,
            },
            Some((addr, id)) = expired_rx.recv() => {
                if flows.get(&addr).is_some_and(|h| h.id == id) {
                    flows.remove(&addr);
                }
                continue;
            }
        };
        let now = Instant::now();
        let mut pkt = (now, Bytes::copy_from_slice(&buf[..n]));
        // At most two tries: the second after finding the flow's task gone (it expired).
        for _ in 0..2 {
            if !flows.contains_key(&from) {
                if flows.len() >= p.max_flows {
                    c.refused.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    DirCounters::add(&c.client_to_target.overflow_packets, 1);
                    DirCounters::add(&c.client_to_target.overflow_bytes, n);
                    break;
                }
                let upstream = match open_upstream(target, p.socket_buffer) {
                    Ok(u) => u,
                    Err(e) => {
                        eprintln!("roam-wan-relay: udp upstream socket for {from}: {e}");
                        c.upstream_failures
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        break;
                    }
                };
                next_id += 1;
                let (tx, rx) = mpsc::channel(FLOW_CHANNEL);
                flows.insert(from, FlowHandle { id: next_id, tx });
                c.opened.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let flow = Flow {
                    id: next_id,
                    client: from,
                    listen: sock.clone(),
                    upstream,
                    c2t: DelayLine::new(p.line, derive_seed(p.seed, p.listener, next_id, 0)),
                    t2c: DelayLine::new(p.line, derive_seed(p.seed, p.listener, next_id, 1)),
                    idle: p.idle_timeout,
                    counters: c.clone(),
                    bottleneck: p.bottleneck.clone(),
                    max_payload: p.max_payload,
                };
                tokio::spawn(flow.run(rx, expired_tx.clone()));
            }
            let h = &flows[&from];
            match h.tx.try_send(pkt) {
                Ok(()) => break,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    DirCounters::add(&c.client_to_target.overflow_packets, 1);
                    DirCounters::add(&c.client_to_target.overflow_bytes, n);
                    break;
                }
                Err(mpsc::error::TrySendError::Closed(back)) => {
                    pkt = back;
                    flows.remove(&from);
                }
            }
        }
    }
}

/// A UDP socket bound to `addr` with large kernel buffers, so that bursts (QUIC sends 10 or
/// more datagrams back to back) are not dropped before the relay reads them.
pub fn bind(addr: SocketAddr, buffer: usize) -> io::Result<UdpSocket> {
    UdpSocket::from_std(socket(addr, buffer)?.into())
}

/// A fresh socket of the target's family, connected to it (so only the target's replies pass).
fn open_upstream(target: SocketAddr, buffer: usize) -> io::Result<UdpSocket> {
    let any: SocketAddr = match target {
        SocketAddr::V4(_) => (Ipv4Addr::UNSPECIFIED, 0).into(),
        SocketAddr::V6(_) => (Ipv6Addr::UNSPECIFIED, 0).into(),
    };
    let s = socket(any, buffer)?;
    s.connect(&target.into())?;
    UdpSocket::from_std(s.into())
}

fn socket(addr: SocketAddr, buffer: usize) -> io::Result<socket2::Socket> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    // Best effort: the kernel caps the size, and a smaller buffer still works.
    let _ = s.set_recv_buffer_size(buffer);
    let _ = s.set_send_buffer_size(buffer);
    s.bind(&addr.into())?;
    s.set_nonblocking(true)?;
    Ok(s)
}

struct Flow {
    id: u64,
    client: SocketAddr,
    listen: Arc<UdpSocket>,
    upstream: UdpSocket,
    c2t: DelayLine<Bytes>,
    t2c: DelayLine<Bytes>,
    idle: Duration,
    counters: Arc<ListenerCounters>,
    bottleneck: Option<Arc<SharedBottleneck>>,
    max_payload: usize,
}

impl Flow {
    async fn run(
        mut self,
        mut rx: mpsc::Receiver<(Instant, Bytes)>,
        expired: mpsc::UnboundedSender<(SocketAddr, u64)>,
    ) {
        let mut last_activity = Instant::now();
        let mut buf = vec![0u8; MAX_DATAGRAM];
        loop {
            let idle_at = last_activity + self.idle;
            let wake = [
                self.c2t.next_departure(),
                self.t2c.next_departure(),
                Some(idle_at),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(idle_at);
            tokio::select! {
                m = rx.recv() => match m {
                    Some((at, pkt)) => {
                        last_activity = last_activity.max(at);
                        let b = self.bottleneck.as_deref().map(|b| &b.client_to_target);
                        offer(&mut self.c2t, b, at, pkt, &self.counters.client_to_target, self.max_payload);
                        // Take what else is waiting without another trip through select.
                        while let Ok((at, pkt)) = rx.try_recv() {
                            last_activity = last_activity.max(at);
                            offer(&mut self.c2t, b, at, pkt, &self.counters.client_to_target, self.max_payload);
                        }
                    }
                    None => return, // the listener is gone
                },
                r = self.upstream.recv(&mut buf) => {
                    let now = Instant::now();
                    if let Ok(n) = r {
                        last_activity = now;
                        let pkt = Bytes::copy_from_slice(&buf[..n]);
                        let b = self.bottleneck.as_deref().map(|b| &b.target_to_client);
                        offer(&mut self.t2c, b, now, pkt, &self.counters.target_to_client, self.max_payload);
                    }
                    // Err: an ICMP error (target port closed) reported on the connected
                    // socket; the flow stays, like a NAT mapping would.
                }
                _ = tokio::time::sleep_until(wake.into()) => {}
            }
            let now = Instant::now();
            while let Some(pkt) = self.c2t.pop_due(now) {
                let c = &self.counters.client_to_target;
                forwarding(pkt.len(), c);
                if self.upstream.send(&pkt).await.is_err() {
                    not_sent(pkt.len(), c);
                }
            }
            while let Some(pkt) = self.t2c.pop_due(now) {
                let c = &self.counters.target_to_client;
                forwarding(pkt.len(), c);
                if self.listen.send_to(&pkt, self.client).await.is_err() {
                    not_sent(pkt.len(), c);
                }
            }
            if self.c2t.is_empty() && self.t2c.is_empty() && now >= last_activity + self.idle {
                break;
            }
        }
        self.counters
            .closed
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let _ = expired.send((self.client, self.id));
    }
}

/// Passes `pkt`, which arrived at `at`, through the shared bottleneck (if any) into `line`;
/// drops it if it is larger than the path carries (`max_payload`).
fn offer(
    line: &mut DelayLine<Bytes>,
    bottleneck: Option<&Mutex<Bottleneck>>,
    at: Instant,
    pkt: Bytes,
    c: &DirCounters,
    max_payload: usize,
) {
    let n = pkt.len();
    if n > max_payload {
        DirCounters::add(&c.too_big_packets, 1);
        return;
    }
    let at = match bottleneck {
        None => at,
        Some(b) => {
            // A poisoned lock only means another flow task panicked; the counters are whole.
            let mut b = b.lock().unwrap_or_else(|e| e.into_inner());
            // The clock is read under the lock, so the flows' arrivals reach the shared queue
            // in time order even when a flow task runs late.
            match b.offer(Instant::now().max(at), n) {
                Admission::Sent { departure, .. } => departure,
                Admission::Dropped => {
                    DirCounters::add(&c.bottleneck_dropped_packets, 1);
                    DirCounters::add(&c.bottleneck_dropped_bytes, n);
                    return;
                }
            }
        }
    };
    match line.offer(at, pkt) {
        Verdict::Scheduled { .. } => {}
        Verdict::Lost => {
            DirCounters::add(&c.lost_packets, 1);
            DirCounters::add(&c.lost_bytes, n);
        }
        Verdict::QueueFull => {
            DirCounters::add(&c.overflow_packets, 1);
            DirCounters::add(&c.overflow_bytes, n);
        }
    }
}

/// Counts a datagram as forwarded before it goes to the socket: whoever receives it, and then
/// stops the relay, finds it in the final counters (counted after the send, it could be
/// missing from a snapshot taken in between).
fn forwarding(n: usize, c: &DirCounters) {
    DirCounters::add(&c.forwarded_packets, 1);
    DirCounters::add(&c.forwarded_bytes, n);
}

/// A datagram [`forwarding`] counted that the socket refused: a send error instead.
fn not_sent(n: usize, c: &DirCounters) {
    c.forwarded_packets
        .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    c.forwarded_bytes
        .fetch_sub(n as u64, std::sync::atomic::Ordering::Relaxed);
    DirCounters::add(&c.send_errors, 1);
}
