//! The roam wire protocol: topic names, sealed envelopes and link frames.
//!
//! This crate holds no I/O, no clock and no async code. Callers pass in the current time and
//! the bytes they received; every parser checks bounds before reading and returns an error,
//! never panics, on malformed input.
//!
//! ```text
//!  proxy/pub ──seal──> Envelope ──Frame::Data──> router ──Frame::Data──> ... ──open──> proxy/sub
//!                      (name, session, seq,       routers read only the header:
//!                       sealed CDR payload)       name and flags; the payload is opaque
//! ```
//!
//! - [`name`]: 256-bit topic names, `HMAC-SHA256(realm secret, canonical descriptor)`.
//! - [`envelope`]: the envelope header, and [`seal`]: sealing, opening, replay protection.
//! - [`frame`]: frames exchanged on links between routers and clients, and [`assembler`]:
//!   cutting a stream that arrives in pieces into them.
//! - [`repair`]: forward error correction datagrams for large frames on lossy links.
//! - [`epoch`]: the epochs of a realm's keys, and [`epoch_record`]: how an administrator hands
//!   a new epoch's secret to the remaining members.
//! - [`meta`]: topic announcements (type, QoS, streams) exporters seal on a topic's metadata
//!   name.
//!
//! The constructions and their reasoning are in `docs/security.md` and `docs/protocol.md`.

pub mod assembler;
pub mod codec;
pub mod directory;
pub mod envelope;
pub mod epoch;
pub mod epoch_record;
pub mod frame;
pub mod meta;
pub mod name;
pub mod realm;
pub mod repair;
pub mod replay;
pub mod seal;

pub use assembler::FrameAssembler;
pub use envelope::{EnvelopeFlags, EnvelopeHeader, PayloadKind};
pub use frame::{Frame, FrameError, RouterId};
pub use meta::{StreamAnnouncement, StreamQos, TopicAnnouncement, TypeDefinition, XTypes};
pub use name::{Kind, Name, TopicDescriptor};
pub use realm::{RealmSecret, SecretError};
pub use seal::{
    KeyError, OpenError, Opened, Opener, OpenerConfig, SealError, Sealer, SigningIdentity,
};
