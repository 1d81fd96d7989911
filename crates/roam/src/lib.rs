//! The `roam` binary's library: command-line commands and the processes they run
//! (configuration files are `roam_config`'s).
//! `main.rs` only parses arguments and dispatches here, so tests can reuse the pieces.

pub mod boot;
pub mod cmd;
pub mod payload;
pub mod proxy_run;
pub mod stats;
