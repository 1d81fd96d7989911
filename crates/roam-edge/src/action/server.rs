//! [`ActionServer`]: takes goals, answers cancel and result requests, publishes feedback and
//! status.
//!
//! One task per service reads its requests (so none is read inside another's `select!`):
//! goals and cancellations become [`ActionEvent`]s for the owner; result requests are
//! answered from the goal table, at once for a finished goal, when it finishes otherwise.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use roam_msg::Endian;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tracing::{debug, warn};

use super::goals::{Goals, ResultAnswer};
use super::wire::{self, CancelCode, CancelResponse, GoalId, GoalInfo, GoalStatus, Time};
use super::{ActionError, ActionRef};
use crate::edge::{Edge, EdgeError};
use crate::publisher::{Publisher, StreamSpec};
use crate::service::{Replier, RequestId, ServiceServer};

/// Events queued for the owner before the request tasks wait (push back on requests).
const EVENTS: usize = 64;

/// What an action server's owner is asked to do.
#[derive(Debug)]
pub enum ActionEvent {
    /// A new goal: accept or reject it.
    Goal(GoalRequest),
    /// A cancel request moved this goal to canceling: stop it, and finish it as canceled.
    Cancel(GoalId),
}

/// A server of one action. Dropping it releases its topics; its goals end with it.
pub struct ActionServer {
    events: mpsc::Receiver<ActionEvent>,
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

struct Shared {
    action: ActionRef,
    goals: Mutex<Goals>,
    goal_replies: Replier,
    result_replies: Replier,
    feedback: Publisher,
    status: Publisher,
    /// Status messages go out one at a time, each the table as it was then: never an older
    /// one after a newer.
    status_order: tokio::sync::Mutex<()>,
}

impl Shared {
    fn goals(&self) -> std::sync::MutexGuard<'_, Goals> {
        self.goals.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn publish_status(&self) -> Result<(), EdgeError> {
        let _order = self.status_order.lock().await;
        let list = self.goals().status_list(Instant::now());
        self.status
            .publish(&wire::encode_status_array(&list, Endian::Little))
            .await
    }

    /// Finishes a goal: stores its result, answers those waiting for it, publishes the status.
    async fn finish(
        &self,
        id: GoalId,
        status: GoalStatus,
        result: Option<Vec<u8>>,
    ) -> Result<(), ActionError> {
        let waiting = self
            .goals()
            .finish(&id, status, result.clone(), Instant::now())
            .ok_or(ActionError::Finished(id))?;
        if let Some(r) = &result {
            for req in waiting {
                self.result_replies.reply(req, r).await?;
            }
        }
        self.publish_status().await?;
        Ok(())
    }
}

/// A goal offered to the server. Answer it with [`Self::accept`] or [`Self::reject`]; one
/// dropped unanswered is rejected.
pub struct GoalRequest {
    pub id: GoalId,
    /// The goal: a CDR message of `X_Goal`, encapsulation header included.
    pub goal: Vec<u8>,
    /// The realm member that signed the request, in signed mode.
    pub signer: Option<String>,
    request: RequestId,
    endian: Endian,
    shared: Arc<Shared>,
    answered: bool,
}

impl std::fmt::Debug for GoalRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoalRequest")
            .field("id", &self.id)
            .field("goal_len", &self.goal.len())
            .finish()
    }
}

/// An accepted goal, as its executor holds it. Dropping it unfinished aborts the goal (with
/// no result to give: result requests for it stay unanswered).
pub struct ServerGoal {
    id: GoalId,
    shared: Arc<Shared>,
    finished: bool,
}

