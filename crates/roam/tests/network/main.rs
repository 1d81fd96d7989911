//! The routing plane and what watches it: routers, mobility, faults, security, metrics (file and
//! Prometheus), the dashboard in a browser, `roam top`, and the MQTT bridge and broker links.
//!
//! One test binary with a module per suite (each suite's DDS domains and ports are its own, so
//! the modules' tests may run side by side).

#[path = "../support/common.rs"]
mod common;
#[path = "../support/mqtt_support.rs"]
mod mqtt_support;

mod dashboard_browser;
mod faults;
mod metrics_file;
mod metrics_prometheus;
mod mobility;
mod mqtt_bridge;
mod mqtt_link;
mod quota;
mod realm_rotation;
mod recovery;
mod revocation;
mod routing;
mod security;
mod top_tmux;
