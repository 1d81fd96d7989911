//! `quinn::SendStream::write_chunks_here` (roam's change to quinn, see vendor/quinn/ROAM.md):
//! a write from a thread outside the runtime is sent from that thread, and a packet of it
//! that is lost is sent again: the first such write wakes the connection's driver to arm its
//! loss-detection timer, and while they go on its timer stays armed close enough to cover
//! the next ones without a wake-up.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::thread::ThreadId;
use std::time::Duration;

use bytes::Bytes;
use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, UdpPoller};
use roam_proto::frame::Role;

use super::endpoint::{endpoint, transport_config};
use super::link_socket::LinkSocket;
use super::timer::EarlyTimerRuntime;
use crate::link::LinkConfig;
use crate::pki::tests::TempDir;
use crate::pki::{init_ca, issue, load_identity, Validity, ROUTER_SERVER_NAME};
use crate::tls;

/// The name of the threads [`write_from_a_thread`] writes from.
const WRITER: &str = "dds-receive";

/// roam's link socket, noting the thread of every send, and dropping the next send of a
/// [`WRITER`] thread when told.
#[derive(Debug)]
struct Watched {
    socket: Arc<LinkSocket>,
    senders: Mutex<Vec<ThreadId>>,
    drop_next: AtomicBool,
}

impl AsyncUdpSocket for Watched {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        self.socket.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit) -> io::Result<()> {
        self.senders
            .lock()
            .unwrap()
            .push(std::thread::current().id());
        if std::thread::current().name() == Some(WRITER)
            && self.drop_next.swap(false, Ordering::SeqCst)
        {
            return Ok(()); // lost on the way
        }
        self.socket.try_send(transmit)
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [io::IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        self.socket.poll_recv(cx, bufs, meta)
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    fn may_fragment(&self) -> bool {
        self.socket.may_fragment()
    }

    fn max_transmit_segments(&self) -> usize {
        self.socket.max_transmit_segments()
    }

    fn max_receive_segments(&self) -> usize {
        self.socket.max_receive_segments()
    }
}

/// A connection whose listening side sends through a [`Watched`] socket.
struct Pair {
    socket: Arc<Watched>,
    /// The listening side's connection.
    server_conn: quinn::Connection,
    /// The dialing side's.
    conn: quinn::Connection,
    _kept: (quinn::Endpoint, quinn::Endpoint, TempDir),
}

async fn watched_pair() -> Pair {
    let dir = TempDir::new("write-here");
    init_ca(dir.path()).unwrap();
    issue(dir.path(), "r1", Role::Router, Validity::default()).unwrap();
    issue(dir.path(), "robot", Role::Client, Validity::default()).unwrap();
    let router = load_identity(dir.path(), "r1").unwrap();
    let robot = load_identity(dir.path(), "robot").unwrap();
    // Nothing but loss detection may wake the driver within the test's deadline.
    let cfg = LinkConfig {
        keepalive: Duration::from_secs(60),
        idle_timeout: Duration::from_secs(120),
        ..LinkConfig::default()
    };
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let socket = Arc::new(Watched {
        socket: Arc::new(LinkSocket::new(socket, cfg.max_udp_payload).unwrap()),
        senders: Mutex::default(),
        drop_next: AtomicBool::new(false),
    });
    let server = tls::quinn_server_config(&router, transport_config(&cfg, 4 << 20)).unwrap();
    let listener = quinn::Endpoint::new_with_abstract_socket(
        quinn::EndpointConfig::default(),
        Some(server),
        socket.clone(),
        EarlyTimerRuntime::new(cfg.max_udp_payload),
    )
    .unwrap();
    let addr = socket.local_addr().unwrap();
    let dialer = endpoint(&robot, &cfg, None).unwrap();
    let l = listener.clone();
    let accepted = tokio::spawn(async move { l.accept().await.unwrap().await.unwrap() });
    let conn = dialer
        .connect(addr, ROUTER_SERVER_NAME)
        .unwrap()
        .await
        .unwrap();
    let server_conn = accepted.await.unwrap();
    Pair {
        socket,
        server_conn,
        conn,
        _kept: (listener, dialer, dir),
    }
}

/// Writes `data` on `send` from a thread of its own; the thread's id.
fn write_from_a_thread(
    mut send: quinn::SendStream,
    data: &'static [u8],
) -> (quinn::SendStream, ThreadId) {
    std::thread::Builder::new()
        .name(WRITER.into())
        .spawn(move || {
            let written = send
                .write_chunks_here(&mut [Bytes::from_static(data)])
                .expect("the stream takes writes")
                .expect("flow control has room");
            assert_eq!(written.bytes, data.len());
            (send, std::thread::current().id())
        })
        .unwrap()
        .join()
        .unwrap()
}

async fn read_all(conn: &quinn::Connection, len: usize) -> Vec<u8> {
    let mut recv = conn.accept_uni().await.unwrap();
    let mut got = vec![0; len];
    recv.read_exact(&mut got).await.unwrap();
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_write_here_is_sent_from_the_writing_thread() {
    let Pair {
        socket,
        server_conn,
        conn,
        _kept,
    } = watched_pair().await;
    let send = server_conn.open_uni().await.unwrap();
    let (_send, writer) = write_from_a_thread(send, b"from the DDS thread");
    assert!(
        socket.senders.lock().unwrap().contains(&writer),
        "the writing thread sent nothing itself"
    );
    let got = tokio::time::timeout(Duration::from_secs(10), read_all(&conn, 19))
        .await
        .expect("the write arrives");
    assert_eq!(got, b"from the DDS thread");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_lost_write_here_is_sent_again() {
    let Pair {
        socket,
        server_conn,
        conn,
        _kept,
    } = watched_pair().await;
    // A write that arrives: the driver, woken to arm its timer for it, keeps the timer
    // close while such writes go on.
    let send = server_conn.open_uni().await.unwrap();
    let (_first, _) = write_from_a_thread(send, b"first");
    let got = tokio::time::timeout(Duration::from_secs(10), read_all(&conn, 5))
        .await
        .expect("the first write arrives");
    assert_eq!(got, b"first");
    // The next is lost once: the writing thread does not wake the driver for it, and only
    // the driver's loss-detection timer can send it again (keep-alives are a minute away).
    let send = server_conn.open_uni().await.unwrap();
    socket.drop_next.store(true, Ordering::SeqCst);
    let (_send, writer) = write_from_a_thread(send, b"lost once");
    assert!(socket.senders.lock().unwrap().contains(&writer));
    assert!(
        !socket.drop_next.load(Ordering::SeqCst),
        "the write's packet was not sent"
    );
    let got = tokio::time::timeout(Duration::from_secs(5), read_all(&conn, 9))
        .await
        .expect("the lost packet was sent again");
    assert_eq!(got, b"lost once");
}