impl Edge {
    /// Starts serving `action`.
    pub async fn action_server(&self, action: &ActionRef) -> Result<ActionServer, EdgeError> {
        let send_goal = self.service_server(&action.send_goal()).await?;
        let cancel_goal = self.service_server(&action.cancel_goal()).await?;
        let get_result = self.service_server(&action.get_result()).await?;
        let feedback = self
            .publisher(
                &action.feedback_topic(),
                StreamSpec::new(action.feedback_type()),
            )
            .await?;
        let status = self
            .publisher(&action.status_topic(), ActionRef::status_spec())
            .await?;
        let shared = Arc::new(Shared {
            action: action.clone(),
            goals: Mutex::new(Goals::default()),
            goal_replies: send_goal.replier(),
            result_replies: get_result.replier(),
            feedback,
            status,
            status_order: tokio::sync::Mutex::new(()),
        });
        let (tx, events) = mpsc::channel(EVENTS);
        let tasks = vec![
            tokio::spawn(take_goals(send_goal, shared.clone(), tx.clone())),
            tokio::spawn(take_cancels(cancel_goal, shared.clone(), tx)),
            tokio::spawn(take_result_requests(get_result, shared.clone())),
        ];
        Ok(ActionServer {
            events,
            shared,
            tasks,
        })
    }
}

impl ActionServer {
    /// The next goal or cancellation; `None` once the edge is gone.
    pub async fn recv(&mut self) -> Option<ActionEvent> {
        self.events.recv().await
    }

    pub fn action(&self) -> &ActionRef {
        &self.shared.action
    }

    /// The status of a goal this server knows.
    pub fn status(&self, id: &GoalId) -> Option<GoalStatus> {
        self.shared.goals().status(id)
    }
}

impl Drop for ActionServer {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl GoalRequest {
    /// Accepts the goal: the client is told, and the status topic lists it as accepted.
    pub async fn accept(mut self) -> Result<ServerGoal, ActionError> {
        self.answered = true;
        let accepted = self
            .shared
            .goals()
            .accept(self.id, Time::now(), Instant::now());
        let info = match accepted {
            Ok(info) => info,
            Err(why) => {
                debug!(action = %self.shared.action.action, goal = %self.id, ?why, "goal refused");
                answer(&self.shared, self.request, self.endian, false).await?;
                return Err(ActionError::Rejected {
                    action: self.shared.action.action.clone(),
                });
            }
        };
        let reply = wire::encode_send_goal_response(true, info.stamp, self.endian);
        self.shared.goal_replies.reply(self.request, &reply).await?;
        self.shared.publish_status().await?;
        Ok(ServerGoal {
            id: self.id,
            shared: self.shared.clone(),
            finished: false,
        })
    }

    /// Rejects the goal.
    pub async fn reject(mut self) -> Result<(), ActionError> {
        self.answered = true;
        answer(&self.shared, self.request, self.endian, false).await
    }
}

async fn answer(
    shared: &Shared,
    request: RequestId,
    endian: Endian,
    accepted: bool,
) -> Result<(), ActionError> {
    let reply = wire::encode_send_goal_response(accepted, Time::default(), endian);
    shared.goal_replies.reply(request, &reply).await?;
    Ok(())
}

impl Drop for GoalRequest {
    fn drop(&mut self) {
        if self.answered {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let (shared, request, endian) = (self.shared.clone(), self.request, self.endian);
            rt.spawn(async move {
                let _ = answer(&shared, request, endian, false).await;
            });
        }
    }
}

impl ServerGoal {
    pub fn id(&self) -> GoalId {
        self.id
    }

    pub fn status(&self) -> GoalStatus {
        self.shared
            .goals()
            .status(&self.id)
            .unwrap_or(GoalStatus::Unknown)
    }

    /// Whether a cancel request moved the goal to canceling.
    pub fn is_canceling(&self) -> bool {
        self.status() == GoalStatus::Canceling
    }

    /// The goal starts executing (status accepted -> executing).
    pub async fn execute(&self) -> Result<(), ActionError> {
        if self.shared.goals().execute(&self.id) {
            self.shared.publish_status().await?;
        }
        Ok(())
    }

    /// Publishes feedback: a CDR message of `X_Feedback`, encapsulation header included.
    pub async fn publish_feedback(&self, feedback: &[u8]) -> Result<(), ActionError> {
        let msg = wire::prefix_goal_id(self.id, feedback)?;
        self.shared.feedback.publish(&msg).await?;
        Ok(())
    }

