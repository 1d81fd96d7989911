//! The gRPC door: the `roam.gateway.v1.Gateway` service of
//! proto/roam/gateway/v1/gateway.proto (the repository's root), on tonic.
//!
//! ```text
//!  gRPC client ──HTTP/2──> server (tonic, any stream of accepted connections)
//!                            │ per call: token from `authorization: Bearer` -> Session
//!  Publish  ── stream ──> Session::publish ──edge Publisher──> realm
//!  Subscribe <── stream ── Subscription (the Session's outbox, pulled as the client reads)
//!  CallService ─────────> ServiceTargets (door-wide edge service clients)
//!  SendGoal / CancelGoal > goals::ActionTargets (door-wide edge action clients)
//!  ListTopics, GetDefinition: Gateway::realm_listing, the codec cache
//! ```
//!
//! - [`status`]: failures as gRPC statuses, the bearer token, goal ids (pure);
//! - [`door`]: the service: each call translated onto a [`crate::session::Session`];
//! - [`subscribe`]: a subscription as a response stream, bounded by the session's outbox;
//! - [`goals`]: goals of the realm's action servers, their events as a response stream;
//! - [`server`]: the shell: accepted connections (TCP now, TLS later) to tonic.
//!
//! Every call authenticates on its own (gRPC has no connection-level login), with the same
//! tokens, permissions and refusal counts as the rosbridge door.

pub mod door;
pub mod goals;
pub mod server;
pub mod status;
pub mod subscribe;

/// The messages and service trait generated from the .proto (build.rs).
pub mod pb {
    #![allow(clippy::all, missing_docs)]
    tonic::include_proto!("roam.gateway.v1");
}

pub use door::Door;
pub use server::{door_incoming, serve, tcp_incoming, ClientCert};
