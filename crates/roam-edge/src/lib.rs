//! The edge layer: the one door to a realm for any part of any roam process.
//!
//! A proxy's DDS side, `roam pub`/`roam sub`, and every gateway (rosbridge, Foxglove, gRPC,
//! MQTT) reach a realm through the handles here, and nothing else derives names or seals
//! envelopes:
//!
//! - publisher and subscriber handles own the topic's names, sealing and opening, the
//!   topic announcements (type, QoS, definitions) and the demand signal; any number per name
//!   in one process; released when dropped;
//! - service and action handles compose them the way ROS 2 does;
//! - the realm directory says what every member offers and imports;
//! - [`epochs`] follows the realm's key epochs (rotation, removal of members);
//! - [`metrics`] is the typed snapshot every process hands out;
//! - [`definitions`] finds ROS 2 interface definitions on disk, so topics describe themselves.
//!
//! # What it does not do
//!
//! No DDS (the proxy's `roam-dds` side feeds and drains these handles), no routing decisions
//! (`roam-routing`), no link transport (`roam-net`), no message (de)serialization
//! (`roam-msg`).

pub mod action;
mod announce;
pub mod backlog;
pub mod definitions;
pub mod directory;
mod edge;
pub mod epochs;
pub mod metrics;
pub mod names;
pub mod port;
mod publisher;
pub mod realm;
pub mod recording;
pub mod recovery;
pub mod ros_names;
pub mod service;
pub mod stats;
pub mod streams;
mod subscriber;

pub use action::{ActionClient, ActionError, ActionRef, ActionServer};
pub use announce::ANNOUNCE_PERIOD;
pub use backlog::Pending;
pub use edge::{Description, Edge, EdgeError, TopicRef};
pub use port::Port;
pub use publisher::{Publisher, StreamSpec};
pub use realm::Realm;
pub use roam_proto::meta::{StreamQos, XTypes};
pub use roam_proto::PayloadKind;
pub use service::{ServiceClient, ServiceClientOptions, ServiceError, ServiceRef, ServiceServer};
pub use streams::{StreamId, StreamInfo};
pub use subscriber::{Event, Received, Subscriber, SubscriberOptions, HOLD};
