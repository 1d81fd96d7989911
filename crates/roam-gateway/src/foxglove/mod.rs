//! The Foxglove WebSocket protocol (v1: subprotocols `foxglove.sdk.v1` and
//! `foxglove.websocket.v1`), so Foxglove, Lichtblick and `@foxglove/ws-protocol` programs
//! connect to a realm directly: every topic of the realm whose definition is known is a
//! channel (`cdr`, schema `ros2msg`), every service with known definitions a service; clients
//! subscribe, publish (`cdr` or `json`) and call services.
//!
//! ```text
//!  client ──frames──> ops (pure parse) ──Op──> client::Conn ── Session (identity, edge
//!                                                │               handles, outbox)
//!  realm listing ──watcher (poll, learn definitions)──> catalog::Snapshot (numbered)
//!                                                │ catalog::View per client (advertise/unadvertise)
//!  client <──frames── encode (pure) <── server's writer <── Outbox (bounded, drop oldest)
//! ```
//!
//! - [`ops`]: client JSON ops and binary frames, typed (pure);
//! - [`encode`]: server messages (pure);
//! - [`catalog`]: channel and service ids, and what one client was told (pure);
//! - [`watcher`]: the realm's listing followed, definitions found or learned;
//! - [`client`]: one client's ops on its [`crate::session::Session`];
//! - [`server`]: the WebSocket shell: [`serve`] accepts, [`server::connection`] runs one
//!   client over any stream (TCP, TLS).
//!
//! Messages go out as the CDR the realm carried (with its encapsulation header), stamped with
//! the time the gateway received them: no conversion, whatever the type.
//!
//! Why not the `foxglove` crate's server: it binds its own listener and runs its own accept
//! loop and TLS, offers every channel of its process to every client (no identity, no
//! per-client allow lists), and queues each client in its own way (a message backlog), while
//! this door needs the gateway's listener and TLS layer, the session's tokens and permissions,
//! and the shared outbox (per subscription, drop oldest, counted, one byte budget). Its
//! protocol types are behind a feature it marks internal (`_protocol`). The protocol itself is
//! small; it is written here, pure and tested.

pub mod catalog;
pub mod client;
pub mod encode;
pub mod ops;
pub mod server;
pub mod watcher;

pub use server::{connection, serve, Door};
