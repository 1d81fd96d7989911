//! The UDP socket under a QUIC endpoint, with two fewer system calls per wake-up than
//! quinn's tokio socket (bench/results/profile-echo.md).
//!
//! - **Readable interest only.** tokio registers a `UdpSocket` for reading and writing, and
//!   Linux signals "writable" each time a sent datagram's memory is given back: on loopback
//!   within every `sendmsg`, on a NIC at every transmit completion. Each such edge ends the
//!   worker's next `epoll_wait` at once, for nothing: a UDP send almost never blocks. Here the
//!   socket is registered for reading only; a sender that does find it full
//!   ([`io::ErrorKind::WouldBlock`]) registers a duplicate of the descriptor for writing until
//!   the kernel says it has room again (`epoll_ctl` reports a descriptor that is ready when it
//!   is added, so no wake-up is missed), then drops it.
//! - **A short read ends the batch.** quinn reads until the socket reports it is empty, so
//!   every wake-up for one datagram costs a second `recvmmsg` that finds nothing. When
//!   `recvmmsg` returns fewer datagrams than it was asked for, the queue was empty at that
//!   moment, and the socket's readiness is cleared right there. The next datagram's arrival
//!   raises a new edge (Linux wakes an edge-triggered `epoll` on every datagram), and tokio
//!   clears readiness only if no event came in since it was read, so none is lost.

use std::fmt;
use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use quinn::udp::{RecvMeta, Transmit, UdpSocketState, BATCH_SIZE};
use quinn::{AsyncUdpSocket, UdpPoller};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// A QUIC endpoint's UDP socket (see the module's documentation).
pub struct LinkSocket {
    io: AsyncFd<std::net::UdpSocket>,
    state: UdpSocketState,
    /// A send found the socket's buffer full; cleared by the first poller that sees room.
    blocked: AtomicBool,
    /// Datagrams of the endpoint's largest size one receive may bring ([`receive_segments`]).
    receive_segments: usize,
}

impl LinkSocket {
    /// Takes `socket` (made non-blocking by quinn's socket state) for an endpoint that takes
    /// datagrams of up to `max_udp_payload` bytes; needs a tokio runtime.
    pub fn new(socket: std::net::UdpSocket, max_udp_payload: u16) -> io::Result<Self> {
        let state = UdpSocketState::new((&socket).into())?;
        let receive_segments = receive_segments(state.gro_segments(), max_udp_payload);
        Ok(Self {
            io: register(socket, Interest::READABLE)?,
            state,
            blocked: AtomicBool::new(false),
            receive_segments,
        })
    }
}

/// The most coalesced bytes one receive brings: the kernel's receive offload (GRO) stops a
/// batch before it reaches `gro_max_size`, 64 KiB unless raised for BIG TCP (and loopback
/// hands over a segmentation-offload send whole, which the kernel limits to 65,507 bytes).
const MAX_RECEIVE_BATCH: usize = 64 << 10;

/// How many datagrams of `max_udp_payload` bytes a receive slot holds. quinn sizes each of
/// its 32 slots for 64 of them (the most segments GRO coalesces): 18.4 MB at a 9,000-byte
/// bound, 9.2 MB at 4,500, for batches that never exceed 64 KiB. As many as make up a whole
/// batch keep every slot at least 64 KiB, whatever the bound: about 2.2 MB in all.
fn receive_segments(gro_segments: usize, max_udp_payload: u16) -> usize {
    let payload = usize::from(max_udp_payload).clamp(1200, MAX_RECEIVE_BATCH);
    gro_segments.min(MAX_RECEIVE_BATCH.div_ceil(payload)).max(1)
}

impl fmt::Debug for LinkSocket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LinkSocket")
            .field("socket", self.io.get_ref())
            .field("blocked", &self.blocked.load(Ordering::Relaxed))
            .finish()
    }
}

/// Registers `fd` with tokio's reactor for `interest` only. tokio 1.54 deprecates the safe
/// constructor for types that could hand out another descriptor later; a `UdpSocket` and an
/// `OwnedFd` own theirs for life, which is what the unsafe replacement asks the caller to
/// promise (and this workspace has no unsafe code).
#[allow(deprecated)]
fn register<T: AsRawFd>(fd: T, interest: Interest) -> io::Result<AsyncFd<T>> {
    AsyncFd::with_interest(fd, interest)
}

