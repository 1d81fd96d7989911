//! Metrics across a realm: every member seals its [`Snapshot`] on the realm's one metrics
//! name, so any member (`roam top`, a dashboard) sees what all the others measure, and the
//! routers in between see ciphertext only.
//!
//! - The name is `descriptor(topic = "roam/metrics", type = "roam/metrics/v1")`, derived like
//!   the directory's ([`crate::directory`]): no member topic can have it, and a later format
//!   gets a new name.
//! - A [`MetricsAnnouncer`] sends its process's snapshot every [`METRICS_PERIOD`] while anyone
//!   listens (nothing is sealed or sent when nobody does).
//! - A [`RealmMetrics`] view keeps each member's latest snapshot ([`Latest`], pure), at most
//!   [`MAX_MEMBERS`] of them and each at most [`MAX_SNAPSHOT_BYTES`], forgets a member silent
//!   for [`EXPIRY_PERIODS`] periods, and refuses a snapshot signed by a member other than the
//!   one it names (signed mode).
//!
//! Routers are not realm members (they hold no realm secret), so a realm's view has its
//! proxies and gateways, each with its own edge router's counters and links.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tracing::warn;

use super::{Metrics, Snapshot};
use crate::edge::{Edge, EdgeError, TopicRef};
use crate::names::data_descriptor;
use crate::publisher::StreamSpec;
use crate::realm::Realm;
use crate::subscriber::{Event, SubscriberOptions};

/// The reserved realm-side topic of the metrics.
pub const METRICS_TOPIC: &str = "roam/metrics";
/// The type of its descriptor: the format's version.
pub const METRICS_TYPE: &str = "roam/metrics/v1";
/// How often a member sends its snapshot while anyone listens.
pub const METRICS_PERIOD: Duration = Duration::from_secs(1);
/// A member silent for this many periods is forgotten.
pub const EXPIRY_PERIODS: u32 = 5;
/// Members a view keeps at most.
pub const MAX_MEMBERS: usize = 1024;
/// The largest snapshot a view takes.
pub const MAX_SNAPSHOT_BYTES: usize = 4 << 20;

fn metrics_topic(realm: Arc<Realm>) -> TopicRef {
    let name = data_descriptor(METRICS_TOPIC, METRICS_TYPE).name(&realm.secret);
    TopicRef::raw_name(realm, METRICS_TOPIC, name)
}

/// Sends this process's snapshot to the realm; dropping it stops.
pub struct MetricsAnnouncer {
    task: tokio::task::JoinHandle<()>,
}

impl Drop for MetricsAnnouncer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Each member's latest snapshot, and when it came (pure: the caller passes the time).
#[derive(Debug, Default)]
pub struct Latest {
    members: BTreeMap<String, (Instant, Snapshot)>,
}

/// Why a snapshot was not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("a snapshot of {size} bytes, over the limit of {MAX_SNAPSHOT_BYTES}")]
    TooBig { size: usize },
    #[error("not a metrics snapshot: {0}")]
    Malformed(String),
    #[error("a snapshot signed by {signer} names another member, {member}")]
    Impostor { signer: String, member: String },
    #[error("already {MAX_MEMBERS} members")]
    Full,
}

impl Latest {
    /// Takes a member's snapshot (its JSON), signed by `signer` in signed mode.
    pub fn take(&mut self, now: Instant, json: &[u8], signer: Option<&str>) -> Result<(), Refused> {
        if json.len() > MAX_SNAPSHOT_BYTES {
            return Err(Refused::TooBig { size: json.len() });
        }
        let text = std::str::from_utf8(json).map_err(|e| Refused::Malformed(e.to_string()))?;
        let s = Snapshot::from_json(text).map_err(|e| Refused::Malformed(e.to_string()))?;
        let member = s.process.id.clone();
        if let Some(signer) = signer.filter(|s| *s != member) {
            return Err(Refused::Impostor {
                signer: signer.to_string(),
                member,
            });
        }
        if !self.members.contains_key(&member) && self.members.len() >= MAX_MEMBERS {
            return Err(Refused::Full);
        }
        self.members.insert(member, (now, s));
        Ok(())
    }

    /// Forgets members silent too long; whether any was.
    pub fn expire(&mut self, now: Instant) -> bool {
        let before = self.members.len();
        let limit = METRICS_PERIOD * EXPIRY_PERIODS;
        self.members
            .retain(|_, (at, _)| now.duration_since(*at) < limit);
        self.members.len() != before
    }

    /// Every member's latest snapshot, by member name.
    pub fn snapshots(&self) -> Vec<Snapshot> {
        self.members.values().map(|(_, s)| s.clone()).collect()
    }
}

