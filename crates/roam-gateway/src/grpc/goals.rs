//! Goals for the realm's action servers: SendGoal's events (accepted or rejected, status
//! changes, feedback, result) as a response stream, and CancelGoal, over the edge layer's
//! [`ActionClient`]s, one per action shared by every call of the door.
//!
//! A goal is followed by a task of its own that hands its events to the call's stream
//! through a small channel; when the client reads slower than feedback arrives, the edge
//! goal handle keeps the newest feedback (it drops the oldest). When the client cancels the
//! call before the result, the goal is cancelled too: nobody would hear how it ends.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::Stream;
use roam_edge::action::{CancelCode, GoalId, GoalInfo, GoalStatus, Time};
use roam_edge::ros_names::type_to_dds;
use roam_edge::{ActionClient, ActionRef};
use roam_msg::MessageType;
use roam_proto::directory::{ItemKind, Role};
use tokio::sync::mpsc;
use tonic::Status;

use super::door::input;
use super::pb::{self, goal_event::Event, Encoding};
use super::status;
use crate::listing::Listed;
use crate::session::SessionError;
use crate::Gateway;

/// Events of one goal waiting for the client at most (feedback beyond waits in the edge
/// goal handle, which keeps the newest).
const EVENTS: usize = 8;

/// An action's message types (from definitions on the gateway's machine).
struct Types {
    goal: MessageType,
    feedback: MessageType,
    result: MessageType,
    result_response: MessageType,
}

async fn types(gw: &Gateway, aref: &ActionRef) -> Result<Types, SessionError> {
    let get = |part: &str| {
        let ros = format!("{}_{part}", aref.action_type);
        async move {
            gw.codecs
                .local(&type_to_dds(&ros))
                .await
                .map(|(t, _)| t)
                .ok_or(SessionError::NoDefinition(ros))
        }
    };
    Ok(Types {
        goal: get("Goal").await?,
        feedback: get("Feedback").await?,
        result: get("Result").await?,
        result_response: get("GetResult_Response").await?,
    })
}

/// An action of the realm, ready for goals.
pub struct ActionTarget {
    client: ActionClient,
    types: Types,
    _listed: Listed,
}

/// The door's action clients by action name.
pub struct ActionTargets {
    gw: Arc<Gateway>,
    targets: tokio::sync::Mutex<HashMap<String, Arc<ActionTarget>>>,
}

impl ActionTargets {
    pub fn new(gw: Arc<Gateway>) -> Self {
        Self {
            gw,
            targets: Default::default(),
        }
    }

    /// The client of `action` (a full name), of type `action_type` or the one the realm's
    /// directory lists; made on first use and kept (a bounded number).
    pub async fn get(
        &self,
        action: &str,
        action_type: Option<&str>,
    ) -> Result<Arc<ActionTarget>, Status> {
        let mut targets = self.targets.lock().await;
        let aref = match action_type {
            Some(ty) => Some(
                ActionRef::new(self.gw.realm.clone(), action, ty)
                    .map_err(|e| status::session(&SessionError::from(e)))?,
            ),
            None => None,
        };
        if let Some(t) = targets.get(action) {
            let same = aref
                .as_ref()
                .is_none_or(|a| a.action_type == t.client.action().action_type);
            if same {
                return Ok(t.clone());
            }
        }
        let aref = match aref {
            Some(a) => a,
            None => {
                let ty = self
                    .gw
                    .realm_listing()
                    .actions
                    .into_iter()
                    .find(|a| a.name == action)
                    .and_then(|a| a.types.into_iter().next())
                    .ok_or_else(|| {
                        status::session(&SessionError::UnknownType(action.to_string()))
                    })?;
                ActionRef::new(self.gw.realm.clone(), action, &ty)
                    .map_err(|e| status::session(&SessionError::from(e)))?
            }
        };
        let types = types(&self.gw, &aref)
            .await
            .map_err(|e| status::session(&e))?;
        let client = self
            .gw
            .edge
            .action_client(&aref, Default::default())
            .await
            .map_err(|e| Status::unavailable(format!("{action}: {e}")))?;
        let listed = self.gw.listing.add(
            ItemKind::Action,
            Role::Imports,
            &aref.action,
            &aref.action_type,
        );
        let target = Arc::new(ActionTarget {
            client,
            types,
            _listed: listed,
        });
        if targets.len() >= self.gw.limits.max_topics_per_client && !targets.contains_key(action) {
            // Forget an arbitrary one: goals in flight keep their own handle.
            if let Some(k) = targets.keys().next().cloned() {
                targets.remove(&k);
            }
        }
        targets.insert(action.to_string(), target.clone());
        Ok(target)
    }
}

