//! `roam gateway` with client libraries we do not own: roslibpy, roslibjs in a browser, the
//! Foxglove client, grpcio; its TLS, rules, refusals, slow clients and attacks.
//!
//! One test binary with a module per suite (each suite's DDS domains and ports are its own, so
//! the modules' tests may run side by side).

#[path = "../support/common.rs"]
mod common;
#[path = "../support/gateway_support.rs"]
mod gateway_support;

mod actions;
mod attacks;
mod browser;
mod foxglove;
mod grpc;
mod in_proxy;
mod refusals;
mod rosbridge;
mod rotation;
mod rules;
mod slow_clients;
mod tls;
