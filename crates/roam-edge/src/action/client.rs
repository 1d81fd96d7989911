//! [`ActionClient`]: sends goals, follows their feedback and status, gets their results,
//! cancels them.
//!
//! One task reads the feedback topic and one the status topic; each hands what concerns a goal
//! this client tracks to the goal's [`GoalHandle`] and drops the rest (other clients' goals).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use roam_msg::Endian;
use tokio::sync::{broadcast, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::warn;

use super::wire::{self, CancelResponse, GoalId, GoalInfo, GoalStatus, Time};
use super::{ActionError, ActionRef};
use crate::edge::{Edge, EdgeError};
use crate::service::{ServiceClient, ServiceClientOptions};
use crate::stats::TopicStats;
use crate::subscriber::{Event, Subscriber, SubscriberOptions};

/// Goals one client tracks at once (live [`GoalHandle`]s).
pub const MAX_GOALS_TRACKED: usize = 4096;
/// Feedback messages queued per goal; a goal's handle that reads slower loses the oldest.
const FEEDBACK_QUEUE: usize = 64;
/// How long a goal's feedback stays open after its status turned terminal. Feedback and
/// status travel on different topics, and so on different streams of a link: the last
/// feedback can arrive after the final status.
pub const FEEDBACK_LINGER: Duration = Duration::from_millis(500);

/// A client of one action. Goals keep what they need of it: it may be dropped before them.
pub struct ActionClient {
    inner: Arc<Inner>,
}

struct Inner {
    action: ActionRef,
    send_goal: ServiceClient,
    cancel_goal: ServiceClient,
    get_result: ServiceClient,
    goals: Arc<Mutex<HashMap<GoalId, Tracked>>>,
    tasks: Vec<JoinHandle<()>>,
}

/// What the readers hand a tracked goal.
struct Tracked {
    /// Dropped when the edge is gone: the goal's feedback ends.
    feedback: Option<broadcast::Sender<Bytes>>,
    status: watch::Sender<GoalStatus>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// A goal the server accepted.
pub struct GoalHandle {
    info: GoalInfo,
    inner: Arc<Inner>,
    feedback: broadcast::Receiver<Bytes>,
    status: watch::Receiver<GoalStatus>,
    /// When the feedback ends: [`FEEDBACK_LINGER`] after the status was first seen terminal.
    feedback_ends: Option<Instant>,
}

/// A goal's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionResult {
    pub status: GoalStatus,
    /// A CDR message of `X_GetResult_Response` (status and result).
    pub response: Vec<u8>,
}

fn lock(
    goals: &Mutex<HashMap<GoalId, Tracked>>,
) -> std::sync::MutexGuard<'_, HashMap<GoalId, Tracked>> {
    goals.lock().unwrap_or_else(|p| p.into_inner())
}

impl Edge {
    /// Starts a client of `action`.
    pub async fn action_client(
        &self,
        action: &ActionRef,
        options: ServiceClientOptions,
    ) -> Result<ActionClient, EdgeError> {
        let goals: Arc<Mutex<HashMap<GoalId, Tracked>>> = Arc::default();
        let subscribe = |ty: String| SubscriberOptions {
            dds_type: Some(ty),
            ..SubscriberOptions::default()
        };
        let feedback = self
            .subscriber(&action.feedback_topic(), subscribe(action.feedback_type()))
            .await;
        let status = self
            .subscriber(&action.status_topic(), subscribe(super::STATUS_TYPE.into()))
            .await;
        let send_goal = self
            .service_client(&action.send_goal(), options.clone())
            .await?;
        let cancel_goal = self
            .service_client(&action.cancel_goal(), options.clone())
            .await?;
        let get_result = self.service_client(&action.get_result(), options).await?;
        let tasks = vec![
            tokio::spawn(read_feedback(feedback, goals.clone())),
            tokio::spawn(read_status(status, goals.clone())),
        ];
        Ok(ActionClient {
            inner: Arc::new(Inner {
                action: action.clone(),
                send_goal,
                cancel_goal,
                get_result,
                goals,
                tasks,
            }),
        })
    }
}

