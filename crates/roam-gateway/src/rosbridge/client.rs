//! One rosbridge client: its frames turned into ops, each op carried out on its [`Session`],
//! every failure said back as a `status` (level error, with the op's id).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use tokio::sync::Semaphore;

use super::actions::Actions;
use super::encode::{self, Frame, Level};
use super::fragment::{FragmentLimits, Reassembly};
use super::ops::{self, Body, Compression, Op, Refusal};
use super::rosapi;
use super::services::Served;
use crate::auth::Action;
use crate::session::{Input, Outgoing, Session, SessionError, SubId, SubscribeRequest};
use crate::{Gateway, Stats};

/// How a subscription's messages are encoded for this client.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub topic: String,
    pub compression: Compression,
    pub fragment_size: Option<usize>,
}

/// What the connection's reader and writer share besides the outbox.
#[derive(Default)]
pub struct ConnShared {
    deliveries: Mutex<HashMap<SubId, Delivery>>,
    /// The least level of statuses sent (set_level).
    level: AtomicU8,
}

impl ConnShared {
    pub fn new() -> Self {
        Self {
            deliveries: Mutex::default(),
            level: AtomicU8::new(Level::Warning as u8),
        }
    }

    pub fn delivery(&self, id: SubId) -> Option<Delivery> {
        self.deliveries().get(&id).cloned()
    }

    fn deliveries(&self) -> MutexGuard<'_, HashMap<SubId, Delivery>> {
        self.deliveries.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn wants(&self, level: Level) -> bool {
        level as u8 >= self.level.load(Ordering::Relaxed)
    }
}

/// Queues a status for the client when its level asks for it.
pub fn send_status(
    out: &Outgoing<Frame>,
    shared: &ConnShared,
    level: Level,
    msg: &str,
    id: Option<&str>,
) {
    if shared.wants(level) {
        let s = encode::status(level, msg, id);
        out.control(s.len(), Frame::Text(s));
    }
}

/// How long a partial fragmented message is kept.
const FRAGMENT_TIMEOUT: Duration = Duration::from_secs(30);
/// Fragmented messages pending at once per client.
const FRAGMENTED_MESSAGES: usize = 16;

pub struct Conn {
    session: Session<Frame>,
    out: Arc<Outgoing<Frame>>,
    shared: Arc<ConnShared>,
    fragments: Reassembly,
    served: Served,
    actions: Actions,
    calls: Arc<Semaphore>,
}

impl Conn {
    pub fn new(gw: Arc<Gateway>, out: Arc<Outgoing<Frame>>, shared: Arc<ConnShared>) -> Conn {
        let max = gw.limits.max_frame_bytes;
        let budget = gw.limits.outbox.max_bytes;
        let calls = Arc::new(Semaphore::new(gw.limits.max_calls_per_client));
        Conn {
            served: Served::new(gw.clone(), out.clone(), shared.clone()),
            actions: Actions::new(gw.clone(), out.clone(), shared.clone()),
            session: Session::new(gw, out.clone()),
            out,
            shared,
            // A message's fragments hold at most a frame's worth; all of them together count
            // against the client's own budget (what may wait to be sent to it).
            fragments: Reassembly::new(FragmentLimits {
                max_bytes: max,
                max_held: budget,
                max_messages: FRAGMENTED_MESSAGES,
                timeout: FRAGMENT_TIMEOUT,
            }),
            calls,
        }
    }

    pub fn session(&mut self) -> &mut Session<Frame> {
        &mut self.session
    }

    fn gw(&self) -> &Arc<Gateway> {
        self.session.gateway()
    }

    fn status(&self, level: Level, msg: &str, id: Option<&str>) {
        send_status(&self.out, &self.shared, level, msg, id);
    }

    /// Handles a text (JSON) or binary (CBOR) frame.
    pub async fn frame(&mut self, text: bool, bytes: &[u8]) {
        let parsed = if text {
            ops::parse_json(bytes)
        } else {
            ops::parse_cbor(bytes)
        };
        match parsed {
            Ok(Op::Fragment {
                id,
                data,
                num,
                total,
            }) => self.fragment(&id, data, num, total).await,
            Ok(op) => self.op(op).await,
            Err(r) => self.refusal(r),
        }
    }

    fn refusal(&self, r: Refusal) {
        Stats::count(&self.gw().stats.bad_frames);
        let what = match &r.op {
            Some(op) => format!("refused op {op}: {}", r.error),
            None => format!("refused a frame: {}", r.error),
        };
        tracing::debug!("{what}");
        self.status(Level::Error, &what, r.id.as_deref());
    }

    async fn fragment(&mut self, id: &str, data: String, num: usize, total: usize) {
        if !self.session.authenticated() {
            return self.unauthenticated(None);
        }
        match self.fragments.add(id, data, num, total, Instant::now()) {
            Ok(None) => {}
            Ok(Some(whole)) => match ops::parse_json(whole.as_bytes()) {
                Ok(Op::Fragment { .. }) => self.status(
                    Level::Error,
                    "a fragmented message holds another fragment: refused",
                    Some(id),
                ),
                Ok(op) => self.op(op).await,
                Err(r) => self.refusal(r),
            },
            Err(e) => {
                Stats::count(&self.gw().stats.bad_frames);
                self.status(Level::Error, &e.to_string(), Some(id));
            }
        }
    }

