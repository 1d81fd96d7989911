//! What this process announces about each topic it publishes: one sealed announcement per
//! topic (per realm and realm-side name, so per metadata name), listing the streams of every
//! publisher handle on it and the definitions it knows, sent when they change and every
//! [`ANNOUNCE_PERIOD`] while anyone listens. When the last publisher of the topic goes, a last
//! announcement with no stream tells the importers at once.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use roam_net::latency::now_us;
use roam_proto::meta::{StreamAnnouncement, TopicAnnouncement, TypeDefinition};
use roam_proto::{Name, Sealer, SigningIdentity};
use tokio::sync::mpsc;
use tracing::warn;

use crate::port::Port;
use crate::realm::Realm;

/// How often a topic's announcement is repeated while anyone listens for it.
pub const ANNOUNCE_PERIOD: Duration = Duration::from_secs(2);

/// A change to what a topic's announcement lists.
pub(crate) enum Change {
    /// Boxed: a channel's first block holds 32 changes, and there is an announcer per topic.
    AddStream(Box<StreamAnnouncement>),
    RemoveStream {
        session: u64,
    },
    Definition(TypeDefinition),
}

/// The announcer of one topic, shared by its publishers; the task ends (with a last, empty
/// announcement) when the last handle is dropped.
pub(crate) struct Announcer {
    tx: mpsc::UnboundedSender<Change>,
}

impl Announcer {
    pub(crate) fn start(
        port: Port,
        realm: Arc<Realm>,
        meta_name: Name,
        exporter: String,
        signer: Option<Arc<SigningIdentity>>,
    ) -> Arc<Announcer> {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(run(port, realm, meta_name, exporter, signer, rx));
        Arc::new(Announcer { tx })
    }

    pub(crate) fn change(&self, c: Change) {
        let _ = self.tx.send(c);
    }
}

async fn run(
    port: Port,
    realm: Arc<Realm>,
    meta_name: Name,
    exporter: String,
    signer: Option<Arc<SigningIdentity>>,
    mut rx: mpsc::UnboundedReceiver<Change>,
) {
    let mut sealer = match Sealer::with_keys(&realm.keys, meta_name, false, signer) {
        Ok(s) => s,
        Err(e) => {
            warn!("cannot announce a topic: {e}");
            return;
        }
    };
    let publication = port.publish(meta_name).await;
    let mut demand = publication.demand;
    let mut streams: BTreeMap<u64, StreamAnnouncement> = BTreeMap::new();
    let mut definitions: BTreeMap<String, String> = BTreeMap::new();
    let mut tick = tokio::time::interval(ANNOUNCE_PERIOD);
    loop {
        let announce = tokio::select! {
            c = rx.recv() => {
                let Some(c) = c else { break };
                apply(c, &mut streams, &mut definitions);
                // Take every change already queued before announcing once.
                while let Ok(c) = rx.try_recv() {
                    apply(c, &mut streams, &mut definitions);
                }
                true
            }
            r = demand.changed() => r.is_ok(),
            _ = tick.tick() => true,
        };
        if announce && *demand.borrow() {
            let a = announcement(&exporter, &streams, &definitions);
            send(&port, meta_name, &mut sealer, &a).await;
        }
    }
    // The last publisher is gone: say so at once, then stop.
    if *demand.borrow() {
        let a = announcement(&exporter, &BTreeMap::new(), &definitions);
        send(&port, meta_name, &mut sealer, &a).await;
    }
    port.release_publication(meta_name, publication.id);
}

fn apply(
    c: Change,
    streams: &mut BTreeMap<u64, StreamAnnouncement>,
    definitions: &mut BTreeMap<String, String>,
) {
    match c {
        Change::AddStream(s) => {
            streams.insert(s.session, *s);
        }
        Change::RemoveStream { session } => {
            streams.remove(&session);
        }
        Change::Definition(d) => {
            definitions.insert(d.dds_type, d.text);
        }
    }
}

fn announcement(
    exporter: &str,
    streams: &BTreeMap<u64, StreamAnnouncement>,
    definitions: &BTreeMap<String, String>,
) -> TopicAnnouncement {
    let mut list: Vec<StreamAnnouncement> = streams.values().cloned().collect();
    list.sort_by_key(|s| s.id);
    TopicAnnouncement {
        exporter: exporter.to_string(),
        streams: list,
        definitions: definitions
            .iter()
            .map(|(t, d)| TypeDefinition {
                dds_type: t.clone(),
                text: d.clone(),
            })
            .collect(),
    }
}

async fn send(port: &Port, name: Name, sealer: &mut Sealer, a: &TopicAnnouncement) {
    let mut buf = Vec::new();
    match sealer.seal(&a.encode(), now_us(), &mut buf) {
        Ok(()) => {
            if let Err(e) = port.send(name, Bytes::from(buf)).await {
                warn!("cannot send a topic announcement: {e}");
            }
        }
        Err(e) => warn!("cannot seal a topic announcement: {e}"),
    }
}
