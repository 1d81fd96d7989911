//! Following a realm's epochs: taking new epoch secrets as administrators hand them out,
//! switching to them without losing a message, and saying which epoch this member is in.
//!
//! Every member process runs one follower per realm ([`follow`]). It reads and writes the
//! realm's epoch topic, a raw name derived from the realm file's secret and sealed in epoch 0,
//! which carries two kinds of message ([`roam_proto::epoch_record`]):
//!
//! - **records**, signed by an administrator: the new epoch's number, its members and
//!   administrators, and its secret sealed to each member's identity key. A member takes a
//!   record only if it is newer than its own and signed by an administrator of the member's
//!   own view of the realm (the realm file's `admins:`, then each taken record's); it keeps
//!   the newest one beside the realm file ([`store`]) and passes it to any member that says it
//!   is behind, so a member that was offline catches up as soon as it is back;
//! - **statuses**, each signed by the member it names: the epoch it seals in. Sent on start,
//!   after each switch and every [`STATUS_PERIOD`]; `roam realm rotate` waits on them.
//!
//! A taken epoch is opened at once, sealed in `switch_after` later (by then every online
//! member holds it, so nothing sealed in it goes unread) and the epoch before is retired
//! `retire_after` later (what was sealed in it and still in flight opens until then; after
//! it, the old secret opens nothing new). Names never change, so routes, streams and replay
//! windows carry on across the switch.

pub mod rotate;
pub mod state;
pub mod store;
pub mod survey;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use roam_proto::epoch_record::{message_kind, EpochRecord, MemberKey, Message, RecordError};
use roam_proto::{Name, RealmSecret};
use tokio::sync::watch;
use tracing::{error, info, warn};

use crate::edge::{Edge, EdgeError, TopicRef};
use crate::names::data_descriptor;
use crate::publisher::{Publisher, StreamSpec};
use crate::realm::Realm;
use crate::subscriber::{Event, Subscriber, SubscriberOptions};
pub use state::{Answer, EpochState, EpochStats, Membership, Offer, PeerEpoch, Step};

/// The realm-side name of the epoch topic.
pub const EPOCH_TOPIC: &str = "roam/epochs";
/// Its type, in the name's descriptor.
pub const EPOCH_TYPE: &str = "roam/epochs/v1";
/// How often a member says which epoch it is in.
pub const STATUS_PERIOD: Duration = Duration::from_millis(state::STATUS_PERIOD_MS);
/// A member passes its record to members that are behind at most this often.
const RESEND_GAP: Duration = Duration::from_millis(500);

/// The epoch topic's name in the realm with this secret; also the realm's id in records.
pub fn epoch_topic_name(secret: &RealmSecret) -> Name {
    data_descriptor(EPOCH_TOPIC, EPOCH_TYPE).name(secret)
}

/// The epoch topic, on a copy of the realm that seals and opens in epoch 0 only: every
/// member can read it whatever epoch it is in; what it carries protects itself.
pub(crate) fn epoch_topic(realm: &Realm) -> TopicRef {
    let zero = Arc::new(Realm::from_secret(
        realm.label.clone(),
        realm.secret.clone(),
    ));
    TopicRef::raw_name(zero, EPOCH_TOPIC, epoch_topic_name(&realm.secret))
}

pub(crate) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// What a follower knows now.
#[derive(Debug, Clone, Default)]
pub struct EpochReport {
    pub stats: EpochStats,
    /// The last status of every other member heard from.
    pub peers: BTreeMap<String, PeerEpoch>,
}

/// Follows one realm's epochs for as long as it lives.
pub struct EpochFollower {
    report: watch::Receiver<EpochReport>,
    task: tokio::task::JoinHandle<()>,
}

impl EpochFollower {
    /// What the follower knows, and its changes.
    pub fn report(&self) -> watch::Receiver<EpochReport> {
        self.report.clone()
    }
}

