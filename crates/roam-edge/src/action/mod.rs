//! ROS 2 actions in a realm: [`ActionClient`] and [`ActionServer`], thin compositions of the
//! service handles and a publisher and subscriber per topic, in rosidl's shape:
//!
//! | part                          | realm-side name                        | DDS type                                    |
//! |-------------------------------|----------------------------------------|---------------------------------------------|
//! | service `send_goal`           | `<action>/_action/send_goal#request`/`#reply`  | `pkg::action::dds_::X_SendGoal_Request_`/`_Response_` |
//! | service `cancel_goal`         | `<action>/_action/cancel_goal#request`/`#reply` | `action_msgs::srv::dds_::CancelGoal_Request_`/`_Response_` |
//! | service `get_result`          | `<action>/_action/get_result#request`/`#reply` | `pkg::action::dds_::X_GetResult_Request_`/`_Response_` |
//! | topic `feedback`              | `<action>/_action/feedback`            | `pkg::action::dds_::X_FeedbackMessage_`     |
//! | topic `status`                | `<action>/_action/status`              | `action_msgs::msg::dds_::GoalStatusArray_`  |
//!
//! These are the names a proxy gives the five DDS topics of a ROS 2 action, so edge handles
//! and DDS nodes behind proxies meet on them.
//!
//! Goals and feedback are the caller's CDR messages of `X_Goal` and `X_Feedback` (the handles
//! add and strip the goal id); results are whole `X_GetResult_Response` messages (status and
//! result: see [`wire`] for why). Encode and decode them with roam-msg.

mod client;
mod goals;
mod server;
pub mod wire;

use std::sync::Arc;

use crate::edge::{EdgeError, TopicRef};
use crate::publisher::StreamSpec;
use crate::realm::Realm;
use crate::ros_names::{full_name, full_type, type_to_dds, RosTypeError};
use crate::service::{ServiceError, ServiceRef, ServiceRefError};
use roam_proto::meta::StreamQos;

pub use client::{ActionClient, ActionResult, GoalHandle, FEEDBACK_LINGER, MAX_GOALS_TRACKED};
pub use goals::{MAX_GOALS, RESULT_TIMEOUT};
pub use server::{ActionEvent, ActionServer, GoalRequest, ServerGoal};
pub use wire::{ActionWireError, CancelCode, CancelResponse, GoalId, GoalInfo, GoalStatus, Time};

/// The DDS type of every action's status topic.
pub const STATUS_TYPE: &str = "action_msgs::msg::dds_::GoalStatusArray_";

/// A ROS 2 action in a realm: its name and type.
#[derive(Clone, Debug)]
pub struct ActionRef {
    pub realm: Arc<Realm>,
    /// The full ROS 2 name, e.g. `/fibonacci`.
    pub action: String,
    /// The full ROS 2 type, e.g. `example_interfaces/action/Fibonacci`.
    pub action_type: String,
}

impl ActionRef {
    /// The action `action` (a ROS 2 name) of type `action_type` (`pkg/action/Type` or
    /// `pkg/Type`).
    pub fn new(
        realm: Arc<Realm>,
        action: &str,
        action_type: &str,
    ) -> Result<Self, ServiceRefError> {
        let given = if action_type.contains("::") || action_type.matches('/').count() != 1 {
            action_type.to_string()
        } else {
            action_type.replacen('/', "/action/", 1)
        };
        let action_type = full_type(&given, false)?;
        if action_type.split('/').nth(1) != Some("action") {
            return Err(RosTypeError {
                ty: action_type,
                reason: "an action type's middle part is `action`",
            }
            .into());
        }
        Ok(Self {
            realm,
            action: full_name(action)?.name,
            action_type,
        })
    }

    fn part(&self, name: &str) -> String {
        format!("{}/_action/{name}", self.action)
    }

    fn service(&self, name: &str, srv_type: String) -> ServiceRef {
        ServiceRef {
            realm: self.realm.clone(),
            service: self.part(name),
            srv_type,
            request_definition: None,
            reply_definition: None,
        }
    }

    /// The `send_goal` service (`X_SendGoal`).
    pub fn send_goal(&self) -> ServiceRef {
        self.service("send_goal", format!("{}_SendGoal", self.action_type))
    }

