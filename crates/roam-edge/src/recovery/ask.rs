//! The subscriber's side of recovery, as a task: it seals the requests a subscriber's
//! [`super::Reorder`] finds due and sends them on the repair names. A subscriber is read on
//! its caller's task and never waits to send; the requests go through a small queue, and one
//! that does not fit is dropped (the gap is asked for again).
//!
//! A repair name is published (advertised) as soon as the subscriber first hears a
//! recoverable session on its data name, not when the first gap shows: the routing plane
//! carries data only toward a name's subscribers along the paths its publishers advertised,
//! so the publisher's subscription to its repair name has to reach this edge before the first
//! request is sent.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use roam_net::latency::now_us;
use roam_proto::epoch::Keys;
use roam_proto::{Name, RealmSecret, Sealer, SigningIdentity};
use tokio::sync::mpsc;
use tracing::debug;

use super::reorder::Ask;
use super::request::Request;
use crate::port::{Port, PortPublication};

/// Requests waiting to be sealed and sent at most.
const QUEUE: usize = 64;
/// Data names a subscriber prepares repair names for at most (a wildcard subscriber of very
/// many names asks for the first ones only).
const MAX_NAMES: usize = 4096;

/// Sends a subscriber's requests; the task ends when the subscriber drops this.
pub(crate) struct Asker {
    tx: Option<mpsc::Sender<Command>>,
    /// What the task is started with, on the first request.
    start: Option<Start>,
    /// The data names whose repair names were published (or asked to be).
    prepared: HashSet<Name>,
}

enum Command {
    /// Publish the repair name of a data name that has a recoverable session.
    Prepare(Name),
    Ask(Ask),
}

/// A published repair name, withdrawn when the task ends.
struct Repair {
    name: Name,
    sealer: Sealer,
    publication: PortPublication,
    port: Port,
}

impl Drop for Repair {
    fn drop(&mut self) {
        self.port
            .release_publication(self.name, self.publication.id);
    }
}

struct Start {
    port: Port,
    keys: Arc<Keys>,
    secret: RealmSecret,
    signer: Option<Arc<SigningIdentity>>,
}

impl Asker {
    pub(crate) fn new(
        port: Port,
        keys: Arc<Keys>,
        secret: RealmSecret,
        signer: Option<Arc<SigningIdentity>>,
    ) -> Self {
        Self {
            tx: None,
            start: Some(Start {
                port,
                keys,
                secret,
                signer,
            }),
            prepared: HashSet::new(),
        }
    }

    /// Makes sure the repair name of data name `name` is published; called when a new
    /// recoverable session shows, so cheap for a name already prepared.
    pub(crate) fn prepare(&mut self, name: Name) {
        if self.prepared.len() < MAX_NAMES && self.prepared.insert(name) {
            self.queue(Command::Prepare(name));
        }
    }

    /// Queues `ask`; dropped when the queue is full or no runtime can run the sender.
    pub(crate) fn ask(&mut self, ask: Ask) {
        self.queue(Command::Ask(ask));
    }

    fn queue(&mut self, command: Command) {
        if self.tx.is_none() {
            let Ok(runtime) = tokio::runtime::Handle::try_current() else {
                return;
            };
            let Some(start) = self.start.take() else {
                return;
            };
            let (tx, rx) = mpsc::channel(QUEUE);
            runtime.spawn(start.run(rx));
            self.tx = Some(tx);
        }
        if let Some(tx) = &self.tx {
            if tx.try_send(command).is_err() {
                debug!("the repair queue is full; the gap is asked for again");
            }
        }
    }
}

impl Start {
    async fn run(self, mut rx: mpsc::Receiver<Command>) {
        let requester: u64 = rand::random();
        let mut repairs: HashMap<Name, Repair> = HashMap::new();
        let mut plain = Vec::new();
        let mut out = Vec::new();
        while let Some(command) = rx.recv().await {
            let (name, ask) = match command {
                Command::Prepare(name) => (name, None),
                Command::Ask(ask) => (ask.name, Some(ask)),
            };
            let repair = match repairs.entry(name) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(v) => match self.repair(name).await {
                    Some(r) => v.insert(r),
                    None => continue,
                },
            };
            let Some(ask) = ask else { continue };
            Request {
                session: ask.session,
                requester,
                ranges: ask.ranges,
            }
            .encode(&mut plain);
            if repair.sealer.seal(&plain, now_us(), &mut out).is_err() {
                continue;
            }
            let env = bytes::Bytes::copy_from_slice(&out);
            if let Err(e) = self.port.send(repair.name, env).await {
                debug!("a repair request was not sent: {e}");
            }
        }
    }

    /// Publishes the repair name of data name `data`, with a sealer for it.
    async fn repair(&self, data: Name) -> Option<Repair> {
        let name = super::repair_name(&self.secret, &data);
        let sealer = match Sealer::with_keys(&self.keys, name, false, self.signer.clone()) {
            Ok(s) => s,
            Err(e) => {
                debug!("cannot ask for missed messages: {e}");
                return None;
            }
        };
        let publication = self.port.publish(name).await;
        Some(Repair {
            name,
            sealer,
            publication,
            port: self.port.clone(),
        })
    }
}
