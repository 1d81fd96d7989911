//! Starting a realm's next epoch (`roam realm rotate`): the record an administrator issues,
//! and handing it to the members until each says it has switched.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use roam_proto::epoch::Epoch;
use roam_proto::epoch_record::{
    message_kind, EpochRecord, EpochTerms, MemberKey, MemberStatus, Message, RecordError,
};
use roam_proto::RealmSecret;

use super::{epoch_topic, epoch_topic_name, store, unix_ms, EPOCH_TYPE};
use crate::edge::{Edge, EdgeError};
use crate::publisher::StreamSpec;
use crate::realm::{Realm, RealmError};
use crate::subscriber::{Event, SubscriberOptions};

/// How members switch to the new epoch.
#[derive(Debug, Clone)]
pub struct RotateOptions {
    /// Members left out of the new epoch (and out of the administrator's realm file).
    pub remove: Vec<String>,
    /// How long after receiving the record members start sealing in it.
    pub switch_after: Duration,
    /// How long after receiving the record members stop opening the epoch before.
    pub retire_after: Duration,
}

impl Default for RotateOptions {
    fn default() -> Self {
        Self {
            remove: Vec::new(),
            switch_after: Duration::from_secs(2),
            retire_after: Duration::from_secs(10),
        }
    }
}

/// Why no new epoch was started.
#[derive(Debug, thiserror::Error)]
pub enum RotateError {
    #[error("{0} is not an administrator of this realm (its realm file's `admins:`, or the last epoch's): only administrators start epochs")]
    NotAdmin(String),
    #[error("the realm's key for {0} is not this identity's key: rotate with the identity the realm lists")]
    WrongKey(String),
    #[error("{0} is not a member of this realm; members: {1}")]
    UnknownMember(String, String),
    #[error("the realm has no epoch left after {0}")]
    Exhausted(Epoch),
    #[error("the realm would have no members left")]
    NoMembers,
    #[error(transparent)]
    Record(#[from] RecordError),
    #[error(transparent)]
    Realm(#[from] RealmError),
    #[error("the system random source failed")]
    Random,
}

/// The record this administrator's files say the realm is in, if any.
pub fn current_record(realm: &Realm) -> Result<Option<EpochRecord>, RotateError> {
    let Some(bytes) = store::read(&realm.path)? else {
        return Ok(None);
    };
    let record = EpochRecord::parse(&bytes)?;
    record.verify_self_consistent()?;
    Ok(Some(record))
}

/// Issues the next epoch's record as administrator `me`: the members of the realm file and
/// of the last epoch, less `options.remove`, each sent the fresh secret sealed to its key.
/// Keeps the record beside the realm file (the administrator is in the new epoch at once).
pub fn next_epoch(
    realm: &Realm,
    me: &str,
    key: &MemberKey,
    options: &RotateOptions,
) -> Result<EpochRecord, RotateError> {
    let current = current_record(realm)?;
    let (mut admins, mut members): (BTreeSet<String>, BTreeMap<String, [u8; 32]>) = (
        realm.admins.iter().cloned().collect(),
        realm.members_by_name().into_iter().collect(),
    );
    let in_charge: Vec<String> = match &current {
        Some(r) => {
            admins.extend(r.terms.admins.iter().cloned());
            members.extend(r.terms.members.iter().cloned());
            r.terms.admins.clone()
        }
        None => realm.admins.clone(),
    };
    if !in_charge.iter().any(|a| a == me) {
        return Err(RotateError::NotAdmin(me.to_owned()));
    }
    if members.get(me) != Some(&key.public_key()) {
        return Err(RotateError::WrongKey(me.to_owned()));
    }
    for name in &options.remove {
        if members.remove(name).is_none() {
            let known: Vec<&str> = members.keys().map(String::as_str).collect();
            return Err(RotateError::UnknownMember(name.clone(), known.join(", ")));
        }
        admins.remove(name);
    }
    if members.is_empty() {
        return Err(RotateError::NoMembers);
    }
    let epoch = match &current {
        Some(r) => r
            .terms
            .epoch
            .checked_add(1)
            .ok_or(RotateError::Exhausted(r.terms.epoch))?,
        None => 1,
    };
    let secret = RealmSecret::generate().map_err(|_| RotateError::Random)?;
    let millis = |d: Duration| d.as_millis().min(u32::MAX as u128) as u32;
    let record = EpochRecord::issue(
        EpochTerms {
            realm: *epoch_topic_name(&realm.secret).as_bytes(),
            epoch,
            issued_ms: unix_ms(),
            switch_after_ms: millis(options.switch_after),
            retire_after_ms: millis(options.retire_after),
            admins: admins.into_iter().collect(),
            members: members.into_iter().collect(),
        },
        &secret,
        me,
        key,
    )?;
    for name in &options.remove {
        crate::realm::remove_member(&realm.path, name)?;
    }
    store::write(&realm.path, record.bytes())?;
    Ok(record)
}

/// Which members said they switched to the record's epoch, and which did not in time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HandOut {
    pub switched: BTreeSet<String>,
    pub missing: BTreeSet<String>,
}

/// Publishes `record` on the realm's epoch topic, again every second, until every member of
/// it but `me` has said it seals in its epoch, or `within` has passed. `switched` is called
/// once per member as it does.
pub async fn hand_out(
    edge: &Edge,
    realm: &Arc<Realm>,
    record: &EpochRecord,
    within: Duration,
    mut switched: impl FnMut(&str),
) -> Result<HandOut, EdgeError> {
    let topic = epoch_topic(realm);
    let mut subscriber = edge.subscriber(&topic, SubscriberOptions::default()).await;
    let publisher = edge.publisher(&topic, StreamSpec::new(EPOCH_TYPE)).await?;
    let keys: HashMap<String, [u8; 32]> = record.terms.members.iter().cloned().collect();
    let mut out = HandOut {
        switched: BTreeSet::new(),
        missing: keys.keys().filter(|n| *n != edge.name()).cloned().collect(),
    };
    let deadline = Instant::now() + within;
    let mut buf = Vec::new();
    let mut resend = tokio::time::interval(Duration::from_secs(1));
    while !out.missing.is_empty() && Instant::now() < deadline {
        tokio::select! {
            _ = resend.tick() => publisher.publish(record.bytes()).await?,
            ev = subscriber.recv(&mut buf) => match ev {
                Some(Event::Message(_)) if message_kind(&buf) == Some(Message::Status) => {
                    let Ok(s) = MemberStatus::parse(&buf, &record.terms.realm, &keys) else {
                        continue;
                    };
                    if s.epoch >= record.terms.epoch && out.missing.remove(&s.member) {
                        switched(&s.member);
                        out.switched.insert(s.member);
                    }
                }
                Some(_) => {}
                None => break,
            },
            _ = tokio::time::sleep_until(deadline.into()) => {}
        }
    }
    Ok(out)
}
