//! Real Fast DDS 2.9 nodes (tests/fastdds) through roam to CycloneDDS and back: topics, keyed
//! and latched topics, large messages, services and actions.
//!
//! One test binary with a module per suite; the suites take turns on shared domain pairs
//! (support/fastdds_common.rs).

#[path = "../support/common.rs"]
mod common;
#[path = "../support/fastdds_common.rs"]
mod fastdds_common;
#[path = "../support/fastdds_support.rs"]
mod fastdds_support;
#[path = "../support/rustdds_support.rs"]
mod rustdds_support;

mod actions;
mod keyed;
mod large;
mod latched;
mod services;
mod topics;
