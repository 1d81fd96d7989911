//! One connection per broker (and credentials) in a process, shared by every MQTT link
//! through it: incoming messages are routed by topic to the tunnel or listener that
//! subscribed it. When the broker session is lost, every tunnel's route is dropped (their
//! streams end, their links close and are dialled again); listeners' routes stay, and their
//! subscriptions are made again in the new session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use roam_mqtt::{Connect, MqttClient};
use tokio::sync::mpsc;

use super::addr::MqttPeer;
use crate::link::LinkError;

type Key = (String, u16, bool, Option<(String, String)>);

/// Segments waiting for one tunnel's reader before the broker connection waits for it.
const ROUTE_DEPTH: usize = 256;

struct Route {
    tx: mpsc::Sender<Bytes>,
    /// Survives a lost session (a listener's accept topic).
    lasting: bool,
}

pub struct Broker {
    pub(super) client: MqttClient,
    routes: Arc<Mutex<HashMap<String, Route>>>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

fn registry() -> &'static Mutex<HashMap<Key, Weak<Broker>>> {
    static R: OnceLock<Mutex<HashMap<Key, Weak<Broker>>>> = OnceLock::new();
    R.get_or_init(Default::default)
}

impl Broker {
    /// The process's connection to `peer`'s broker, made if there is none.
    pub fn get(peer: &MqttPeer) -> Result<Arc<Broker>, LinkError> {
        let mut reg = registry().lock().unwrap_or_else(|p| p.into_inner());
        reg.retain(|_, w| w.strong_count() > 0);
        if let Some(b) = reg.get(&peer.broker_key()).and_then(Weak::upgrade) {
            return Ok(b);
        }
        let b = Arc::new(Self::connect(peer)?);
        reg.insert(peer.broker_key(), Arc::downgrade(&b));
        Ok(b)
    }

    fn connect(peer: &MqttPeer) -> Result<Broker, LinkError> {
        let tls = match peer.tls {
            true => {
                let roots = roam_mqtt::params::BrokerTls {
                    ca_certificate: "/etc/ssl/certs/ca-certificates.crt".into(),
                };
                let none = roam_mqtt::params::ClientTls {
                    certificate: None,
                    key: None,
                    server_cert_auth: true,
                    alpn_protos: Vec::new(),
                };
                let c = roam_mqtt::tls::client_config(&roots, &none)
                    .map_err(|e| LinkError::Connect(format!("broker TLS: {e}")))?;
                Some(Arc::new(c))
            }
            false => None,
        };
        let mut id = [0u8; 8];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut id)
            .map_err(|_| LinkError::Connect("no randomness".into()))?;
        let (client, mut inbox) = MqttClient::connect(
            Connect {
                host: peer.host.clone(),
                port: peer.port,
                id: format!("roam-link-{}", hex::encode(id)),
                user: peer.user.clone(),
                tls,
                keep_alive: Duration::from_secs(10),
                clean_session: true,
                max_inflight: 64,
                buffer: 0,
                last_will: None,
                version: roam_mqtt::params::MqttVersion::V311,
            },
            1024,
        );
        let routes: Arc<Mutex<HashMap<String, Route>>> = Arc::default();
        let r = routes.clone();
        let dispatch = tokio::spawn(async move {
            while let Some(m) = inbox.recv().await {
                let tx = {
                    let routes = r.lock().unwrap_or_else(|p| p.into_inner());
                    routes.get(&m.topic).map(|r| r.tx.clone())
                };
                if let Some(tx) = tx {
                    // A slow reader slows the connection rather than growing memory.
                    let _ = tx.send(m.payload).await;
                }
            }
        });
        let r = routes.clone();
        let mut session = client.session();
        let watch = tokio::spawn(async move {
            while session.changed().await.is_ok() {
                if !session.borrow_and_update().connected {
                    let mut routes = r.lock().unwrap_or_else(|p| p.into_inner());
                    routes.retain(|_, route| route.lasting);
                }
            }
        });
        Ok(Broker {
            client,
            routes,
            tasks: vec![dispatch, watch],
        })
    }

    /// Messages on `topic` from now on (QoS 1).
    pub fn route(&self, topic: &str, lasting: bool) -> mpsc::Receiver<Bytes> {
        let (tx, rx) = mpsc::channel(ROUTE_DEPTH);
        self.routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(topic.to_string(), Route { tx, lasting });
        self.client
            .subscribe(topic, roam_mqtt::params::MqttQos::AtLeastOnce);
        rx
    }

    pub fn unroute(&self, topic: &str) {
        self.routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(topic);
        self.client.unsubscribe(topic);
    }

    /// Waits up to `t` for a session with the broker.
    pub async fn wait_connected(&self, t: Duration) -> bool {
        let mut s = self.client.session();
        tokio::time::timeout(t, s.wait_for(|s| s.connected))
            .await
            .is_ok_and(|r| r.is_ok())
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
        let c = self.client.clone();
        if let Ok(h) = tokio::runtime::Handle::try_current() {
            h.spawn(async move { c.stop().await });
        }
    }
}