    fn unauthenticated(&self, id: Option<&str>) {
        Stats::count(&self.gw().stats.refused);
        self.status(
            Level::Error,
            &crate::auth::Refused::Unauthenticated.to_string(),
            id,
        );
    }

    /// Carries out one op; failures become an error status with the op's id.
    pub async fn op(&mut self, op: Op) {
        let id = op_id(&op).map(str::to_string);
        if !matches!(op, Op::Auth { .. }) && !self.session.authenticated() {
            return self.unauthenticated(id.as_deref());
        }
        if let Err(e) = self.run(op).await {
            tracing::debug!("op refused: {e}");
            self.status(Level::Error, &e.to_string(), id.as_deref());
        }
    }

    async fn run(&mut self, op: Op) -> Result<(), SessionError> {
        match op {
            Op::Auth { token } => {
                let who = self.session.authenticate(&token)?;
                tracing::info!("a client authenticated as {}", who.name);
                self.status(Level::Info, &format!("authenticated as {}", who.name), None);
            }
            Op::Advertise {
                topic, type_name, ..
            } => self.session.advertise(&topic, &type_name).await?,
            Op::Unadvertise { topic, .. } => {
                self.session.unadvertise(&topic);
            }
            Op::Publish { topic, msg, .. } => {
                self.session.publish(&topic, input(&msg)).await?;
            }
            Op::Subscribe(s) => {
                let sub = self
                    .session
                    .subscribe(SubscribeRequest {
                        topic: &s.topic,
                        ros_type: s.type_name.as_deref(),
                        client_id: s.id.clone(),
                        queue_length: s.queue_length,
                        throttle: Duration::from_millis(s.throttle_rate),
                    })
                    .await?;
                let topic = roam_edge::ros_names::full_name(&s.topic)?.name;
                self.shared.deliveries().insert(
                    sub,
                    Delivery {
                        topic,
                        compression: s.compression,
                        fragment_size: s.fragment_size,
                    },
                );
            }
            Op::Unsubscribe { id, topic } => {
                if let Some(sub) = self.session.unsubscribe(&topic, id.as_deref()) {
                    self.shared.deliveries().remove(&sub);
                }
            }
            Op::CallService {
                id,
                service,
                type_name,
                args,
                timeout,
            } => self.call(id, service, type_name, args, timeout)?,
            Op::AdvertiseService {
                service, type_name, ..
            } => {
                let name = roam_edge::ros_names::full_name(&service)?.name;
                self.session.check(Action::Publish, &name)?;
                self.served.advertise(&name, &type_name).await?;
            }
            Op::UnadvertiseService { service, .. } => {
                if let Ok(n) = roam_edge::ros_names::full_name(&service) {
                    self.served.unadvertise(&n.name);
                }
            }
            Op::ServiceResponse {
                id, values, result, ..
            } => {
                self.served
                    .respond(id.as_deref(), values.as_ref().map(input), result)
                    .await?
            }
            Op::SetLevel { level, .. } => {
                if let Some(l) = Level::parse(&level) {
                    self.shared.level.store(l as u8, Ordering::Relaxed);
                }
            }
            Op::Fragment { .. } => {}
            Op::SendActionGoal {
                id,
                action,
                action_type,
                args,
                feedback,
            } => {
                let name = roam_edge::ros_names::full_name(&action)?.name;
                self.session.check(Action::Call, &name)?;
                let (bytes, cbor) = match &args {
                    Some(Body::Json(j)) => (Some(j.get().as_bytes().to_vec()), false),
                    Some(Body::Cbor(c)) => (Some(c.clone()), true),
                    None => (None, false),
                };
                let id = id.unwrap_or_else(|| format!("send_action_goal:{name}"));
                self.actions
                    .send_goal(id, &name, action_type, bytes, cbor, feedback)?;
            }
            Op::CancelActionGoal { id, .. } => self.actions.cancel(id.as_deref())?,
            Op::AdvertiseAction {
                action, type_name, ..
            } => {
                let name = roam_edge::ros_names::full_name(&action)?.name;
                self.session.check(Action::Publish, &name)?;
                self.actions.advertise(&name, &type_name).await?;
            }
            Op::UnadvertiseAction { action, .. } => {
                if let Ok(n) = roam_edge::ros_names::full_name(&action) {
                    self.actions.unadvertise(&n.name);
                }
            }
            Op::ActionFeedback { id, values, .. } => {
                let values = values.as_ref().map(input).unwrap_or(Input::Json(b"{}"));
                self.actions.feedback(id.as_deref(), values).await?
            }
            Op::ActionResult {
                id,
                values,
                status,
                result,
                ..
            } => {
                self.actions
                    .result(id.as_deref(), values.as_ref().map(input), status, result)
                    .await?
            }
        }
        Ok(())
    }