type Events = mpsc::Sender<Result<pb::GoalEvent, Status>>;

fn event(e: Event) -> Result<pb::GoalEvent, Status> {
    Ok(pb::GoalEvent { event: Some(e) })
}

fn time(t: Time) -> pb::Time {
    pb::Time {
        sec: i64::from(t.sec),
        nanosec: t.nanosec,
    }
}

impl ActionTarget {
    /// Sends a goal (`goal` in `encoding`; empty: every field at its default); its events as a
    /// stream. A goal that does not fit the type is refused here, before anything is sent.
    pub fn send_goal(
        self: &Arc<Self>,
        encoding: Encoding,
        goal: &[u8],
        timeout: Duration,
    ) -> Result<impl Stream<Item = Result<pb::GoalEvent, Status>> + Send + 'static, Status> {
        let body = if goal.is_empty() {
            input(Encoding::Json, b"{}")
        } else {
            input(encoding, goal)
        };
        let mut cdr = Vec::new();
        body.to_cdr(&self.types.goal, &mut cdr).map_err(|source| {
            status::session(&SessionError::Encode {
                topic: self.client.action().action.clone(),
                type_name: self.types.goal.name().full(),
                source,
            })
        })?;
        let (tx, rx) = mpsc::channel(EVENTS);
        tokio::spawn(self.clone().follow(cdr, encoding, timeout, tx));
        Ok(futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|e| (e, rx))
        }))
    }

    /// Sends the goal and passes on what happens to it until its result, or until the
    /// client goes (then cancels it).
    async fn follow(
        self: Arc<Self>,
        goal: Vec<u8>,
        encoding: Encoding,
        timeout: Duration,
        tx: Events,
    ) {
        let mut handle = match self.client.send_goal(&goal, timeout).await {
            Ok(h) => h,
            Err(e @ roam_edge::action::ActionError::Rejected { .. }) => {
                let reason = e.to_string();
                let _ = tx
                    .send(event(Event::Rejected(pb::GoalRejected { reason })))
                    .await;
                return;
            }
            Err(e) => {
                let _ = tx.send(Err(status::action(&e))).await;
                return;
            }
        };
        let accepted = pb::GoalAccepted {
            goal_id: handle.id().to_string(),
            stamp: Some(time(handle.stamp())),
        };
        if tx.send(event(Event::Accepted(accepted))).await.is_err() {
            let _ = handle.cancel(timeout).await;
            return;
        }
        let mut status_changes = handle.status_changes();
        let mut told = GoalStatus::Accepted;
        loop {
            tokio::select! {
                f = handle.feedback() => match f {
                    Some(f) => {
                        let Some(payload) = self.encode(encoding, &self.types.feedback, &f) else {
                            continue;
                        };
                        if tx.send(event(Event::Feedback(payload))).await.is_err() {
                            let _ = handle.cancel(timeout).await;
                            return;
                        }
                    }
                    None => break,
                },
                changed = status_changes.changed() => {
                    if changed.is_err() {
                        break;
                    }
                    let now = *status_changes.borrow_and_update();
                    if now != told && !now.is_terminal() {
                        told = now;
                        let _ = tx.send(event(Event::Status(pb::GoalStatus::from(now) as i32))).await;
                    }
                }
                _ = tx.closed() => {
                    let _ = handle.cancel(timeout).await;
                    return;
                }
            }
        }
        let end = match handle.result(timeout).await {
            Ok(r) => self.result(encoding, r.status, &r.response),
            Err(e) => Err(status::action(&e)),
        };
        let _ = tx
            .send(end.map(|r| pb::GoalEvent {
                event: Some(Event::Result(r)),
            }))
            .await;
    }

    /// A feedback message in the call's encoding (None: it does not decode; dropped).
    fn encode(&self, encoding: Encoding, ty: &MessageType, cdr: &[u8]) -> Option<Vec<u8>> {
        match encoding {
            Encoding::Cdr => Some(cdr.to_vec()),
            Encoding::Json => {
                let mut json = Vec::new();
                ty.cdr_to_json(cdr, &mut json).ok().map(|()| json)
            }
        }
    }

    /// The result out of an `X_GetResult_Response` (status and result): its JSON, or (for
    /// CDR) that JSON written again as an `X_Result` message of its own (the result cannot be
    /// cut out of the response: the status byte before it shifts its alignment).
    fn result(
        &self,
        encoding: Encoding,
        s: GoalStatus,
        response: &[u8],
    ) -> Result<pb::GoalResult, Status> {
        let action = &self.client.action().action;
        let bad = |e: String| {
            Status::internal(format!(
                "{action}: the server's result does not decode: {e}"
            ))
        };
        let mut json = Vec::new();
        self.types
            .result_response
            .cdr_to_json(response, &mut json)
            .map_err(|e| bad(e.to_string()))?;
        let v: serde_json::Value = serde_json::from_slice(&json).map_err(|e| bad(e.to_string()))?;
        let result = serde_json::to_vec(&v["result"]).map_err(|e| bad(e.to_string()))?;
        let result = match encoding {
            Encoding::Json => result,
            Encoding::Cdr => {
                let mut cdr = Vec::new();
                self.types
                    .result
                    .json_to_cdr(&result, &Default::default(), &mut cdr)
                    .map_err(|e| bad(e.to_string()))?;
                cdr
            }
        };
        Ok(pb::GoalResult {
            status: pb::GoalStatus::from(s) as i32,
            result,
        })
    }

    /// Asks the server to cancel goal `id`.
    pub async fn cancel(
        &self,
        id: GoalId,
        timeout: Duration,
    ) -> Result<pb::CancelGoalResponse, Status> {
        let goal = GoalInfo {
            goal_id: id,
            stamp: Time::default(),
        };
        let r = self
            .client
            .cancel(goal, timeout)
            .await
            .map_err(|e| status::action(&e))?;
        let code = match r.code {
            CancelCode::None => pb::CancelCode::None,
            CancelCode::Rejected => pb::CancelCode::Rejected,
            CancelCode::UnknownGoal => pb::CancelCode::UnknownGoal,
            CancelCode::GoalTerminated => pb::CancelCode::GoalTerminated,
        };
        Ok(pb::CancelGoalResponse {
            code: code as i32,
            goals_canceling: r
                .goals_canceling
                .iter()
                .map(|g| g.goal_id.to_string())
                .collect(),
        })
    }
}

impl From<GoalStatus> for pb::GoalStatus {
    fn from(s: GoalStatus) -> Self {
        match s {
            GoalStatus::Unknown => pb::GoalStatus::Unknown,
            GoalStatus::Accepted => pb::GoalStatus::Accepted,
            GoalStatus::Executing => pb::GoalStatus::Executing,
            GoalStatus::Canceling => pb::GoalStatus::Canceling,
            GoalStatus::Succeeded => pb::GoalStatus::Succeeded,
            GoalStatus::Canceled => pb::GoalStatus::Canceled,
            GoalStatus::Aborted => pb::GoalStatus::Aborted,
        }
    }
}
