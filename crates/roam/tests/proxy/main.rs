//! The ROS 2 proxy between CycloneDDS domains: topics, QoS, rules, the realm directory, edge
//! services, recording and ROS 2 distributions.
//!
//! One test binary with a module per suite (each suite's DDS domains and ports are its own, so
//! the modules' tests may run side by side).

#[path = "../support/common.rs"]
mod common;
#[path = "../support/fastdds_support.rs"]
mod fastdds_support;
#[path = "../support/gateway_support.rs"]
mod gateway_support;

mod directory;
mod distros;
mod edge_service;
mod qos;
mod record_mcap;
mod recovery;
mod rules;
mod topics;
