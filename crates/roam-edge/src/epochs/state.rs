//! What a member knows of its realm's epochs, and what it does next: no I/O, no clock (the
//! caller passes milliseconds of its own monotonic clock).

use std::collections::{BTreeMap, HashMap};

use roam_proto::epoch::Epoch;
use roam_proto::epoch_record::{EpochRecord, MemberKey, MemberStatus, RecordError};
use roam_proto::RealmSecret;

/// Who is in the realm and who may start its epochs, as this member sees it now.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Membership {
    pub admins: Vec<String>,
    pub members: HashMap<String, [u8; 32]>,
}

impl Membership {
    fn of(record: &EpochRecord) -> Self {
        Self {
            admins: record.terms.admins.clone(),
            members: record.terms.members.iter().cloned().collect(),
        }
    }
}

/// A change of the realm's keyring, now or when it falls due.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Open envelopes of this epoch.
    Install(Epoch, RealmSecret),
    /// Seal new envelopes in this epoch.
    SealWith(Epoch),
    /// Stop opening envelopes of every epoch before this one.
    RetireBefore(Epoch),
}

/// What became of a record offered to this member.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Offer {
    /// A newer epoch, taken: the steps to take now (the rest fall due later).
    Took(Epoch, Vec<Step>),
    /// The epoch this member already holds.
    Same,
    /// An older epoch than this member's: its sender is behind, and should get this
    /// member's record.
    Older,
    /// A newer epoch sealed to the other members only: this member was removed.
    Removed(Epoch),
}

/// Counters of a member's epoch traffic.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EpochStats {
    /// The epoch this member seals in.
    pub sealing: Epoch,
    /// The newest epoch this member knows of (held or not).
    pub newest: Epoch,
    pub records_taken: u64,
    /// Records refused: malformed, of another realm, not signed by an administrator.
    pub records_refused: u64,
    /// Statuses refused: malformed, or not signed by the member they name.
    pub statuses_refused: u64,
    /// Whether the newest epoch left this member out.
    pub removed: bool,
}

/// How often members send their status, in milliseconds ([`super::STATUS_PERIOD`]).
pub const STATUS_PERIOD_MS: u64 = 5_000;

/// What a member answers a status with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Answer {
    /// The sender is behind: send it this member's record.
    pub record: bool,
    /// The sender is new here (or back): send this member's status now.
    pub status: bool,
}

/// The last status a member sent, as this member received it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerEpoch {
    pub epoch: Epoch,
    pub seen_ms: u64,
}

/// One member's view of its realm's epochs.
pub struct EpochState {
    realm: [u8; 32],
    me: String,
    membership: Membership,
    record: Option<EpochRecord>,
    timers: Vec<(u64, Step)>,
    peers: BTreeMap<String, PeerEpoch>,
    stats: EpochStats,
}

impl EpochState {
    /// Epoch 0 with the realm file's members and administrators.
    pub fn new(realm: [u8; 32], me: impl Into<String>, membership: Membership) -> Self {
        Self {
            realm,
            me: me.into(),
            membership,
            record: None,
            timers: Vec::new(),
            peers: BTreeMap::new(),
            stats: EpochStats::default(),
        }
    }

    /// Takes up the record this member kept on disk: in force at once (it was taken before
    /// this process started).
    pub fn resume(
        &mut self,
        record: EpochRecord,
        key: &MemberKey,
    ) -> Result<Vec<Step>, RecordError> {
        if record.terms.realm != self.realm {
            return Err(RecordError::OtherRealm);
        }
        record.verify_self_consistent()?;
        let epoch = record.terms.epoch;
        self.membership = Membership::of(&record);
        self.stats.newest = epoch;
        let steps = match record.open(&self.me, key) {
            Ok(secret) => {
                self.stats.sealing = epoch;
                vec![
                    Step::Install(epoch, secret),
                    Step::SealWith(epoch),
                    Step::RetireBefore(epoch),
                ]
            }
            Err(RecordError::NotSealedTo(_)) => {
                self.stats.removed = true;
                Vec::new()
            }
            Err(e) => return Err(e),
        };
        self.record = Some(record);
        Ok(steps)
    }

