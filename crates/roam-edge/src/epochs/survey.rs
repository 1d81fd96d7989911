//! Asking a realm's members which epoch they are in (`roam fleet status`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use roam_proto::epoch::Epoch;
use roam_proto::epoch_record::{message_kind, MemberKey, MemberStatus, Message};

use super::{epoch_topic, epoch_topic_name, unix_ms, EPOCH_TYPE};
use crate::edge::{Edge, EdgeError};
use crate::publisher::StreamSpec;
use crate::realm::Realm;
use crate::subscriber::{Event, SubscriberOptions};

/// Says this member's status (`epoch`) on the realm's epoch topic, which makes every member
/// that hears it for the first time answer with its own, and collects the statuses of the
/// members `members` lists for `listen`. Returns each member heard and its epoch.
pub async fn survey(
    edge: &Edge,
    realm: &Arc<Realm>,
    key: &MemberKey,
    epoch: Epoch,
    members: &HashMap<String, [u8; 32]>,
    listen: Duration,
) -> Result<BTreeMap<String, Epoch>, EdgeError> {
    let id = *epoch_topic_name(&realm.secret).as_bytes();
    let topic = epoch_topic(realm);
    let mut subscriber = edge.subscriber(&topic, SubscriberOptions::default()).await;
    let publisher = edge.publisher(&topic, StreamSpec::new(EPOCH_TYPE)).await?;
    let status = |sent_ms| {
        MemberStatus {
            realm: id,
            member: edge.name().to_owned(),
            epoch,
            sent_ms,
            ask: true,
        }
        .encode(key)
    };
    let deadline = Instant::now() + listen;
    let mut heard = BTreeMap::new();
    // Said again each second: the route to every member may come up after the first.
    let mut again = tokio::time::interval(Duration::from_secs(1));
    let mut buf = Vec::new();
    while Instant::now() < deadline && heard.len() < members.len().saturating_sub(1) {
        tokio::select! {
            _ = again.tick() => publisher.publish(&status(unix_ms())).await?,
            ev = subscriber.recv(&mut buf) => match ev {
                Some(Event::Message(_)) if message_kind(&buf) == Some(Message::Status) => {
                    if let Ok(s) = MemberStatus::parse(&buf, &id, members) {
                        if s.member != edge.name() {
                            heard.insert(s.member, s.epoch);
                        }
                    }
                }
                Some(_) => {}
                None => break,
            },
            _ = tokio::time::sleep_until(deadline.into()) => {}
        }
    }
    Ok(heard)
}
