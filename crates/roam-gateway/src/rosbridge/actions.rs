//! rosbridge actions over the edge layer's action handles.
//!
//! - A client's `send_action_goal` is a goal of an edge [`ActionClient`]: `action_feedback` ops
//!   while it runs (when the client asked for feedback), one `action_result` with the result
//!   and the final status; `cancel_action_goal` with the goal's id cancels it.
//! - A client's `advertise_action` is an edge [`ActionServer`]: each goal from the realm is
//!   accepted and reaches the client as `send_action_goal` with an id; its `action_feedback` and
//!   `action_result` with that id are the goal's feedback and end; a cancel request from the
//!   realm reaches it as `cancel_action_goal`.
//!
//! Goals, Feedback and Result are converted with the action's definitions on the gateway's
//! machine (`msg_paths`, AMENT_PREFIX_PATH). Goals waiting for a serving client are bounded.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use roam_edge::action::{ActionEvent, GoalId, GoalStatus, ServerGoal};
use roam_edge::ros_names::{full_name, type_to_dds};
use roam_edge::{ActionClient, ActionRef, ActionServer};
use roam_msg::MessageType;
use roam_proto::directory::{ItemKind, Role};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use super::client::{send_status, ConnShared};
use super::encode::{self, Frame, Level};
use crate::listing::Listed;
use crate::session::{Input, Outgoing, SessionError};
use crate::Gateway;

/// Goals of served actions waiting for their client's result, at most.
pub const MAX_SERVED_GOALS: usize = 1024;

/// An action's message types.
struct Types {
    goal: MessageType,
    feedback: MessageType,
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
        result_response: get("GetResult_Response").await?,
    })
}

struct Target {
    client: ActionClient,
    types: Types,
    _listed: Listed,
}

struct Served {
    task: JoinHandle<()>,
    _listed: Listed,
}

struct ServedGoal {
    goal: ServerGoal,
    feedback: MessageType,
    result_response: MessageType,
}

/// One client's actions: goals it sent, actions it serves.
pub struct Actions {
    gw: Arc<Gateway>,
    out: Arc<Outgoing<Frame>>,
    shared: Arc<ConnShared>,
    targets: Arc<tokio::sync::Mutex<HashMap<String, Arc<Target>>>>,
    /// The client's goals by their op id: what cancels them.
    cancels: Arc<Mutex<HashMap<String, Arc<Notify>>>>,
    goal_tasks: Vec<JoinHandle<()>>,
    served: HashMap<String, Served>,
    served_goals: Arc<Mutex<HashMap<String, ServedGoal>>>,
}

