//! The `roam` command line as a user meets it: every command's arguments and errors, `--json`
//! output, listening and shutting down, build consistency and handshake limits.
//!
//! One test binary with a module per suite (each suite's DDS domains and ports are its own, so
//! the modules' tests may run side by side).

#[path = "../support/common.rs"]
mod common;

mod build_consistency;
mod commands;
mod handshake_limits;
mod json;
mod listen_and_shutdown;
