//! Dialers give up at the handshake timeout instead of waiting for ever on a router that
//! accepts but never answers (one out of file descriptors, or a stalled listener).

use std::time::Duration;

use roam_proto::frame::Role;

use crate::inbound::Inbound;
use crate::link::{LinkConfig, LinkError, LocalInfo};
use crate::test_dir::TempDir;
use crate::{quic, tcp, tls};
use roam_pki::{init_ca, issue, load_identity, Identity, Validity};

fn robot() -> (TempDir, Identity, LocalInfo) {
    let dir = TempDir::new("dial-timeout");
    init_ca(dir.path()).unwrap();
    issue(dir.path(), "robot", Role::Client, Validity::default()).unwrap();
    let id = load_identity(dir.path(), "robot").unwrap();
    let me = LocalInfo {
        name: "robot".into(),
        role: Role::Client,
        id: tls::router_id("robot"),
    };
    (dir, id, me)
}

fn config() -> LinkConfig {
    LinkConfig {
        handshake_timeout: Duration::from_millis(300),
        ..LinkConfig::default()
    }
}

fn inbound() -> Inbound {
    Inbound::unpaused(tokio::sync::mpsc::channel(8).0)
}

#[tokio::test]
async fn a_tcp_dial_to_a_listener_that_never_answers_gives_up() {
    let (_dir, id, me) = robot();
    // The kernel completes the TCP handshake; nobody ever calls accept().
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = silent.local_addr().unwrap();
    let r = tokio::time::timeout(
        Duration::from_secs(20),
        tcp::dial(&id, addr, &me, &config(), 1, inbound()),
    )
    .await
    .expect("the dial must end by itself");
    assert!(
        matches!(r, Err(LinkError::HandshakeTimeout(t)) if t == config().handshake_timeout),
        "{r:?}"
    );
}

#[tokio::test]
async fn a_quic_dial_to_a_silent_address_gives_up() {
    let (_dir, id, me) = robot();
    let silent = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    let ep = quic::endpoint(&id, &config(), None).unwrap();
    let r = tokio::time::timeout(
        Duration::from_secs(20),
        quic::dial(&ep, addr, &me, &config(), 1, inbound()),
    )
    .await
    .expect("the dial must end by itself");
    assert!(matches!(r, Err(LinkError::HandshakeTimeout(_))), "{r:?}");
}