impl ActionClient {
    /// Sends a goal (a CDR message of `X_Goal`, encapsulation header included); waits up to
    /// `timeout` for the server to accept it ([`ActionError::Rejected`] if it does not).
    pub async fn send_goal(
        &self,
        goal: &[u8],
        timeout: Duration,
    ) -> Result<GoalHandle, ActionError> {
        let inner = &self.inner;
        let id = GoalId::random();
        let request = wire::prefix_goal_id(id, goal)?;
        // Tracked before it is sent: its first feedback may overtake the acceptance.
        let (feedback, status) = {
            let mut goals = lock(&inner.goals);
            if goals.len() >= MAX_GOALS_TRACKED {
                return Err(ActionError::TooManyGoals {
                    action: inner.action.action.clone(),
                    limit: MAX_GOALS_TRACKED,
                });
            }
            let (ftx, frx) = broadcast::channel(FEEDBACK_QUEUE);
            let (stx, srx) = watch::channel(GoalStatus::Accepted);
            goals.insert(
                id,
                Tracked {
                    feedback: Some(ftx),
                    status: stx,
                },
            );
            (frx, srx)
        };
        let untrack = || {
            lock(&inner.goals).remove(&id);
        };
        let reply = match inner.send_goal.call(&request, timeout).await {
            Ok(r) => r,
            Err(e) => {
                untrack();
                return Err(e.into());
            }
        };
        match wire::decode_send_goal_response(&reply) {
            Ok((true, stamp)) => Ok(GoalHandle {
                info: GoalInfo { goal_id: id, stamp },
                inner: inner.clone(),
                feedback,
                status,
                feedback_ends: None,
            }),
            Ok((false, _)) => {
                untrack();
                Err(ActionError::Rejected {
                    action: inner.action.action.clone(),
                })
            }
            Err(e) => {
                untrack();
                Err(e.into())
            }
        }
    }

    /// Asks the server to cancel goals: `goal` names one, every goal accepted up to its stamp,
    /// both, or (all zero) every goal.
    pub async fn cancel(
        &self,
        goal: GoalInfo,
        timeout: Duration,
    ) -> Result<CancelResponse, ActionError> {
        self.inner.cancel(goal, timeout).await
    }

    /// Waits up to `timeout` for a server of all three services.
    pub async fn wait_for_server(&self, timeout: Duration) -> bool {
        let i = &self.inner;
        let (a, b, c) = tokio::join!(
            i.send_goal.wait_for_server(timeout),
            i.cancel_goal.wait_for_server(timeout),
            i.get_result.wait_for_server(timeout),
        );
        a && b && c
    }

    pub fn action(&self) -> &ActionRef {
        &self.inner.action
    }
}

impl Inner {
    async fn cancel(
        &self,
        goal: GoalInfo,
        timeout: Duration,
    ) -> Result<CancelResponse, ActionError> {
        let request = wire::encode_cancel_request(&goal, Endian::Little);
        let reply = self.cancel_goal.call(&request, timeout).await?;
        Ok(wire::decode_cancel_response(&reply)?)
    }
}

impl GoalHandle {
    pub fn id(&self) -> GoalId {
        self.info.goal_id
    }

    /// When the server accepted the goal.
    pub fn stamp(&self) -> Time {
        self.info.stamp
    }

    /// The goal's latest status, as the server's status topic (or its result) said.
    pub fn status(&self) -> GoalStatus {
        *self.status.borrow()
    }

    /// The goal's status as it changes.
    pub fn status_changes(&self) -> watch::Receiver<GoalStatus> {
        self.status.clone()
    }

