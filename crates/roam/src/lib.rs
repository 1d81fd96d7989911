//! The `roam` binary's library: command-line commands and configuration files.
//! `main.rs` only parses arguments and dispatches here, so tests can reuse the pieces.

pub mod addr;
pub mod boot;
pub mod cmd;
pub mod config;
pub mod config_doc;
pub mod dashboard;
pub mod host_check;
pub mod mqtt;
pub mod payload;
pub mod proxy;
pub mod recording;
pub mod stats;
