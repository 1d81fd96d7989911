//! roam links and the async shell around the routing core.
//!
//! - [`tls`]: mutual-TLS configurations made of an identity (the CA and identities are
//!   `roam_pki`'s).
//! - [`link`]: one authenticated connection to a peer (QUIC, or TCP+TLS where UDP is blocked):
//!   frame I/O, per-topic lanes, bounded queues; [`inbound`]: where its readers hand what they
//!   read (a channel, or a router core behind the [`inbound::RouteHere`] trait);
//!   [`peer_addr`]: the addresses a link is dialed at.
//! - [`runtime`]: a router process: drives `roam_routing::Router` from link events and a timer.
//! - [`admission`]: limits on connections that have not authenticated yet (handshake
//!   deadline, per source and in total); [`ratelog`]: warnings that cannot flood the log;
//!   [`quota`]: messages and bytes per second a client link may bring into a router.
//! - [`client`]: a client link for programs that publish or subscribe through a router.
//! - [`congestion`]: the default congestion controller of QUIC links (Cubic that tells random
//!   loss from congestion).
//!
//! This crate never looks inside envelopes beyond the header; sealing happens at the edges.

pub mod admission;
pub mod client;
pub mod congestion;
pub mod dialer;
pub mod envelope_queue;
pub mod fec;
pub mod flight;
pub mod framing;
pub mod hand_in;
pub mod inbound;
pub mod lane;
pub mod latency;
pub mod link;
pub mod mqtt;
pub mod pause;
pub mod peer_addr;

pub mod quic;
pub mod quota;
pub mod ratelog;
pub mod runtime;
pub mod standing_rtt;
pub mod tcp;
pub mod tls;

#[cfg(test)]
mod dial_timeout_tests;
#[cfg(test)]
mod test_dir;
