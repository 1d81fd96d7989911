//! Follows the realm's listing for the Foxglove door: every [`POLL`] it reads
//! [`Gateway::realm_listing`], finds each topic's and service's definition (this machine's,
//! else one announced in the realm, learned in the background and shared through the codec
//! cache), and publishes the numbered [`Snapshot`] that every connection of the door watches.
//! A topic whose definition nobody has yet is not offered: a `cdr` channel without a schema
//! is one no client can read.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use roam_edge::ros_names::type_to_dds;
use roam_edge::{ServiceRef, TopicRef};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use super::catalog::{Numbering, ServiceEntry, Snapshot, TopicEntry};
use crate::session::ServiceTargets;
use crate::Gateway;

/// How often the listing is read.
pub const POLL: Duration = Duration::from_secs(1);
/// Definitions looked for in the realm at once at most.
const LEARNERS: usize = 16;
/// How long a type whose definition was not announced waits before it is looked for again.
const RETRY: Duration = Duration::from_secs(10);

/// The door's view of the realm, shared by its connections; its task ends when it is dropped.
pub struct Catalog {
    rx: watch::Receiver<Arc<Snapshot>>,
    task: JoinHandle<()>,
}

impl Drop for Catalog {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Catalog {
    /// Starts following `gw`'s realm (on the current tokio runtime).
    pub fn start(gw: Arc<Gateway>) -> Catalog {
        let (tx, rx) = watch::channel(Arc::new(Snapshot::default()));
        let task = tokio::spawn(run(gw, tx));
        Catalog { rx, task }
    }

    /// The snapshots, the current one first.
    pub fn watch(&self) -> watch::Receiver<Arc<Snapshot>> {
        self.rx.clone()
    }
}

/// Types whose definitions are being looked for in the realm, and those to leave alone a while.
#[derive(Default)]
struct Learning {
    running: JoinSet<(String, bool)>,
    busy: HashSet<String>,
    failed: HashMap<String, Instant>,
}

impl Learning {
    /// Looks for `dds_type`'s definition in the announcements of `topic`, unless already
    /// looking, lately failed, or at the limit.
    fn start(&mut self, gw: &Arc<Gateway>, topic: TopicRef, dds_type: String, now: Instant) {
        if self.busy.contains(&dds_type) || self.running.len() >= LEARNERS {
            return;
        }
        if self.failed.get(&dds_type).is_some_and(|t| now < *t) {
            return;
        }
        self.busy.insert(dds_type.clone());
        let targets = ServiceTargets::for_gateway(gw.clone());
        self.running.spawn(async move {
            // Found: the codec cache now holds it, with its text, for every door and client.
            let ok = targets.codec(&topic, &dds_type).await.is_ok();
            (dds_type, ok)
        });
    }

    fn reap(&mut self, now: Instant) {
        while let Some(done) = self.running.try_join_next() {
            if let Ok((ty, ok)) = done {
                self.busy.remove(&ty);
                if !ok {
                    self.failed.insert(ty, now + RETRY);
                }
            }
        }
        self.failed.retain(|_, t| now < *t);
    }
}

/// A definition's ros2msg text, if this machine has it or the realm announced it.
async fn definition(gw: &Gateway, dds_type: &str) -> Option<Arc<str>> {
    if let Some((_, text)) = gw.codecs.known(dds_type) {
        return Some(text);
    }
    gw.codecs.local(dds_type).await.map(|(_, text)| text)
}

async fn run(gw: Arc<Gateway>, tx: watch::Sender<Arc<Snapshot>>) {
    let mut numbering = Numbering::default();
    let mut learning = Learning::default();
    let mut tick = tokio::time::interval(POLL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        // Nobody connected (the catalog holds one receiver itself): nothing to keep fresh,
        // and no definitions looked for on nobody's behalf.
        if tx.receiver_count() <= 1 {
            continue;
        }
        let now = Instant::now();
        learning.reap(now);
        let listing = gw.realm_listing();
        let mut topics: Vec<TopicEntry> = Vec::new();
        for t in listing.topics {
            // A topic listed with several types is offered as the first (as rosapi does).
            let Some(ty) = t.types.first() else { continue };
            let dds = type_to_dds(ty);
            match definition(&gw, &dds).await {
                Some(text) => topics.push((t.name, ty.clone(), text)),
                None => {
                    let topic = TopicRef::new(gw.realm.clone(), t.name.clone());
                    learning.start(&gw, topic, dds, now);
                }
            }
        }
        let mut services: Vec<ServiceEntry> = Vec::new();
        for s in listing.services {
            let Some(ty) = s.types.first() else { continue };
            let Ok(sref) = ServiceRef::new(gw.realm.clone(), &s.name, ty) else {
                continue;
            };
            let (req, rep) = (sref.request_type(), sref.reply_type());
            match (definition(&gw, &req).await, definition(&gw, &rep).await) {
                (Some(q), Some(p)) => services.push((sref.service, sref.srv_type, q, p)),
                (q, p) => {
                    if q.is_none() {
                        learning.start(&gw, sref.request_topic(), req, now);
                    }
                    if p.is_none() {
                        learning.start(&gw, sref.reply_topic(), rep, now);
                    }
                }
            }
        }
        let snap = numbering.snapshot(topics, services);
        tx.send_if_modified(|old| {
            if **old == snap {
                return false;
            }
            *old = Arc::new(snap);
            true
        });
    }
}
