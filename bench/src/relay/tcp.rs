//! The TCP shell: per accepted connection, a connection to the target and one pump per
//! direction. A pump reads chunks, stamps them into an order-keeping [`DelayLine`] in stall mode
//! and writes each chunk when it is due. It reads only while the line has room (back-pressure:
//! the sender's kernel buffers fill and its TCP window closes), and forwards the end of stream
//! (FIN) after everything before it has been delivered.

use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

use crate::delay_line::{derive_seed, DelayLine, LineConfig, Verdict};
use crate::stats::{DirCounters, ListenerCounters};

#[derive(Debug, Clone, Copy)]
pub struct TcpParams {
    /// Must be order-keeping with a stall loss mode.
    pub line: LineConfig,
    pub max_conns: usize,
    /// Largest chunk read at once (the unit the loss model applies to).
    pub chunk_bytes: usize,
    pub seed: u64,
    /// This listener's number, for seed derivation.
    pub listener: u64,
}

/// Accepts connections on `listener` and relays each to `target`, until the process ends.
pub async fn run(
    listener: TcpListener,
    target: SocketAddr,
    p: TcpParams,
    c: Arc<ListenerCounters>,
) {
    let active = Arc::new(AtomicUsize::new(0));
    let mut next_id = 0u64;
    loop {
        let client = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                // Typically EMFILE: back off instead of spinning.
                eprintln!("roam-wan-relay: tcp accept: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        if active.load(Relaxed) >= p.max_conns {
            c.refused.fetch_add(1, Relaxed);
            continue; // dropping `client` closes it
        }
        active.fetch_add(1, Relaxed);
        next_id += 1;
        let (id, c, active) = (next_id, c.clone(), active.clone());
        tokio::spawn(async move {
            relay(client, target, id, &p, &c).await;
            active.fetch_sub(1, Relaxed);
        });
    }
}

async fn relay(
    client: TcpStream,
    target: SocketAddr,
    id: u64,
    p: &TcpParams,
    c: &ListenerCounters,
) {
    let upstream = match TcpStream::connect(target).await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("roam-wan-relay: tcp connect to {target}: {e}");
            c.upstream_failures.fetch_add(1, Relaxed);
            return; // dropping `client` closes it
        }
    };
    c.opened.fetch_add(1, Relaxed);
    // The relay adds the configured delay, not Nagle's.
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (cr, cw) = client.into_split();
    let (ur, uw) = upstream.into_split();
    let c2t = DelayLine::new(p.line, derive_seed(p.seed, p.listener, id, 0));
    let t2c = DelayLine::new(p.line, derive_seed(p.seed, p.listener, id, 1));
    // An error either way (reset) ends both directions: both sockets are dropped.
    let _ = tokio::try_join!(
        pump(cr, uw, c2t, p.chunk_bytes, &c.client_to_target),
        pump(ur, cw, t2c, p.chunk_bytes, &c.target_to_client),
    );
    c.closed.fetch_add(1, Relaxed);
}

async fn pump(
    mut r: OwnedReadHalf,
    mut w: OwnedWriteHalf,
    mut line: DelayLine<Bytes>,
    chunk_bytes: usize,
    c: &DirCounters,
) -> io::Result<()> {
    let mut buf = vec![0u8; chunk_bytes];
    let mut eof = false;
    loop {
        if eof && line.is_empty() {
            // Everything before the FIN is delivered: pass the FIN on.
            let _ = w.shutdown().await;
            return Ok(());
        }
        let room = line.room().min(chunk_bytes);
        let next = line.next_departure();
        tokio::select! {
            n = r.read(&mut buf[..room]), if !eof && room > 0 => {
                let n = n?;
                if n == 0 {
                    eof = true;
                } else {
                    let now = Instant::now();
                    match line.offer(now, Bytes::copy_from_slice(&buf[..n])) {
                        Verdict::Scheduled { stalled, .. } => {
                            if stalled {
                                DirCounters::add(&c.stalled_chunks, 1);
                            }
                        }
                        // Cannot happen: we read at most `room` bytes and stream lines stall
                        // instead of dropping. Refuse to corrupt the stream if it ever does.
                        v => return Err(io::Error::other(format!("stream line refused a chunk: {v:?}"))),
                    }
                }
            }
            _ = tokio::time::sleep_until(next.unwrap_or_else(Instant::now).into()), if next.is_some() => {}
            else => return Err(io::Error::other("pump has nothing to wait for")),
        }
        let now = Instant::now();
        while let Some(chunk) = line.pop_due(now) {
            if let Err(e) = w.write_all(&chunk).await {
                DirCounters::add(&c.send_errors, 1);
                return Err(e);
            }
            DirCounters::add(&c.forwarded_packets, 1);
            DirCounters::add(&c.forwarded_bytes, chunk.len());
        }
    }
}