    /// Finishes the goal as `status` (succeeded, canceled or aborted) with `result`: a CDR
    /// message of `X_GetResult_Response`, whose status field is set to `status`.
    pub async fn finish(mut self, status: GoalStatus, result: &[u8]) -> Result<(), ActionError> {
        if !status.is_terminal() {
            return Err(ActionError::NotTerminal(status));
        }
        let mut result = result.to_vec();
        wire::set_result_status(&mut result, status)?;
        self.finished = true;
        self.shared.finish(self.id, status, Some(result)).await
    }
}

impl Drop for ServerGoal {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let (shared, id) = (self.shared.clone(), self.id);
            rt.spawn(async move {
                let _ = shared.finish(id, GoalStatus::Aborted, None).await;
            });
        }
    }
}

async fn take_goals(
    mut server: ServiceServer,
    shared: Arc<Shared>,
    events: mpsc::Sender<ActionEvent>,
) {
    let mut body = Vec::new();
    while let Some(req) = server.recv_request(&mut body).await {
        let endian = Endian::of(&body).unwrap_or_default();
        let mut goal = Vec::new();
        let id = match wire::split_goal_id(&body, &mut goal) {
            Ok(id) => id,
            Err(e) => {
                warn!(action = %shared.action.action, "rejected a malformed goal request: {e}");
                let _ = answer(&shared, req.id, endian, false).await;
                continue;
            }
        };
        let ev = ActionEvent::Goal(GoalRequest {
            id,
            goal,
            signer: req.signer,
            request: req.id,
            endian,
            shared: shared.clone(),
            answered: false,
        });
        if events.send(ev).await.is_err() {
            return;
        }
    }
}

async fn take_cancels(
    mut server: ServiceServer,
    shared: Arc<Shared>,
    events: mpsc::Sender<ActionEvent>,
) {
    let mut body = Vec::new();
    while let Some(req) = server.recv_request(&mut body).await {
        let endian = Endian::of(&body).unwrap_or_default();
        let resp = match wire::decode_cancel_request(&body) {
            Ok(info) => shared.goals().cancel(&info),
            Err(e) => {
                warn!(action = %shared.action.action, "rejected a malformed cancel request: {e}");
                CancelResponse {
                    code: CancelCode::Rejected,
                    goals_canceling: Vec::new(),
                }
            }
        };
        let reply = wire::encode_cancel_response(&resp, endian);
        if let Err(e) = server.reply(req.id, &reply).await {
            warn!(action = %shared.action.action, "cannot answer a cancel request: {e}");
        }
        if resp.goals_canceling.is_empty() {
            continue;
        }
        if let Err(e) = shared.publish_status().await {
            warn!(action = %shared.action.action, "cannot publish the goal status: {e}");
        }
        for GoalInfo { goal_id, .. } in resp.goals_canceling {
            if events.send(ActionEvent::Cancel(goal_id)).await.is_err() {
                return;
            }
        }
    }
}

async fn take_result_requests(mut server: ServiceServer, shared: Arc<Shared>) {
    let mut body = Vec::new();
    while let Some(req) = server.recv_request(&mut body).await {
        let id = match wire::decode_get_result_request(&body) {
            Ok(id) => id,
            Err(e) => {
                warn!(action = %shared.action.action, "dropped a malformed result request: {e}");
                continue;
            }
        };
        let answer = shared.goals().result_request(&id, req.id, Instant::now());
        match answer {
            ResultAnswer::Now(result) => {
                if let Err(e) = server.reply(req.id, &result).await {
                    warn!(action = %shared.action.action, "cannot send a result: {e}");
                }
            }
            ResultAnswer::Later => {}
            // rcl_action answers with an empty result of status unknown; an empty result
            // needs the result type, which this layer does not have: the caller times out.
            ResultAnswer::Unknown => {
                debug!(action = %shared.action.action, goal = %id, "result asked for an unknown goal")
            }
        }
    }
}