    /// A record from the realm's epoch topic.
    pub fn offer_record(
        &mut self,
        bytes: &[u8],
        key: &MemberKey,
        now_ms: u64,
    ) -> Result<Offer, RecordError> {
        let offered = self.check_record(bytes);
        if offered.is_err() {
            self.stats.records_refused += 1;
        }
        let record = offered?;
        let epoch = record.terms.epoch;
        if epoch < self.stats.newest {
            return Ok(Offer::Older);
        }
        if epoch == self.stats.newest {
            return Ok(Offer::Same);
        }
        let secret = match record.open(&self.me, key) {
            Ok(s) => Some(s),
            Err(RecordError::NotSealedTo(_)) => None,
            Err(e) => {
                self.stats.records_refused += 1;
                return Err(e);
            }
        };
        self.membership = Membership::of(&record);
        self.stats.newest = epoch;
        self.stats.records_taken += 1;
        let switch = now_ms + u64::from(record.terms.switch_after_ms);
        let retire = switch.max(now_ms + u64::from(record.terms.retire_after_ms));
        self.record = Some(record);
        let Some(secret) = secret else {
            self.stats.removed = true;
            return Ok(Offer::Removed(epoch));
        };
        self.stats.removed = false;
        // A switch still pending from an earlier record is overtaken by this one.
        self.timers.clear();
        self.timers.push((switch, Step::SealWith(epoch)));
        self.timers.push((retire, Step::RetireBefore(epoch)));
        Ok(Offer::Took(epoch, vec![Step::Install(epoch, secret)]))
    }

    fn check_record(&self, bytes: &[u8]) -> Result<EpochRecord, RecordError> {
        let record = EpochRecord::parse(bytes)?;
        let epoch = record.terms.epoch;
        if epoch == self.stats.newest && self.record.as_ref().is_some_and(|r| r.bytes() == bytes) {
            return Ok(record);
        }
        record.verify(
            &self.realm,
            &self.membership.admins,
            &self.membership.members,
        )?;
        Ok(record)
    }

    /// The steps whose time has come, in order.
    pub fn due(&mut self, now_ms: u64) -> Vec<Step> {
        let mut due: Vec<(u64, Step)> = Vec::new();
        let mut i = 0;
        while i < self.timers.len() {
            if self.timers[i].0 <= now_ms {
                due.push(self.timers.remove(i));
            } else {
                i += 1;
            }
        }
        due.sort_by_key(|(at, _)| *at);
        due.into_iter()
            .map(|(_, step)| {
                if let Step::SealWith(e) = step {
                    self.stats.sealing = e;
                }
                step
            })
            .collect()
    }

    /// When the next step falls due.
    pub fn next_due(&self) -> Option<u64> {
        self.timers.iter().map(|(at, _)| *at).min()
    }

    /// A status from the realm's epoch topic: what this member should answer it with.
    pub fn offer_status(&mut self, bytes: &[u8], now_ms: u64) -> Result<Answer, RecordError> {
        let status = match MemberStatus::parse(bytes, &self.realm, &self.membership.members) {
            Ok(s) => s,
            Err(e) => {
                self.stats.statuses_refused += 1;
                return Err(e);
            }
        };
        if status.member == self.me {
            return Ok(Answer::default());
        }
        let previous = self.peers.insert(
            status.member.clone(),
            PeerEpoch {
                epoch: status.epoch,
                seen_ms: now_ms,
            },
        );
        Ok(Answer {
            record: status.epoch < self.stats.newest && self.record.is_some(),
            // A member that asks (`roam fleet status`), or that is heard from for the first
            // time or again after missing two periods, learns this member's epoch now rather
            // than at its next period.
            status: status.ask
                || previous.is_none_or(|p| now_ms.saturating_sub(p.seen_ms) > 2 * STATUS_PERIOD_MS),
        })
    }

    /// This member's status, to send.
    pub fn status(&self, sent_ms: u64) -> MemberStatus {
        MemberStatus {
            realm: self.realm,
            member: self.me.clone(),
            epoch: self.stats.sealing,
            sent_ms,
            ask: false,
        }
    }

    /// The newest record this member took, to pass on and keep.
    pub fn record(&self) -> Option<&EpochRecord> {
        self.record.as_ref()
    }

    pub fn membership(&self) -> &Membership {
        &self.membership
    }

    /// The last status of every member heard from.
    pub fn peers(&self) -> &BTreeMap<String, PeerEpoch> {
        &self.peers
    }

    pub fn stats(&self) -> EpochStats {
        self.stats
    }
}

#[cfg(test)]
#[path = "state_tests.rs"]
mod tests;
