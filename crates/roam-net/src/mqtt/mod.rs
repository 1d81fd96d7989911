//! Links through an MQTT broker, for routers and proxies that can reach nothing but a broker.
//!
//! A link is the TCP link's protocol (mutual TLS 1.3 with the deployment's certificates, the
//! Hello, the frames) over a byte stream carried as MQTT messages ([`stream`]). A dialer asks
//! for a tunnel on the rendezvous's accept topic with a random session id; the listener
//! subscribes the tunnel's topics and says so; then TLS runs end to end through the broker.
//! The broker, its operators and anyone subscribed to `#` see hashed topic names, session ids
//! and TLS records: no realm topic name, type name or payload, not even which sites talk
//! (the rendezvous is hashed). Envelopes inside are sealed end to end as on every link.
//!
//! Order and reliability are those of the TCP link (one ordered stream, QoS 1 underneath);
//! messages larger than a segment ([`tunnel::SEGMENT`]) are split and reassembled. When the
//! broker session is lost, tunnels end, their links close, and dialers dial again (with
//! their usual back-off) once the broker is back.

pub mod addr;
mod broker;
mod stream;
pub mod tunnel;

use std::sync::Arc;

use roam_mqtt::params::MqttQos;

pub use addr::MqttPeer;
use broker::Broker;
use stream::TunnelStream;

use crate::inbound::Inbound;
use crate::link::{Established, LinkConfig, LinkError, LinkId, LocalInfo};
use crate::tcp;
use roam_pki::Identity;

/// Dials the router listening at `peer`'s rendezvous.
pub async fn dial(
    identity: &Identity,
    peer: &MqttPeer,
    me: &LocalInfo,
    cfg: &LinkConfig,
    link: LinkId,
    inbound: Inbound,
) -> Result<Established, LinkError> {
    let broker = Broker::get(peer)?;
    let attempt = async {
        if !broker.wait_connected(cfg.handshake_timeout).await {
            return Err(LinkError::Connect(format!(
                "cannot reach the MQTT broker {}:{}",
                peer.host, peer.port
            )));
        }
        let mut session = [0u8; 16];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut session)
            .map_err(|_| LinkError::Connect("no randomness".into()))?;
        let (up, down) = peer.tunnel_topics(&session);
        let inbox = broker.route(&down, false);
        let mut stream = TunnelStream::new(broker.clone(), down, inbox, up);
        broker
            .client
            .try_publish(
                &peer.accept_topic(),
                tunnel::open_message(&session),
                MqttQos::AtLeastOnce,
            )
            .map_err(|e| LinkError::Connect(format!("MQTT broker: {e:?}")))?;
        // The listener says when it reads the tunnel: nothing written before would arrive.
        stream
            .accepted()
            .await
            .map_err(|e| LinkError::Connect(format!("no router answered at {peer}: {e}")))?;
        tcp::dial_stream(identity, stream, me, cfg, link, inbound).await
    };
    tokio::time::timeout(cfg.handshake_timeout, attempt)
        .await
        .map_err(|_| LinkError::HandshakeTimeout(cfg.handshake_timeout))?
}

/// A router's listening place at a rendezvous: the tunnels dialers ask for.
pub(crate) struct Listening {
    broker: Arc<Broker>,
    peer: MqttPeer,
    opens: tokio::sync::mpsc::Receiver<bytes::Bytes>,
}

impl Listening {
    pub(crate) fn new(peer: MqttPeer) -> Result<Self, LinkError> {
        let broker = Broker::get(&peer)?;
        let opens = broker.route(&peer.accept_topic(), true);
        Ok(Self {
            broker,
            peer,
            opens,
        })
    }

    /// The next tunnel asked for, already acknowledged to its dialer; `None` when the
    /// broker connection is gone for good.
    pub(crate) async fn next(
        &mut self,
    ) -> Option<impl tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static> {
        loop {
            let msg = self.opens.recv().await?;
            let Some(session) = tunnel::parse_open(&msg) else {
                continue;
            };
            let (up, down) = self.peer.tunnel_topics(&session);
            let inbox = self.broker.route(&up, false);
            let mut stream = TunnelStream::new(self.broker.clone(), up, inbox, down);
            stream.accept_now();
            return Some(stream);
        }
    }
}