    /// A service call: rosapi is answered here; anything else is called in the realm by a
    /// task of its own, its answer queued when it comes.
    fn call(
        &mut self,
        id: Option<String>,
        service: String,
        type_name: Option<String>,
        args: Option<Body>,
        timeout: Option<f64>,
    ) -> Result<(), SessionError> {
        if rosapi::is_rosapi(&service) {
            let text = match &args {
                Some(Body::Json(j)) => Ok(Some(j.get().to_string())),
                Some(Body::Cbor(c)) => rosapi::cbor_args(&service, c).map(Some),
                None => Ok(None),
            };
            let parsed = text.and_then(|t| rosapi::parse(&service, t.as_deref()));
            let reply = match parsed.map(|q| self.session.rosapi(&q)) {
                Ok(values) => encode::service_response(
                    &service,
                    id.as_deref(),
                    Ok(values.to_string().as_bytes()),
                ),
                Err(e) => encode::service_response(&service, id.as_deref(), Err(&e.to_string())),
            };
            self.out.control(reply.len(), Frame::Text(reply));
            return Ok(());
        }
        let name = roam_edge::ros_names::full_name(&service)?.name;
        self.session.check(Action::Call, &name)?;
        let permit = self
            .calls
            .clone()
            .try_acquire_owned()
            .map_err(|_| SessionError::TooMany {
                what: "service calls waiting for replies",
                limit: self.gw().limits.max_calls_per_client,
            })?;
        let targets = self.session.service_targets();
        let out = self.out.clone();
        let timeout = timeout
            .map(Duration::from_secs_f64)
            .unwrap_or(self.gw().limits.call_timeout);
        tokio::spawn(async move {
            let _permit = permit;
            let result = async {
                let target = targets.get(&name, type_name.as_deref()).await?;
                let listed;
                let args = match &args {
                    Some(Body::Json(j)) if j.get().trim_start().starts_with('[') => {
                        listed = positional(j, &target.request_fields())?;
                        Some(Input::Json(listed.as_bytes()))
                    }
                    Some(b) => Some(input(b)),
                    None => None,
                };
                target.call(args, timeout).await
            }
            .await;
            let reply = match &result {
                Ok(values) => encode::service_response(&service, id.as_deref(), Ok(values)),
                Err(e) => encode::service_response(&service, id.as_deref(), Err(&e.to_string())),
            };
            out.control(reply.len(), Frame::Text(reply));
        });
        Ok(())
    }
}

/// Args given as a list (rosbridge allows it): the request's fields in order.
fn positional(list: &RawValue, fields: &[String]) -> Result<String, SessionError> {
    let values: Vec<Box<RawValue>> =
        serde_json::from_str(list.get()).map_err(|e| SessionError::Args(e.to_string()))?;
    if values.len() > fields.len() {
        return Err(SessionError::Args(format!(
            "{} values for {} fields ({})",
            values.len(),
            fields.len(),
            fields.join(", ")
        )));
    }
    let mut obj = String::from("{");
    for (i, (f, v)) in fields.iter().zip(values.iter()).enumerate() {
        if i > 0 {
            obj.push(',');
        }
        obj += &serde_json::to_string(f).unwrap_or_default();
        obj.push(':');
        obj += v.get();
    }
    obj.push('}');
    Ok(obj)
}

fn input(b: &Body) -> Input<'_> {
    match b {
        Body::Json(j) => Input::Json(j.get().as_bytes()),
        Body::Cbor(c) => Input::Cbor(c),
    }
}

fn op_id(op: &Op) -> Option<&str> {
    match op {
        Op::Auth { .. } => None,
        Op::Advertise { id, .. }
        | Op::Unadvertise { id, .. }
        | Op::Publish { id, .. }
        | Op::Unsubscribe { id, .. }
        | Op::CallService { id, .. }
        | Op::AdvertiseService { id, .. }
        | Op::UnadvertiseService { id, .. }
        | Op::ServiceResponse { id, .. }
        | Op::SetLevel { id, .. }
        | Op::SendActionGoal { id, .. }
        | Op::CancelActionGoal { id, .. }
        | Op::AdvertiseAction { id, .. }
        | Op::UnadvertiseAction { id, .. }
        | Op::ActionFeedback { id, .. }
        | Op::ActionResult { id, .. } => id.as_deref(),
        Op::Subscribe(s) => s.id.as_deref(),
        Op::Fragment { id, .. } => Some(id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_args_become_the_request_fields_in_order() {
        let raw: Box<RawValue> = serde_json::from_str("[40, 2]").unwrap();
        let fields = vec!["a".to_string(), "b".to_string()];
        assert_eq!(positional(&raw, &fields).unwrap(), r#"{"a":40,"b":2}"#);
        let raw: Box<RawValue> = serde_json::from_str("[1,2,3]").unwrap();
        let e = positional(&raw, &fields).unwrap_err();
        assert_eq!(e.to_string(), "args: 3 values for 2 fields (a, b)");
    }
}
