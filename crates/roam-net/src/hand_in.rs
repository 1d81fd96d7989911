//! Handing a revocation list to one router (`roam pki revoke --router`): the router checks
//! it against the CA, takes it if it is newer than its own, passes it to the whole mesh and
//! answers with the list it holds then, which is how the operator learns it was taken.

use std::time::Duration;

use bytes::Bytes;
use roam_pki::Identity;
use roam_proto::frame::Role;
use roam_proto::Frame;
use tokio::sync::mpsc;

use crate::dialer;
use crate::inbound::Inbound;
use crate::link::{LinkConfig, LinkInput, LocalInfo};
use crate::peer_addr::PeerAddr;
use crate::{quic, tls};

/// Why a list could not be handed in.
#[derive(Debug, thiserror::Error)]
pub enum HandInError {
    #[error("the list to hand in is unusable: {0}")]
    BadList(roam_pki::CrlError),
    #[error("cannot reach router {router}: {reason}")]
    Unreachable { router: String, reason: String },
    #[error("router {router} closed the link before answering: {reason}")]
    Closed { router: String, reason: String },
    #[error("router {router} did not answer within {waited:?}")]
    NoAnswer { router: String, waited: Duration },
    #[error("router {router} holds list {held}, older than list {sent}: it refused the one sent ({why})")]
    NotTaken {
        router: String,
        held: u64,
        sent: u64,
        why: String,
    },
}

/// Longest wait for the router's answer once the link is up.
const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// Hands `list` to `router` as `identity` (any identity of the CA: the list's own signature
/// is what the router checks) and returns the number of the list the router holds after.
pub async fn hand_in_revocations(
    identity: &Identity,
    router: &PeerAddr,
    link: &LinkConfig,
    list: &[u8],
) -> Result<u64, HandInError> {
    let sent =
        roam_pki::RevocationList::verify(list, &identity.ca).map_err(HandInError::BadList)?;
    let name = router.to_string();
    let unreachable = |reason: String| HandInError::Unreachable {
        router: name.clone(),
        reason,
    };
    let ep = quic::endpoint(identity, link, None).map_err(|e| unreachable(e.to_string()))?;
    let me = LocalInfo {
        name: identity.name.clone(),
        role: Role::Client,
        id: tls::router_id(&identity.name),
    };
    let (tx, mut rx) = mpsc::channel(64);
    let mut est = dialer::dial(&ep, identity, router, &me, link, 1, Inbound::unpaused(tx))
        .await
        .map_err(|e| unreachable(dialer::why_unreachable(router, &e, link.handshake_timeout)))?;
    est.start();
    est.tx
        .send(Frame::Revocations(Bytes::copy_from_slice(sent.der())));
    // The router sends the list it holds when the link comes up, before it has read ours:
    // an older answer is only final if nothing newer follows.
    let mut last_held = None;
    let answer = async {
        while let Some((_, input)) = rx.recv().await {
            match input {
                LinkInput::Frame(Frame::Revocations(held)) => {
                    match roam_pki::RevocationList::verify(&held, &identity.ca) {
                        Ok(held) if held.number() == sent.number() && held != sent => {
                            return Err(HandInError::NotTaken {
                                router: name.clone(),
                                held: held.number(),
                                sent: sent.number(),
                                why: "it holds another list with the same number".into(),
                            })
                        }
                        Ok(held) if held.number() >= sent.number() => return Ok(held.number()),
                        Ok(held) => last_held = Some(held.number()),
                        Err(e) => {
                            return Err(HandInError::NotTaken {
                                router: name.clone(),
                                held: 0,
                                sent: sent.number(),
                                why: format!("its answer is unusable: {e}"),
                            })
                        }
                    }
                }
                LinkInput::Frame(_) => {}
                LinkInput::Closed(reason) => {
                    return Err(HandInError::Closed {
                        router: name.clone(),
                        reason,
                    })
                }
            }
        }
        Err(HandInError::Closed {
            router: name.clone(),
            reason: "link ended".into(),
        })
    };
    let result = match tokio::time::timeout(ANSWER_WAIT, answer).await {
        Ok(r) => r,
        Err(_) => Err(match last_held {
            Some(held) => HandInError::NotTaken {
                router: name.clone(),
                held,
                sent: sent.number(),
                why: "it kept the older list (see its log)".into(),
            },
            None => HandInError::NoAnswer {
                router: name.clone(),
                waited: ANSWER_WAIT,
            },
        }),
    };
    est.tx.close("revocation list handed in");
    // The close is only queued: give it a moment to reach the router.
    let _ = tokio::time::timeout(Duration::from_secs(1), ep.wait_idle()).await;
    result
}
