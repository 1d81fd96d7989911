//! The ROS 2 proxy between CycloneDDS domains: topics, QoS, rules, the realm directory, edge
//! services, recording and ROS 2 distributions.
//!
//! One test binary with a module per suite (each suite's DDS domains and ports are its own, so
//! the modules' tests may run side by side).

#[allow(dead_code)]
#[path = "../support/common.rs"]
mod common;
#[allow(dead_code)]
#[path = "../support/fastdds_support.rs"]
mod fastdds_support;
#[allow(dead_code)]
#[path = "../support/gateway_support.rs"]
mod gateway_support;

mod directory;
mod distros;
mod edge_service;
mod qos;
mod record_mcap;
mod rules;
mod topics;
