//! ROS 2 services in a realm: [`ServiceClient`] and [`ServiceServer`] handles over the edge's
//! publishers and subscribers.
//!
//! A service travels as two realm topics, `<service>#request` and `<service>#reply`
//! ([`crate::names::service_request`], [`crate::names::service_reply`]), whose payloads are
//! rmw_cyclonedds samples verbatim ([`wire`]): a request header (client id, sequence number)
//! before the request or reply fields. So an edge client calls a DDS server behind a proxy,
//! and a DDS client calls an edge server, with nothing translated on the way.
//!
//! Replies go to every subscriber of the reply topic, as on DDS: each client keeps those
//! carrying its own id and drops the rest. A client calls only when a server is there: someone
//! subscribes to the requests and someone announces replies ([`ServiceError::NoServer`]
//! otherwise, after a bounded wait).

mod client;
mod server;
pub mod wire;

use std::sync::Arc;
use std::time::Duration;

use crate::edge::{EdgeError, TopicRef};
use crate::names::{service_reply, service_request};
use crate::realm::Realm;
use crate::ros_names::{full_name, full_type, type_to_dds, RosNameError, RosTypeError};

pub use client::{ServiceClient, ServiceClientOptions, MAX_PENDING};
pub use server::{Replier, Request, ServiceServer};
pub use wire::RequestId;

/// A ROS 2 service in a realm: its name and type, and what its handles announce.
#[derive(Clone, Debug)]
pub struct ServiceRef {
    pub realm: Arc<Realm>,
    /// The full ROS 2 name, e.g. `/add_two_ints`.
    pub service: String,
    /// The full ROS 2 type, e.g. `example_interfaces/srv/AddTwoInts`.
    pub srv_type: String,
    /// The request type's definition (ros2msg text), announced by clients.
    pub request_definition: Option<String>,
    /// The reply type's definition (ros2msg text), announced by servers.
    pub reply_definition: Option<String>,
}

/// Why a service name or type is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceRefError {
    #[error(transparent)]
    Name(#[from] RosNameError),
    #[error(transparent)]
    Type(#[from] RosTypeError),
}

impl ServiceRef {
    /// The service `service` (a ROS 2 name; relative names resolve to `/`) of type `srv_type`
    /// (`pkg/srv/Type`, `pkg/Type`, or an action's `pkg/action/X_SendGoal`).
    pub fn new(realm: Arc<Realm>, service: &str, srv_type: &str) -> Result<Self, ServiceRefError> {
        Ok(Self {
            realm,
            service: full_name(service)?.name,
            srv_type: full_type(srv_type, true)?,
            request_definition: None,
            reply_definition: None,
        })
    }

    /// The realm topic the requests travel on.
    pub fn request_topic(&self) -> TopicRef {
        TopicRef::new(self.realm.clone(), service_request(&self.service))
    }

    /// The realm topic the replies travel on.
    pub fn reply_topic(&self) -> TopicRef {
        TopicRef::new(self.realm.clone(), service_reply(&self.service))
    }

    /// The DDS type of the requests, e.g. `example_interfaces::srv::dds_::AddTwoInts_Request_`.
    pub fn request_type(&self) -> String {
        type_to_dds(&format!("{}_Request", self.srv_type))
    }

    /// The DDS type of the replies, e.g. `example_interfaces::srv::dds_::AddTwoInts_Response_`.
    pub fn reply_type(&self) -> String {
        type_to_dds(&format!("{}_Response", self.srv_type))
    }
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("no server for {service}: nobody in the realm took its requests or announced replies within {waited:?}")]
    NoServer { service: String, waited: Duration },
    #[error("{service}: no reply within {timeout:?}")]
    Timeout { service: String, timeout: Duration },
    #[error("{service}: the edge is closed (its router or link is gone)")]
    Closed { service: String },
    #[error("{service}: the server failed the call: {reason}")]
    Failed { service: String, reason: String },
    #[error("{service}: {limit} calls already wait for replies")]
    TooManyPending { service: String, limit: usize },
    #[error("malformed service message: {0}")]
    Wire(#[from] wire::WireError),
    #[error(transparent)]
    Edge(#[from] EdgeError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use roam_proto::RealmSecret;

    fn realm() -> Arc<Realm> {
        Arc::new(Realm::from_secret("t", RealmSecret::from_bytes([1; 32])))
    }

    #[test]
    fn a_service_is_named_and_typed_as_rmw_names_it() {
        let s = ServiceRef::new(realm(), "add_two_ints", "example_interfaces/AddTwoInts").unwrap();
        assert_eq!(s.service, "/add_two_ints");
        assert_eq!(s.request_topic().topic, "/add_two_ints#request");
        assert_eq!(s.reply_topic().topic, "/add_two_ints#reply");
        assert_eq!(
            s.request_type(),
            "example_interfaces::srv::dds_::AddTwoInts_Request_"
        );
        assert_eq!(
            s.reply_type(),
            "example_interfaces::srv::dds_::AddTwoInts_Response_"
        );
        let a = ServiceRef::new(
            realm(),
            "/fibonacci/_action/send_goal",
            "example_interfaces/action/Fibonacci_SendGoal",
        )
        .unwrap();
        assert_eq!(
            a.request_type(),
            "example_interfaces::action::dds_::Fibonacci_SendGoal_Request_"
        );
        assert!(matches!(
            ServiceRef::new(realm(), "/a b", "x/srv/Y"),
            Err(ServiceRefError::Name(_))
        ));
        assert!(matches!(
            ServiceRef::new(realm(), "/a", "nope"),
            Err(ServiceRefError::Type(_))
        ));
    }
}
