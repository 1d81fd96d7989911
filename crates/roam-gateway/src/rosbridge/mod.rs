//! The rosbridge v2 protocol over WebSocket, so roslibpy, roslibjs and roslibrust programs
//! work unchanged against topics and services anywhere in the realm.
//!
//! - [`ops`]: client frames (JSON text, CBOR binary) into typed operations (pure);
//! - [`encode`]: what the gateway sends (pure): `publish` as JSON, CBOR or cbor-raw,
//!   `service_response`, `call_service` to a serving client, `status`, `fragment`;
//! - [`fragment`]: reassembly of a client's fragments (pure, bounded);
//! - [`rosapi`]: the `/rosapi/*` services answered from the realm directory (pure);
//! - [`client`], [`services`], [`actions`]: one client's ops carried out on its session;
//! - [`server`]: the WebSocket shell.

pub mod actions;
pub mod client;
pub mod encode;
pub mod fragment;
pub mod ops;
pub mod rosapi;
pub mod server;
pub mod services;

pub use server::serve;
