//! The `roam` binary's library: command-line commands, configuration files, realm files.
//! `main.rs` only parses arguments and dispatches here, so tests can reuse the pieces.

pub mod addr;
pub mod cmd;
pub mod config;
pub mod config_doc;
pub mod host_check;
pub mod payload;
pub mod proxy;
pub mod realm_file;
pub mod stats;