/// Whether `received` datagrams out of room for `asked` leave the socket's queue empty.
fn drained(received: usize, asked: usize) -> bool {
    received < asked.min(BATCH_SIZE)
}

impl AsyncUdpSocket for LinkSocket {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        Box::pin(RoomPoller {
            socket: self,
            waiting: None,
        })
    }

    fn try_send(&self, transmit: &Transmit) -> io::Result<()> {
        let sent = self.state.send(self.io.get_ref().into(), transmit);
        if matches!(&sent, Err(e) if e.kind() == io::ErrorKind::WouldBlock) {
            self.blocked.store(true, Ordering::Release);
        }
        sent
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [io::IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.io.poll_read_ready(cx))?;
            match self.state.recv(self.io.get_ref().into(), bufs, meta) {
                Ok(n) => {
                    if drained(n, bufs.len()) {
                        guard.clear_ready();
                    }
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => guard.clear_ready(),
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    fn local_addr(&self) -> io::Result<std::net::SocketAddr> {
        self.io.get_ref().local_addr()
    }

    fn may_fragment(&self) -> bool {
        self.state.may_fragment()
    }

    fn max_transmit_segments(&self) -> usize {
        self.state.max_gso_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.receive_segments
    }
}

/// One connection's wait for room in the socket: quinn asks it before every send.
struct RoomPoller {
    socket: Arc<LinkSocket>,
    /// A duplicate of the socket registered for writing, while this connection waits.
    waiting: Option<AsyncFd<OwnedFd>>,
}

impl fmt::Debug for RoomPoller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RoomPoller")
            .field("waiting", &self.waiting.is_some())
            .finish()
    }
}

impl UdpPoller for RoomPoller {
    fn poll_writable(self: Pin<&mut Self>, cx: &mut Context) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.socket.blocked.load(Ordering::Acquire) {
            this.waiting = None;
            return Poll::Ready(Ok(()));
        }
        // A send from outside the runtime's tasks (a write sent from the writing thread,
        // vendor/quinn's ROAM.md) cannot wait for room: it leaves the packet to the
        // connection's driver, which it wakes, and which waits here in its task.
        if !super::lane_stream::in_a_task() {
            return Poll::Pending;
        }
        let waiting = match &mut this.waiting {
            Some(fd) => fd,
            none => {
                let fd = this.socket.io.get_ref().as_fd().try_clone_to_owned()?;
                none.insert(register(fd, Interest::WRITABLE)?)
            }
        };
        let room = match waiting.poll_write_ready(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(ready) => ready.map(drop),
        };
        this.waiting = None;
        if room.is_ok() {
            this.socket.blocked.store(false, Ordering::Release);
        }
        Poll::Ready(room)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::poll_fn;
    use std::time::Duration;

    fn bound() -> std::net::UdpSocket {
        std::net::UdpSocket::bind("127.0.0.1:0").unwrap()
    }

    /// Reads with room for two datagrams, so that one is a short read.
    async fn recv_one(socket: &LinkSocket, buf: &mut [u8]) -> RecvMeta {
        let mut meta = [RecvMeta::default(); BATCH_SIZE];
        let (first, second) = buf.split_at_mut(buf.len() / 2);
        let mut bufs = [io::IoSliceMut::new(first), io::IoSliceMut::new(second)];
        let n = poll_fn(|cx| socket.poll_recv(cx, &mut bufs, &mut meta))
            .await
            .unwrap();
        assert_eq!(n, 1);
        meta[0]
    }