    /// The next feedback (a CDR message of `X_Feedback`); `None` once the goal's status has
    /// been terminal for [`FEEDBACK_LINGER`] with no more feedback (or the edge is gone). A
    /// reader that falls behind loses the oldest.
    pub async fn feedback(&mut self) -> Option<Bytes> {
        use broadcast::error::RecvError;
        loop {
            if self.status.borrow_and_update().is_terminal() {
                let ended = *self
                    .feedback_ends
                    .get_or_insert_with(|| Instant::now() + FEEDBACK_LINGER);
                return match tokio::time::timeout_at(ended, self.feedback.recv()).await {
                    Ok(Ok(f)) => Some(f),
                    Ok(Err(RecvError::Lagged(_))) => continue,
                    Ok(Err(RecvError::Closed)) | Err(_) => None,
                };
            }
            tokio::select! {
                r = self.feedback.recv() => match r {
                    Ok(f) => return Some(f),
                    Err(RecvError::Lagged(_)) => {}
                    Err(RecvError::Closed) => return None,
                },
                r = self.status.changed() => if r.is_err() { return None },
            }
        }
    }

    /// Asks for the goal's result and waits up to `timeout` for it (the server answers when
    /// the goal finishes: give a long-running goal a long timeout).
    pub async fn result(&self, timeout: Duration) -> Result<ActionResult, ActionError> {
        let request = wire::encode_get_result_request(self.info.goal_id, Endian::Little);
        let response = self.inner.get_result.call(&request, timeout).await?;
        let status = wire::result_status(&response)?;
        if let Some(t) = lock(&self.inner.goals).get(&self.info.goal_id) {
            t.status.send_replace(status);
        }
        Ok(ActionResult { status, response })
    }

    /// Asks the server to cancel this goal.
    pub async fn cancel(&self, timeout: Duration) -> Result<CancelResponse, ActionError> {
        let goal = GoalInfo {
            goal_id: self.info.goal_id,
            stamp: Time::default(),
        };
        self.inner.cancel(goal, timeout).await
    }
}

impl Drop for GoalHandle {
    fn drop(&mut self) {
        lock(&self.inner.goals).remove(&self.info.goal_id);
    }
}

async fn read_feedback(mut sub: Subscriber, goals: Arc<Mutex<HashMap<GoalId, Tracked>>>) {
    let mut msg = Vec::new();
    let mut feedback = Vec::new();
    let mut warned = false;
    while let Some(ev) = sub.recv(&mut msg).await {
        let Event::Message(_) = ev else { continue };
        match wire::split_goal_id(&msg, &mut feedback) {
            Ok(id) => {
                if let Some(tx) = lock(&goals).get(&id).and_then(|t| t.feedback.as_ref()) {
                    let _ = tx.send(Bytes::copy_from_slice(&feedback));
                }
            }
            Err(e) => {
                TopicStats::count(&sub.stats().failed);
                if !std::mem::replace(&mut warned, true) {
                    warn!(topic = %sub.topic().topic, "dropped malformed feedback: {e} (more are counted, not logged)");
                }
            }
        }
    }
    // The edge is gone: every goal's feedback ends.
    for t in lock(&goals).values_mut() {
        t.feedback = None;
    }
}

async fn read_status(mut sub: Subscriber, goals: Arc<Mutex<HashMap<GoalId, Tracked>>>) {
    let mut msg = Vec::new();
    let mut warned = false;
    while let Some(ev) = sub.recv(&mut msg).await {
        let Event::Message(_) = ev else { continue };
        match wire::decode_status_array(&msg) {
            Ok(list) => {
                let goals = lock(&goals);
                for (info, status) in list {
                    let Some(t) = goals.get(&info.goal_id) else {
                        continue;
                    };
                    // A status message may come late (another path, another server): a goal
                    // never leaves a terminal status.
                    t.status.send_if_modified(|s| {
                        let changed = !s.is_terminal() && *s != status;
                        if changed {
                            *s = status;
                        }
                        changed
                    });
                }
            }
            Err(e) => {
                TopicStats::count(&sub.stats().failed);
                if !std::mem::replace(&mut warned, true) {
                    warn!(topic = %sub.topic().topic, "dropped a malformed goal status: {e} (more are counted, not logged)");
                }
            }
        }
    }
}