    /// The `cancel_goal` service (`action_msgs/srv/CancelGoal`).
    pub fn cancel_goal(&self) -> ServiceRef {
        self.service("cancel_goal", "action_msgs/srv/CancelGoal".into())
    }

    /// The `get_result` service (`X_GetResult`).
    pub fn get_result(&self) -> ServiceRef {
        self.service("get_result", format!("{}_GetResult", self.action_type))
    }

    /// The feedback topic.
    pub fn feedback_topic(&self) -> TopicRef {
        TopicRef::new(self.realm.clone(), self.part("feedback"))
    }

    /// The DDS type of the feedback topic, e.g.
    /// `example_interfaces::action::dds_::Fibonacci_FeedbackMessage_`.
    pub fn feedback_type(&self) -> String {
        type_to_dds(&format!("{}_FeedbackMessage", self.action_type))
    }

    /// The status topic.
    pub fn status_topic(&self) -> TopicRef {
        TopicRef::new(self.realm.clone(), self.part("status"))
    }

    /// How the status topic is published: rcl_action's status QoS (reliable, transient local,
    /// depth 1), so a late joiner behind a proxy gets the latest.
    pub fn status_spec() -> StreamSpec {
        let mut spec = StreamSpec::new(STATUS_TYPE);
        spec.qos = StreamQos {
            reliable: true,
            transient_local: true,
            depth: 1,
        };
        spec
    }
}

/// Why an action call or a server's answer failed.
#[derive(Debug, thiserror::Error)]
pub enum ActionError {
    #[error("{action}: the server rejected the goal")]
    Rejected { action: String },
    #[error("{action}: {limit} goals are tracked already")]
    TooManyGoals { action: String, limit: usize },
    #[error("a goal finishes as succeeded, canceled or aborted, not {0:?}")]
    NotTerminal(GoalStatus),
    #[error("goal {0} is finished already")]
    Finished(GoalId),
    #[error(transparent)]
    Service(#[from] ServiceError),
    #[error("malformed action message: {0}")]
    Wire(#[from] ActionWireError),
    #[error(transparent)]
    Edge(#[from] EdgeError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use roam_proto::RealmSecret;

    #[test]
    fn an_action_is_named_and_typed_as_rosidl_and_rmw_name_it() {
        let realm = Arc::new(Realm::from_secret("t", RealmSecret::from_bytes([1; 32])));
        let a = ActionRef::new(realm.clone(), "fibonacci", "example_interfaces/Fibonacci").unwrap();
        assert_eq!(a.action, "/fibonacci");
        assert_eq!(a.action_type, "example_interfaces/action/Fibonacci");
        let g = a.send_goal();
        assert_eq!(
            g.request_topic().topic,
            "/fibonacci/_action/send_goal#request"
        );
        assert_eq!(
            g.reply_type(),
            "example_interfaces::action::dds_::Fibonacci_SendGoal_Response_"
        );
        assert_eq!(
            a.cancel_goal().request_type(),
            "action_msgs::srv::dds_::CancelGoal_Request_"
        );
        assert_eq!(
            a.get_result().reply_topic().topic,
            "/fibonacci/_action/get_result#reply"
        );
        assert_eq!(
            a.get_result().request_type(),
            "example_interfaces::action::dds_::Fibonacci_GetResult_Request_"
        );
        assert_eq!(a.feedback_topic().topic, "/fibonacci/_action/feedback");
        assert_eq!(
            a.feedback_type(),
            "example_interfaces::action::dds_::Fibonacci_FeedbackMessage_"
        );
        assert_eq!(a.status_topic().topic, "/fibonacci/_action/status");
        // The DDS topics a proxy derives from these names are rmw's.
        assert_eq!(
            crate::ros_names::service_to_dds("/fibonacci/_action/send_goal").0,
            "rq/fibonacci/_action/send_goalRequest"
        );
        assert!(ActionRef::new(realm.clone(), "/f", "std_msgs/msg/String").is_err());
        assert!(
            ActionRef::new(realm, "/f", "example_interfaces::action::dds_::Fibonacci_").is_ok()
        );
    }
}