impl Drop for EpochFollower {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The realm's membership as its file says.
pub fn file_membership(realm: &Realm) -> Membership {
    Membership {
        admins: realm.admins.clone(),
        members: realm.members_by_name(),
    }
}

/// Takes `realm`'s kept epoch (before returning, so that nothing this process seals after is
/// sealed in an older one) and follows its epochs as `edge`'s identity, whose key is `key`.
pub async fn follow(
    edge: &Edge,
    realm: &Arc<Realm>,
    key: MemberKey,
) -> Result<EpochFollower, EdgeError> {
    let id = *epoch_topic_name(&realm.secret).as_bytes();
    let mut state = EpochState::new(id, edge.name(), file_membership(realm));
    let kept = if realm.path.as_os_str().is_empty() {
        Ok(None)
    } else {
        store::read(&realm.path)
    };
    match kept {
        Ok(Some(bytes)) => match EpochRecord::parse(&bytes).and_then(|r| state.resume(r, &key)) {
            Ok(steps) => {
                apply(realm, &steps);
                info!(realm = %realm.label, epoch = state.stats().newest, "resumed the realm's epoch");
            }
            Err(e) => {
                warn!(realm = %realm.label, file = %store::epoch_file(&realm.path).display(), "ignored the kept epoch record: {e}")
            }
        },
        Ok(None) => {}
        Err(e) => warn!(realm = %realm.label, "cannot read the kept epoch: {e}"),
    }
    if state.stats().removed {
        error!(realm = %realm.label, member = %edge.name(), "this member was removed from the realm: it can no longer read or write its topics");
    }
    let topic = epoch_topic(realm);
    let publisher = edge.publisher(&topic, StreamSpec::new(EPOCH_TYPE)).await?;
    let subscriber = edge.subscriber(&topic, SubscriberOptions::default()).await;
    let (tx, rx) = watch::channel(report_of(&state));
    let task = tokio::spawn(run(Follow {
        realm: realm.clone(),
        me: edge.name().to_owned(),
        key,
        state,
        publisher,
        subscriber,
        report: tx,
        warned_status: Default::default(),
    }));
    Ok(EpochFollower { report: rx, task })
}

fn report_of(state: &EpochState) -> EpochReport {
    EpochReport {
        stats: state.stats(),
        peers: state.peers().clone(),
    }
}

/// Changes the realm's keyring as the state says.
fn apply(realm: &Realm, steps: &[Step]) {
    for step in steps {
        match step {
            Step::Install(e, secret) => realm.keys.install(*e, secret),
            Step::SealWith(e) => {
                if let Err(err) = realm.keys.seal_with(*e) {
                    warn!(realm = %realm.label, "cannot switch epochs: {err}");
                } else {
                    info!(realm = %realm.label, epoch = e, "sealing in the realm's new epoch");
                }
            }
            Step::RetireBefore(e) => realm.keys.retire_before(*e),
        }
    }
}

struct Follow {
    realm: Arc<Realm>,
    me: String,
    key: MemberKey,
    state: EpochState,
    publisher: Publisher,
    subscriber: Subscriber,
    report: watch::Sender<EpochReport>,
    /// The kinds of refused status already logged (each once; all are counted).
    warned_status: std::collections::HashSet<std::mem::Discriminant<RecordError>>,
}

async fn run(mut f: Follow) {
    let start = Instant::now();
    let now_ms = || start.elapsed().as_millis() as u64;
    let mut buf = Vec::new();
    let mut next_status = Instant::now();
    let mut resend_at: Option<Instant> = None;
    let mut last_resend = Instant::now() - RESEND_GAP;
    loop {
        let mut wake = next_status;
        if let Some(at) = f.state.next_due() {
            wake = wake.min(start + Duration::from_millis(at));
        }
        if let Some(at) = resend_at {
            wake = wake.min(at);
        }
        tokio::select! {
            ev = f.subscriber.recv(&mut buf) => match ev {
                Some(Event::Message(_)) => {
                    let answer = f.take(&buf, now_ms());
                    if answer.record {
                        let at = (last_resend + RESEND_GAP).max(Instant::now());
                        resend_at = Some(resend_at.map_or(at, |r| r.min(at)));
                    }
                    if answer.status {
                        next_status = next_status.min(Instant::now());
                    }
                }
                Some(_) => {}
                None => return,
            },
            _ = tokio::time::sleep_until(wake.into()) => {}
        }
        let due = f.state.due(now_ms());
        if !due.is_empty() {
            apply(&f.realm, &due);
            if due.iter().any(|s| matches!(s, Step::SealWith(_))) {
                next_status = Instant::now();
            }
        }
        if resend_at.is_some_and(|at| at <= Instant::now()) {
            resend_at = None;
            last_resend = Instant::now();
            if let Some(r) = f.state.record() {
                let _ = f.publisher.publish(r.bytes()).await;
            }
        }
        if next_status <= Instant::now() {
            next_status = Instant::now() + STATUS_PERIOD;
            let status = f.state.status(unix_ms()).encode(&f.key);
            let _ = f.publisher.publish(&status).await;
        }
        f.report.send_if_modified(|r| {
            let now = report_of(&f.state);
            let changed = r.stats != now.stats
                || r.peers.len() != now.peers.len()
                || r.peers
                    .iter()
                    .zip(&now.peers)
                    .any(|(a, b)| a.0 != b.0 || a.1.epoch != b.1.epoch);
            *r = now;
            changed
        });
    }
}

impl Follow {
    /// Takes one message of the epoch topic; returns what to answer it with.
    fn take(&mut self, bytes: &[u8], now_ms: u64) -> Answer {
        let record = |record| Answer {
            record,
            status: false,
        };
        let label = &self.realm.label;
        match message_kind(bytes) {
            Some(Message::Record) => match self.state.offer_record(bytes, &self.key, now_ms) {
                Ok(Offer::Took(epoch, steps)) => {
                    apply(&self.realm, &steps);
                    self.keep();
                    info!(realm = %label, epoch, "took a new epoch of the realm");
                    record(false)
                }
                Ok(Offer::Removed(epoch)) => {
                    self.keep();
                    error!(realm = %label, epoch, member = %self.me, "this member was removed from the realm: it can no longer read or write its topics");
                    record(false)
                }
                Ok(Offer::Older) => record(true),
                Ok(Offer::Same) => record(false),
                Err(e) => {
                    warn!(realm = %label, "refused an epoch record: {e}");
                    record(false)
                }
            },
            Some(Message::Status) => match self.state.offer_status(bytes, now_ms) {
                Ok(answer) => {
                    tracing::debug!(realm = %label, ?answer, "took an epoch status");
                    answer
                }
                // A realm file that lists no members (a realm that never rotates) knows no
                // one's key: its members' statuses are all unknown to it. Counted, not logged.
                Err(RecordError::UnknownMember(m)) => {
                    tracing::debug!(realm = %label, member = %m, "an epoch status of a member this realm does not list");
                    record(false)
                }
                Err(e) => {
                    if self.warned_status.insert(std::mem::discriminant(&e)) {
                        warn!(realm = %label, "refused an epoch status (further ones of this kind are only counted): {e}");
                    }
                    record(false)
                }
            },
            None => {
                warn!(realm = %label, "dropped a message of the epoch topic that is neither a record nor a status");
                record(false)
            }
        }
    }

    fn keep(&self) {
        if self.realm.path.as_os_str().is_empty() {
            return;
        }
        if let Some(r) = self.state.record() {
            if let Err(e) = store::write(&self.realm.path, r.bytes()) {
                warn!(realm = %self.realm.label, "cannot keep the realm's epoch (a restart will need it handed again): {e}");
            }
        }
    }
}
