//! The roam routing core: sans-IO, deterministic, driven with an injected clock.
//!
//! A [`Router`] holds all routing state of one roam router: the link-state database of the
//! router mesh, the RIB (name -> origin routers that can deliver it), per-link subscriptions,
//! pending interest, and the forwarding decision for data. It performs no I/O: the shell feeds
//! it link events, frames and the current time, and drains what it wants sent.
//!
//! Poll order for the shell, after any `handle_*` call or when the timer fires:
//! 1. `poll_transmit()` until `None`: frames to send on links;
//! 2. `poll_event()` until `None`: deliveries and demand changes for in-process endpoints;
//! 3. `poll_timeout()`: when to call `handle_timeout` next.
//!
//! ```text
//!  LSAs ──> lsdb (graph, per-origin shortest-path trees) ─┐
//!  Advertise ──> rib (name -> origins) ───────────────────┼─> interest: Subscribe towards
//!  Subscribe ──> subs (who wants a name, where we asked) ─┘   each origin's tree parent
//!  Data ──> RPF check against the origin's tree ──> subscribed tree children, clients, local
//! ```
//!
//! Algorithm and guarantees are documented in `docs/architecture.md` (routing section).

mod control;
mod forward;
mod hash;
mod interest;
mod lsdb;
mod outbox;
mod rib;
mod router;
mod subs;

#[cfg(test)]
mod sim;
#[cfg(test)]
mod sim_tests;

pub use router::{Config, Event, LinkId, Router, Stats, Transmit, DEFAULT_CLIENT_MAX_NAMES};
