//! Any bytes as the body of a call to the gateway's gRPC door (roam_gateway::grpc): its
//! length-prefixed frames read by tonic's streaming decoder with the prost decoder the
//! generated service uses, under a message size limit as the door sets one, then the checks
//! the door makes of each request's fields. Never panics; a refused body is an INTERNAL or
//! OUT_OF_RANGE status; how the body is cut into chunks changes nothing; what decodes
//! encodes and frames back to the same messages; names, types and goal ids the door takes
//! read back the same from their own full form.
//!
//! The first byte picks the request type, the second the chunk size; the rest is the body.
#![no_main]

use std::convert::Infallible;
use std::future::Future;
use std::pin::{pin, Pin};
use std::task::{Context, Poll, Waker};

use bytes::Bytes;
use http_body::{Body, Frame};
use libfuzzer_sys::fuzz_target;
use prost::Message;
use roam_edge::ros_names::{full_name, full_type, type_from_dds, type_to_dds};
use roam_gateway::grpc::door::encoding;
use roam_gateway::grpc::pb;
use roam_gateway::grpc::status::parse_goal_id;
use roam_gateway::rosbridge::rosapi;
use tonic::codec::Streaming;
use tonic::Code;
use tonic_prost::ProstDecoder;

/// The door's limit (limits.max_frame_bytes) made small, so that fuzz inputs cross it.
const LIMIT: usize = 1024;

fuzz_target!(|data: &[u8]| {
    let [kind, step, body @ ..] = data else {
        return;
    };
    let step = usize::from(*step).max(1);
    match kind % 7 {
        0 => check::<pb::PublishRequest>(body, step),
        1 => check::<pb::SubscribeRequest>(body, step),
        2 => check::<pb::CallServiceRequest>(body, step),
        3 => check::<pb::SendGoalRequest>(body, step),
        4 => check::<pb::CancelGoalRequest>(body, step),
        5 => check::<pb::ListTopicsRequest>(body, step),
        _ => check::<pb::GetDefinitionRequest>(body, step),
    }
});

fn check<M: Request>(body: &[u8], step: usize) {
    let (messages, refused) = read::<M>(body, step, LIMIT);
    if let Some(code) = refused {
        assert!(
            matches!(code, Code::Internal | Code::OutOfRange),
            "a body refused with {code:?}"
        );
    }
    // Messages compare by their encoding: a double field may hold NaN.
    let (whole, whole_refused) = read::<M>(body, body.len().max(1), LIMIT);
    assert_eq!(
        (encoded(&whole), whole_refused),
        (encoded(&messages), refused),
        "the chunks a body came in changed what it read"
    );
    let mut again = Vec::new();
    for bytes in encoded(&messages) {
        again.push(0);
        again.extend_from_slice(&(bytes.len() as u32).to_be_bytes());
        again.extend_from_slice(&bytes);
    }
    messages.iter().for_each(Request::door_checks);
    // Canonical encodings may be longer (a negative enum value is ten bytes in any case).
    let (read_again, refused_again) = read::<M>(&again, step, 2 * LIMIT);
    assert_eq!(refused_again, None);
    assert_eq!(encoded(&read_again), encoded(&messages));
}

fn encoded<M: Message>(messages: &[M]) -> Vec<Vec<u8>> {
    messages.iter().map(Message::encode_to_vec).collect()
}

/// The messages of `body` delivered `step` bytes at a time, each at most `limit` bytes, and
/// the code it ended with if it was refused.
fn read<M: Request>(body: &[u8], step: usize, limit: usize) -> (Vec<M>, Option<Code>) {
    let chunks = Chunks {
        rest: Bytes::copy_from_slice(body),
        step,
    };
    let mut s = Streaming::new_request(ProstDecoder::<M>::default(), chunks, None, Some(limit));
    let mut messages = Vec::new();
    loop {
        match now(s.message()) {
            Ok(Some(m)) => messages.push(m),
            Ok(None) => return (messages, None),
            Err(status) => return (messages, Some(status.code())),
        }
    }
}

/// A future over a body whose chunks are all there: ready at its first poll.
fn now<F: Future>(f: F) -> F::Output {
    let mut cx = Context::from_waker(Waker::noop());
    match pin!(f).poll(&mut cx) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("pending on a body that is all there"),
    }
}

/// A request body that arrives `step` bytes per data frame.
struct Chunks {
    rest: Bytes,
    step: usize,
}

impl Body for Chunks {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        if self.rest.is_empty() {
            return Poll::Ready(None);
        }
        let n = self.step.min(self.rest.len());
        let chunk = self.rest.split_to(n);
        Poll::Ready(Some(Ok(Frame::data(chunk))))
    }
}

/// A request message of the door, and what the door checks of it before anything reaches
/// the realm (grpc/door.rs).
trait Request: Message + Default + 'static {
    fn door_checks(&self);
}

/// A topic, service or action name: refused, or a full name that is its own full form.
fn name(n: &str) {
    if let Ok(full) = full_name(n) {
        let again = full_name(&full.name).expect("a full name is a name");
        assert_eq!(again.name, full.name);
        assert!(!again.was_relative);
    }
}

/// A type (`service`: a bare `pkg/Type` is a service's): refused, or a full type that is its
/// own full form and reads back from its DDS spelling.
fn ros_type(t: &str, service: bool) {
    if let Ok(full) = full_type(t, service) {
        assert_eq!(full_type(&full, service).as_ref(), Ok(&full));
        assert_eq!(type_from_dds(&type_to_dds(&full)), full);
    }
}

fn encoding_field(value: i32) {
    assert_eq!(encoding(value).is_ok(), matches!(value, 0 | 1));
}

impl Request for pb::PublishRequest {
    fn door_checks(&self) {
        name(&self.topic);
        ros_type(&self.r#type, false);
        encoding_field(self.encoding);
    }
}

impl Request for pb::SubscribeRequest {
    fn door_checks(&self) {
        name(&self.topic);
        ros_type(&self.r#type, false);
        encoding_field(self.encoding);
    }
}

impl Request for pb::CallServiceRequest {
    fn door_checks(&self) {
        encoding_field(self.encoding);
        if rosapi::is_rosapi(&self.service) {
            let args = String::from_utf8_lossy(&self.request);
            let _ = rosapi::parse(&self.service, (!self.request.is_empty()).then_some(&*args));
        } else {
            name(&self.service);
        }
        ros_type(&self.r#type, true);
        let _ = std::time::Duration::try_from_secs_f64(self.timeout_s);
    }
}

impl Request for pb::SendGoalRequest {
    fn door_checks(&self) {
        name(&self.action);
        ros_type(&self.r#type, false);
        encoding_field(self.encoding);
    }
}

impl Request for pb::CancelGoalRequest {
    fn door_checks(&self) {
        name(&self.action);
        ros_type(&self.r#type, false);
        if let Some(id) = parse_goal_id(&self.goal_id) {
            assert_eq!(parse_goal_id(&id.to_string()), Some(id));
        }
    }
}

impl Request for pb::ListTopicsRequest {
    fn door_checks(&self) {}
}

impl Request for pb::GetDefinitionRequest {
    fn door_checks(&self) {
        ros_type(&self.r#type, false);
    }
}
