//! ROS 2 <-> MQTT the way mqtt_client 2.x does it, so a fleet's existing parameter files and
//! MQTT consumers keep working with roam in place of mqtt_client.
//!
//! - [`params`]: mqtt_client's parameter schema (pure).
//! - [`wire`]: its wire format: CDR payloads, the retained type message, injected
//!   timestamps, latency topics (pure).
//! - [`primitive`]: its primitive mode, std_msgs scalars as plain text (pure).
//! - [`cdr`]: the few CDR shapes the wire format needs (pure).
//! - [`client`]: the MQTT client shell (rumqttc): connection, TLS, reconnection with
//!   back-off, re-subscription, a bounded buffer while the broker is away. The bridge and
//!   roam-net's links through a broker both use it.
//!
//! What is not here: ROS message types, DDS and the realm. The bridge in `roam_proxy::mqtt`
//! converts each entry's messages (`convert`, with roam-msg's codec) and joins them to a DDS
//! domain and to realm topics.

#![forbid(unsafe_code)]

pub mod cdr;
pub mod client;
mod conn;
pub mod hops;
pub mod params;
pub mod primitive;
pub mod tls;
pub mod wire;

pub use client::{ClientStats, Connect, MqttClient, PublishError, Received, Session};
pub use params::{Params, ParamsError};
pub use wire::{RosMsgType, WireError};

#[cfg(test)]
mod outside_bytes_tests;
