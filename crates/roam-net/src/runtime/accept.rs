//! A router's listeners: every connection passes the admission [`Gate`] before the router
//! spends anything on it, and becomes a link only once its Hello is verified.

use std::sync::Arc;
use std::time::Duration;

use tracing::debug;

use super::{Command, Shared};
use crate::admission::gate::{Gate, Listener, Pass};
use crate::link::{Established, LinkError};
use crate::{quic, tcp};

/// Accepts QUIC connections until the endpoint closes.
pub(super) async fn accept_quic(s: Shared) {
    while let Some(incoming) = s.ep.accept().await {
        let remote = incoming.remote_address();
        // A forged source address never answers a Retry; a real peer answers in one round
        // trip. Asked before admission, so floods of forged attempts cost no state at all.
        if !incoming.remote_address_validated()
            && incoming.may_retry()
            && s.gate.wants_address_validation(remote.ip())
        {
            s.gate.count_retry();
            if let Err(e) = incoming.retry() {
                debug!("QUIC retry to {remote} failed: {e}");
            }
            continue;
        }
        let Some(pass) = s.gate.admit(remote, Listener::Quic) else {
            // Tells a real peer at once (CONNECTION_REFUSED) instead of letting it time out.
            incoming.refuse();
            continue;
        };
        let s = s.clone();
        tokio::spawn(async move {
            let link = s.link_id();
            let handshake = async {
                let conn = incoming
                    .accept()
                    .map_err(|e| LinkError::Connect(e.to_string()))?
                    .await
                    .map_err(|e| LinkError::Connect(crate::tls::explain_quic(&e)))?;
                quic::establish(conn, &s.me, &s.config.link, link, s.inbound.clone()).await
            };
            if let Some(est) = pass.run(handshake).await {
                s.link_up(link, est).await;
            }
        });
    }
}

/// Accepts TCP+TLS connections until the router stops.
pub(super) async fn accept_tcp(s: Shared, listener: tokio::net::TcpListener) {
    let acceptor = match tcp::acceptor(&s.config.identity) {
        Ok(a) => a,
        Err(e) => return tracing::warn!("TCP listener disabled: {e}"),
    };
    loop {
        // Handshakes the gate cut to make room close their sockets before more are accepted.
        let accepted = tokio::select! {
            a = async {
                s.gate.settled().await;
                listener.accept().await
            } => a,
            _ = s.stopping() => return,
        };
        let (sock, remote) = match accepted {
            Ok(x) => x,
            Err(e) => {
                s.gate.accept_failed(&e);
                // Out of file descriptors, most likely: accepting again at once would spin.
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        // Refused: the socket is dropped here, which closes it and frees its descriptor.
        let Some(pass) = s.gate.admit(remote, Listener::Tcp) else {
            continue;
        };
        if let Err(e) = sock.set_nodelay(true) {
            debug!("TCP_NODELAY on {remote}: {e}");
        }
        s.handshake(pass, acceptor.clone(), sock);
    }
}

/// Accepts links through an MQTT broker at a rendezvous until the router stops.
pub(super) async fn accept_mqtt(s: Shared, peer: crate::mqtt::MqttPeer) {
    let mut listening = match crate::mqtt::Listening::new(peer.clone()) {
        Ok(l) => l,
        Err(e) => return tracing::warn!("MQTT listener {peer} disabled: {e}"),
    };
    let acceptor = match tcp::acceptor(&s.config.identity) {
        Ok(a) => a,
        Err(e) => return tracing::warn!("MQTT listener disabled: {e}"),
    };
    tracing::info!("listening through the MQTT broker at {peer}");
    // Tunnels have no source address: admission counts them all as one source.
    let source = std::net::SocketAddr::from(([0, 0, 0, 0], 0));
    loop {
        let stream = tokio::select! {
            t = async {
                s.gate.settled().await;
                listening.next().await
            } => t,
            _ = s.stopping() => return,
        };
        let Some(stream) = stream else { return };
        let Some(pass) = s.gate.admit(source, Listener::Tcp) else {
            continue;
        };
        s.handshake(pass, acceptor.clone(), stream);
    }
}

/// Writes out, about once a second, the log counts the gate held back, until the router stops.
pub(super) async fn flush_gate_log(gate: Arc<Gate>, s: Shared) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = tick.tick() => gate.flush_log(),
            _ = s.stopping() => return,
        }
    }
}

impl Shared {
    /// Runs TLS and the Hello on an admitted byte stream (a TCP socket, an MQTT tunnel)
    /// within the admission pass, and hands the link to the runtime if it is authenticated.
    fn handshake<S>(&self, pass: Pass, acceptor: tokio_rustls::TlsAcceptor, stream: S)
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let s = self.clone();
        tokio::spawn(async move {
            let link = s.link_id();
            let handshake = tcp::accept_stream(
                &acceptor,
                stream,
                &s.me,
                &s.config.link,
                link,
                s.inbound.clone(),
            );
            if let Some(est) = pass.run(handshake).await {
                s.link_up(link, est).await;
            }
        });
    }

    /// Hands an accepted, authenticated link to the runtime.
    async fn link_up(&self, link: crate::link::LinkId, est: Established) {
        let up = Command::Up {
            link,
            est: Box::new(est),
            dialed: false,
            down: None,
        };
        let _ = self.cmd.send(up).await;
    }
}