impl Drop for Actions {
    fn drop(&mut self) {
        for t in &self.goal_tasks {
            t.abort();
        }
        for s in self.served.values() {
            s.task.abort();
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Actions {
    pub fn new(gw: Arc<Gateway>, out: Arc<Outgoing<Frame>>, shared: Arc<ConnShared>) -> Self {
        Self {
            gw,
            out,
            shared,
            targets: Default::default(),
            cancels: Default::default(),
            goal_tasks: Vec::new(),
            served: HashMap::new(),
            served_goals: Default::default(),
        }
    }

    /// Sends a goal; its feedback and result come back as ops with `id`.
    pub fn send_goal(
        &mut self,
        id: String,
        action: &str,
        action_type: Option<String>,
        args: Option<Vec<u8>>,
        cbor: bool,
        want_feedback: bool,
    ) -> Result<(), SessionError> {
        let name = full_name(action)?.name;
        let gw = self.gw.clone();
        let out = self.out.clone();
        let targets = self.targets.clone();
        let cancel = Arc::new(Notify::new());
        lock(&self.cancels).insert(id.clone(), cancel.clone());
        let cancels = self.cancels.clone();
        self.goal_tasks.retain(|t| !t.is_finished());
        self.goal_tasks.push(tokio::spawn(async move {
            let outcome = run_goal(
                &gw,
                &targets,
                &name,
                action_type.as_deref(),
                args.as_deref()
                    .map(|a| if cbor { Input::Cbor(a) } else { Input::Json(a) }),
                want_feedback,
                &cancel,
                |values| {
                    let f = encode::action_feedback(&name, &id, values);
                    out.control(f.len(), Frame::Text(f));
                },
            )
            .await;
            let frame = match &outcome {
                Ok((values, status)) => encode::action_result(&name, &id, Ok((values, *status))),
                Err(e) => encode::action_result(&name, &id, Err(&e.to_string())),
            };
            out.control(frame.len(), Frame::Text(frame));
            lock(&cancels).remove(&id);
        }));
        Ok(())
    }

    /// Cancels the goal sent with `id`.
    pub fn cancel(&self, id: Option<&str>) -> Result<(), SessionError> {
        let found = id.and_then(|id| lock(&self.cancels).get(id).cloned());
        match found {
            Some(n) => {
                n.notify_one();
                Ok(())
            }
            None => Err(SessionError::Response(format!(
                "no goal {id:?} of this client is running"
            ))),
        }
    }

    /// Serves `action` (a full name) of type `action_type` in the realm.
    pub async fn advertise(&mut self, action: &str, action_type: &str) -> Result<(), SessionError> {
        if self.served.contains_key(action) {
            return Ok(());
        }
        if self.served.len() >= self.gw.limits.max_topics_per_client {
            return Err(SessionError::TooMany {
                what: "advertised actions",
                limit: self.gw.limits.max_topics_per_client,
            });
        }
        let aref = ActionRef::new(self.gw.realm.clone(), action, action_type)?;
        let types = types(&self.gw, &aref).await?;
        let server =
            self.gw
                .edge
                .action_server(&aref)
                .await
                .map_err(|source| SessionError::Edge {
                    topic: action.to_string(),
                    source,
                })?;
        let listed = self.gw.listing.add(
            ItemKind::Action,
            Role::Offers,
            &aref.action,
            &aref.action_type,
        );
        let task = tokio::spawn(serve(
            server,
            types,
            self.out.clone(),
            self.shared.clone(),
            self.served_goals.clone(),
        ));
        self.served.insert(
            aref.action.clone(),
            Served {
                task,
                _listed: listed,
            },
        );
        Ok(())
    }

    pub fn unadvertise(&mut self, action: &str) {
        if let Some(s) = self.served.remove(action) {
            s.task.abort();
        }
    }

    /// The serving client's feedback for goal `id`.
    pub async fn feedback(&self, id: Option<&str>, values: Input<'_>) -> Result<(), SessionError> {
        let (id, cdr) = {
            let goals = lock(&self.served_goals);
            let (id, g) = served(&goals, id)?;
            let mut cdr = Vec::new();
            values
                .to_cdr(&g.feedback, &mut cdr)
                .map_err(|source| SessionError::Encode {
                    topic: id.clone(),
                    type_name: g.feedback.name().full(),
                    source,
                })?;
            (id, cdr)
        };
        // Publish outside the lock: take the goal out and put it back.
        let Some(entry) = lock(&self.served_goals).remove(&id) else {
            return Ok(());
        };
        let r = entry.goal.publish_feedback(&cdr).await;
        lock(&self.served_goals).insert(id, entry);
        r.map_err(|e| SessionError::Response(e.to_string()))
    }

    /// The serving client's result for goal `id`: the goal ends with `status`.
    pub async fn result(
        &self,
        id: Option<&str>,
        values: Option<Input<'_>>,
        status: Option<i8>,
        ok: bool,
    ) -> Result<(), SessionError> {
        let key = {
            let goals = lock(&self.served_goals);
            served(&goals, id)?.0
        };
        let Some(entry) = lock(&self.served_goals).remove(&key) else {
            return Ok(());
        };
        let status = match (ok, status.and_then(GoalStatus::from_code)) {
            (false, _) => GoalStatus::Aborted,
            (true, Some(s)) if s.is_terminal() => s,
            (true, _) => GoalStatus::Succeeded,
        };
        // The response is `{status, result}`: the client's values are the result.
        let result = match values {
            Some(Input::Json(j)) => String::from_utf8_lossy(j).into_owned(),
            Some(Input::Cbor(_) | Input::Cdr(_)) | None => "{}".into(),
        };
        let response = format!(r#"{{"status":{},"result":{result}}}"#, status.code());
        let mut cdr = Vec::new();
        Input::Json(response.as_bytes())
            .to_cdr(&entry.result_response, &mut cdr)
            .map_err(|source| SessionError::Encode {
                topic: key.clone(),
                type_name: entry.result_response.name().full(),
                source,
            })?;
        entry
            .goal
            .finish(status, &cdr)
            .await
            .map_err(|e| SessionError::Response(e.to_string()))
    }
}

fn served<'a>(
    goals: &'a HashMap<String, ServedGoal>,
    id: Option<&str>,
) -> Result<(String, &'a ServedGoal), SessionError> {
    let id = id.ok_or_else(|| SessionError::Response("an action op needs the goal's id".into()))?;
    goals
        .get(id)
        .map(|g| (id.to_string(), g))
        .ok_or_else(|| SessionError::Response(format!("no goal {id:?} waits for this client")))
}

/// Runs one goal to its end; the result's JSON and the final status.
#[allow(clippy::too_many_arguments)]
async fn run_goal(
    gw: &Arc<Gateway>,
    targets: &tokio::sync::Mutex<HashMap<String, Arc<Target>>>,
    name: &str,
    action_type: Option<&str>,
    args: Option<Input<'_>>,
    want_feedback: bool,
    cancel: &Notify,
    mut on_feedback: impl FnMut(&[u8]),
) -> Result<(Vec<u8>, i8), SessionError> {
    let target = target(gw, targets, name, action_type).await?;
    let mut goal = Vec::new();
    args.unwrap_or(Input::Json(b"{}"))
        .to_cdr(&target.types.goal, &mut goal)
        .map_err(|source| SessionError::Encode {
            topic: name.to_string(),
            type_name: target.types.goal.name().full(),
            source,
        })?;
    let timeout = gw.limits.call_timeout;
    let mut handle = target
        .client
        .send_goal(&goal, timeout)
        .await
        .map_err(|e| SessionError::Response(e.to_string()))?;
    let mut json = Vec::new();
    loop {
        tokio::select! {
            f = handle.feedback() => match f {
                Some(f) => {
                    json.clear();
                    if want_feedback && target.types.feedback.cdr_to_json(&f, &mut json).is_ok() {
                        on_feedback(&json);
                    }
                }
                None => break,
            },
            _ = cancel.notified() => {
                handle
                    .cancel(timeout)
                    .await
                    .map_err(|e| SessionError::Response(e.to_string()))?;
            }
        }
    }
    let result = handle
        .result(timeout)
        .await
        .map_err(|e| SessionError::Response(e.to_string()))?;
    json.clear();
    target
        .types
        .result_response
        .cdr_to_json(&result.response, &mut json)
        .map_err(|source| SessionError::BadReply {
            service: name.to_string(),
            source,
        })?;
    let v: serde_json::Value =
        serde_json::from_slice(&json).map_err(|e| SessionError::Response(e.to_string()))?;
    Ok((v["result"].to_string().into_bytes(), result.status.code()))
}

async fn target(
    gw: &Arc<Gateway>,
    targets: &tokio::sync::Mutex<HashMap<String, Arc<Target>>>,
    name: &str,
    action_type: Option<&str>,
) -> Result<Arc<Target>, SessionError> {
    let mut cache = targets.lock().await;
    if let Some(t) = cache.get(name) {
        return Ok(t.clone());
    }
    let ty = match action_type {
        Some(t) => t.to_string(),
        None => gw
            .realm_listing()
            .actions
            .into_iter()
            .find(|a| a.name == name)
            .and_then(|a| a.types.into_iter().next())
            .ok_or_else(|| SessionError::UnknownType(name.to_string()))?,
    };
    let aref = ActionRef::new(gw.realm.clone(), name, &ty)?;
    let types = types(gw, &aref).await?;
    let client = gw
        .edge
        .action_client(&aref, Default::default())
        .await
        .map_err(|source| SessionError::Edge {
            topic: name.to_string(),
            source,
        })?;
    let listed = gw.listing.add(
        ItemKind::Action,
        Role::Imports,
        &aref.action,
        &aref.action_type,
    );
    let t = Arc::new(Target {
        client,
        types,
        _listed: listed,
    });
    if cache.len() >= gw.limits.max_topics_per_client {
        if let Some(k) = cache.keys().next().cloned() {
            cache.remove(&k);
        }
    }
    cache.insert(name.to_string(), t.clone());
    Ok(t)
}

/// Passes the realm's goals and cancel requests to the serving client until aborted.
async fn serve(
    mut server: ActionServer,
    types: Types,
    out: Arc<Outgoing<Frame>>,
    shared: Arc<ConnShared>,
    goals: Arc<Mutex<HashMap<String, ServedGoal>>>,
) {
    let action = server.action().action.clone();
    let action_type = server.action().action_type.clone();
    let mut by_goal: HashMap<GoalId, String> = HashMap::new();
    let mut n = 0u64;
    while let Some(ev) = server.recv().await {
        match ev {
            ActionEvent::Goal(req) => {
                let mut json = Vec::new();
                if let Err(e) = types.goal.cdr_to_json(&req.goal, &mut json) {
                    send_status(
                        &out,
                        &shared,
                        Level::Warning,
                        &format!("{action}: a goal does not decode: {e}"),
                        None,
                    );
                    let _ = req.reject().await;
                    continue;
                }
                if lock(&goals).len() >= MAX_SERVED_GOALS {
                    let _ = req.reject().await;
                    continue;
                }
                let gid = req.id;
                let Ok(goal) = req.accept().await else {
                    continue;
                };
                let _ = goal.execute().await;
                n += 1;
                let id = format!("action_goal:{action}:{n}");
                by_goal.retain(|_, v| lock(&goals).contains_key(v));
                by_goal.insert(gid, id.clone());
                lock(&goals).insert(
                    id.clone(),
                    ServedGoal {
                        goal,
                        feedback: types.feedback.clone(),
                        result_response: types.result_response.clone(),
                    },
                );
                let f = encode::send_action_goal(&action, &action_type, &id, &json);
                out.control(f.len(), Frame::Text(f));
            }
            ActionEvent::Cancel(gid) => {
                if let Some(id) = by_goal.get(&gid) {
                    let f = encode::cancel_action_goal(&action, id);
                    out.control(f.len(), Frame::Text(f));
                }
            }
        }
    }
}
