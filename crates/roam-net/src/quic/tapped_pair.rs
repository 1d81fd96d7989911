//! What the tests of roam's quinn changes share: roam's link socket with a tap on every send
//! and receive, and a connection to an endpoint listening on it.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use quinn::udp::{RecvMeta, Transmit};
use quinn::{AsyncUdpSocket, UdpPoller};
use roam_proto::frame::Role;

use super::endpoint::{endpoint, transport_config};
use super::link_socket::LinkSocket;
use super::timer::EarlyTimerRuntime;
use crate::link::LinkConfig;
use crate::test_dir::TempDir;
use crate::tls;
use roam_pki::{init_ca, issue, load_identity, Validity, ROUTER_SERVER_NAME};

/// What a test watches of the listening side's socket.
pub(super) trait Tap: std::fmt::Debug + Send + Sync + 'static {
    /// A send is about to go out; false drops it (lost on the way).
    fn send(&self, _transmit: &Transmit) -> bool {
        true
    }
    /// A send went out.
    fn sent(&self) {}
    /// Datagrams were taken in.
    fn received(&self) {}
}

/// roam's link socket, telling its tap of every send and receive.
#[derive(Debug)]
pub(super) struct Tapped<T> {
    socket: Arc<LinkSocket>,
    pub tap: T,
}

impl<T: Tap> AsyncUdpSocket for Tapped<T> {
    fn create_io_poller(self: Arc<Self>) -> Pin<Box<dyn UdpPoller>> {
        self.socket.clone().create_io_poller()
    }

    fn try_send(&self, transmit: &Transmit) -> io::Result<()> {
        if !self.tap.send(transmit) {
            return Ok(());
        }
        let sent = self.socket.try_send(transmit);
        if sent.is_ok() {
            self.tap.sent();
        }
        sent
    }

    fn poll_recv(
        &self,
        cx: &mut Context,
        bufs: &mut [io::IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        let received = self.socket.poll_recv(cx, bufs, meta);
        if matches!(received, Poll::Ready(Ok(n)) if n > 0) {
            self.tap.received();
        }
        received
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

/// A connection whose listening side sends and receives through a [`Tapped`] socket.
pub(super) struct Pair<T> {
    pub socket: Arc<Tapped<T>>,
    /// The listening side's connection.
    pub server_conn: quinn::Connection,
    /// The dialing side's.
    pub conn: quinn::Connection,
    pub _kept: (quinn::Endpoint, quinn::Endpoint, TempDir),
}

/// Connects a dialing endpoint to one listening on a socket tapped by `tap`, both with `cfg`.
pub(super) async fn tapped_pair<T: Tap>(cfg: &LinkConfig, tap: T) -> Pair<T> {
    let dir = TempDir::new("tapped-pair");
    init_ca(dir.path()).unwrap();
    issue(dir.path(), "r1", Role::Router, Validity::default()).unwrap();
    issue(dir.path(), "robot", Role::Client, Validity::default()).unwrap();
    let router = load_identity(dir.path(), "r1").unwrap();
    let robot = load_identity(dir.path(), "robot").unwrap();
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let socket = Arc::new(Tapped {
        socket: Arc::new(LinkSocket::new(socket, cfg.max_udp_payload).unwrap()),
        tap,
    });
    let server = tls::quinn_server_config(&router, transport_config(cfg, 4 << 20)).unwrap();
    let listener = quinn::Endpoint::new_with_abstract_socket(
        quinn::EndpointConfig::default(),
        Some(server),
        socket.clone(),
        EarlyTimerRuntime::new(cfg.max_udp_payload),
    )
    .unwrap();
    let addr = socket.local_addr().unwrap();
    let dialer = endpoint(&robot, cfg, None).unwrap();
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
