//! ROS 2 nodes on RustDDS (ros2-client, inside this process) with CycloneDDS and Fast DDS peers
//! through roam: topics, services and actions across vendors, export patterns.
//!
//! One test binary with a module per suite (each suite's DDS domains and ports are its own, so
//! the modules' tests may run side by side). tests/fastdds_rustdds.rs is a binary of its own:
//! its RustDDS participants must not share a process with other suites.

#[path = "../support/common.rs"]
mod common;
#[path = "../support/fastdds_support.rs"]
mod fastdds_support;
#[path = "../support/rustdds_support.rs"]
mod rustdds_support;

mod actions;
mod patterns;
mod services;
mod topics;