/// A realm's metrics, followed. Dropping it unsubscribes.
pub struct RealmMetrics {
    latest: Arc<Mutex<Latest>>,
    updates: watch::Receiver<u64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for RealmMetrics {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(l: &Mutex<Latest>) -> MutexGuard<'_, Latest> {
    l.lock().unwrap_or_else(|p| p.into_inner())
}

impl RealmMetrics {
    /// Every member's latest snapshot now.
    pub fn snapshots(&self) -> Vec<Snapshot> {
        lock(&self.latest).snapshots()
    }

    /// Changes each time a snapshot arrives or a member is forgotten.
    pub fn updates(&self) -> watch::Receiver<u64> {
        self.updates.clone()
    }
}

impl Edge {
    /// Sends `metrics`' snapshot to `realm` every [`METRICS_PERIOD`] while anyone listens.
    pub async fn metrics_announcer(
        &self,
        realm: Arc<Realm>,
        metrics: Metrics,
    ) -> Result<MetricsAnnouncer, EdgeError> {
        let publisher = self
            .publisher(&metrics_topic(realm), StreamSpec::new(METRICS_TYPE))
            .await?;
        let task = tokio::spawn(async move {
            let mut demand = publisher.demand();
            let mut tick = tokio::time::interval(METRICS_PERIOD);
            let mut warned = false;
            loop {
                tokio::select! {
                    changed = demand.changed() => if changed.is_err() { return },
                    _ = tick.tick() => {}
                }
                if !*demand.borrow() {
                    continue;
                }
                let Ok(json) = metrics.snapshot().await.to_json() else {
                    continue;
                };
                if let Err(e) = publisher.publish(json.as_bytes()).await {
                    if !std::mem::replace(&mut warned, true) {
                        warn!("cannot send this process's metrics to the realm: {e} (said once)");
                    }
                }
            }
        });
        Ok(MetricsAnnouncer { task })
    }

    /// Follows `realm`'s metrics: every member's latest snapshot.
    pub async fn realm_metrics(&self, realm: Arc<Realm>) -> RealmMetrics {
        let options = SubscriberOptions {
            depth: 256,
            ..SubscriberOptions::default()
        };
        let mut sub = self.subscriber(&metrics_topic(realm), options).await;
        let latest = Arc::new(Mutex::new(Latest::default()));
        let (tx, updates) = watch::channel(0u64);
        let l = latest.clone();
        let task = tokio::spawn(async move {
            let mut buf = Vec::new();
            let mut warned = std::collections::HashSet::new();
            let mut expire = tokio::time::interval(METRICS_PERIOD);
            loop {
                let ev = tokio::select! {
                    ev = sub.recv(&mut buf) => ev,
                    _ = expire.tick() => {
                        if lock(&l).expire(Instant::now()) {
                            tx.send_modify(|v| *v += 1);
                        }
                        continue;
                    }
                };
                let r = match ev {
                    Some(Event::Message(r)) => r,
                    Some(_) => continue,
                    None => return,
                };
                match lock(&l).take(Instant::now(), &buf, r.signer.as_deref()) {
                    Ok(()) => tx.send_modify(|v| *v += 1),
                    Err(e) => {
                        if warned.len() < 64 && warned.insert(e.to_string()) {
                            warn!("refused a metrics snapshot: {e}");
                        }
                    }
                }
            }
        });
        RealmMetrics {
            latest,
            updates,
            task,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::ProcessKind;

    fn snapshot(id: &str) -> Vec<u8> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let s = rt.block_on(Metrics::new(id, ProcessKind::Proxy).snapshot());
        s.to_json().unwrap().into_bytes()
    }

    #[test]
    fn members_are_kept_by_name_checked_against_their_signer_and_forgotten_when_silent() {
        let t0 = Instant::now();
        let mut l = Latest::default();
        l.take(t0, &snapshot("robot-1"), None).unwrap();
        l.take(t0, &snapshot("robot-2"), Some("robot-2")).unwrap();
        l.take(t0, &snapshot("robot-1"), None).unwrap();
        assert_eq!(l.snapshots().len(), 2);
        assert_eq!(
            l.take(t0, &snapshot("robot-1"), Some("robot-2")),
            Err(Refused::Impostor {
                signer: "robot-2".into(),
                member: "robot-1".into()
            })
        );
        assert!(matches!(l.take(t0, b"{", None), Err(Refused::Malformed(_))));
        assert!(matches!(
            l.take(t0, &vec![b' '; MAX_SNAPSHOT_BYTES + 1], None),
            Err(Refused::TooBig { .. })
        ));
        assert!(!l.expire(t0 + METRICS_PERIOD));
        l.take(t0 + METRICS_PERIOD * 3, &snapshot("robot-2"), None)
            .unwrap();
        assert!(l.expire(t0 + METRICS_PERIOD * EXPIRY_PERIODS));
        let left: Vec<String> = l.snapshots().into_iter().map(|s| s.process.id).collect();
        assert_eq!(left, vec!["robot-2".to_string()]);
    }
}