    #[test]
    fn a_receive_slot_holds_a_whole_offload_batch_whatever_the_bound() {
        for bound in [1200u16, 1452, 4500, 9000, 16000, 65527] {
            let n = receive_segments(64, bound);
            // quinn's slot: the bound (at most 64 KiB) times the segments.
            let slot = usize::from(bound).min(64 << 10) * n;
            assert!(slot >= MAX_RECEIVE_BATCH, "{bound}: a {slot}-byte slot");
            assert!(
                slot < MAX_RECEIVE_BATCH + usize::from(bound),
                "{bound}: {n} segments"
            );
            assert!(n <= 64);
        }
        assert_eq!(receive_segments(64, 1200), 55);
        assert_eq!(receive_segments(64, 9000), 8);
        // Without receive offload a receive brings one datagram.
        assert_eq!(receive_segments(1, 9000), 1);
    }

    #[test]
    fn a_batch_with_room_left_means_the_queue_was_empty() {
        assert!(drained(1, 32));
        assert!(drained(31, 32));
        assert!(!drained(32, 32));
        assert!(!drained(1, 1), "a batch of one says nothing");
        assert!(
            !drained(BATCH_SIZE, BATCH_SIZE + 10),
            "capped at the batch size"
        );
    }

    #[tokio::test(flavor = "current_thread")]
    async fn every_datagram_wakes_the_reader_after_a_short_read_cleared_readiness() {
        let socket = LinkSocket::new(bound(), 4500).unwrap();
        let to = socket.local_addr().unwrap();
        let peer = bound();
        let mut buf = vec![0u8; 2048];
        for round in 0..50u8 {
            peer.send_to(&[round; 9], to).unwrap();
            let meta = tokio::time::timeout(Duration::from_secs(5), recv_one(&socket, &mut buf))
                .await
                .expect("a datagram sent after a drained read wakes the reader");
            assert_eq!(meta.len, 9);
            assert_eq!(buf[..9], [round; 9]);
        }
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_burst_is_read_in_batches_without_losing_any() {
        let socket = LinkSocket::new(bound(), 4500).unwrap();
        let to = socket.local_addr().unwrap();
        let peer = bound();
        let mut storage = vec![0u8; 64 * BATCH_SIZE];
        let total = 3 * BATCH_SIZE + 5;
        for i in 0..total {
            peer.send_to(&(i as u32).to_be_bytes(), to).unwrap();
        }
        let mut seen = Vec::new();
        while seen.len() < total {
            let mut meta = [RecvMeta::default(); BATCH_SIZE];
            let mut bufs: Vec<io::IoSliceMut> =
                storage.chunks_mut(64).map(io::IoSliceMut::new).collect();
            let n = tokio::time::timeout(
                Duration::from_secs(5),
                poll_fn(|cx| socket.poll_recv(cx, &mut bufs, &mut meta)),
            )
            .await
            .expect("every datagram of the burst is read")
            .unwrap();
            for (m, b) in meta[..n].iter().zip(&bufs) {
                seen.push(u32::from_be_bytes(b[..m.len].try_into().unwrap()));
            }
        }
        assert_eq!(seen, (0..total as u32).collect::<Vec<_>>());
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_sender_that_found_the_socket_full_waits_for_room_then_sends() {
        // A peer that never reads fills the sender's buffer only if the datagrams stay
        // charged to it; on loopback they are not, so the blocked state is set by hand, as
        // try_send sets it on WouldBlock.
        let socket = Arc::new(LinkSocket::new(bound(), 4500).unwrap());
        let mut poller = socket.clone().create_io_poller();
        assert!(poll_fn(|cx| Poll::Ready(poller.as_mut().poll_writable(cx)))
            .await
            .is_ready());
        socket.blocked.store(true, Ordering::Release);
        // Outside the runtime's tasks (a DDS thread sending itself) nothing can wait for
        // room: the packet is left to the connection's driver.
        assert!(poll_fn(|cx| Poll::Ready(poller.as_mut().poll_writable(cx)))
            .await
            .is_pending());
        // In a task (the driver) it waits, and finds room.
        let s = socket.clone();
        tokio::spawn(async move {
            tokio::time::timeout(
                Duration::from_secs(5),
                poll_fn(|cx| poller.as_mut().poll_writable(cx)),
            )
            .await
            .expect("an empty send buffer is room at once")
            .unwrap();
            assert!(!s.blocked.load(Ordering::Acquire));
        })
        .await
        .unwrap();
    }
}
