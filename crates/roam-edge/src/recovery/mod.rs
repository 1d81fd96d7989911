//! End-to-end recovery for reliable topics: what a router's death, a flapping link or a
//! client offline for a moment cost is asked for again by the subscribers that missed it and
//! sent again by the publisher's edge, across the realm, as long as a path exists and the
//! publisher still holds the messages.
//!
//! Links are reliable hop by hop; what is lost is what a router held or was being sent when
//! it died, and what a publisher sent while its own link was down. So:
//!
//! - a publisher of a recoverable stream keeps what it sent in a bounded [`window::Window`]
//!   (by age, bytes and count; [`WindowLimits`]) and subscribes to its data name's
//!   [`repair_name`];
//! - a subscriber follows every recoverable session's sequence ([`reorder::Reorder`]), holds
//!   what comes after a gap so its reader still gets the stream in order, and asks for the gap
//!   on the repair name ([`request::Request`], sealed like any envelope: routers see a name
//!   and ciphertext);
//! - the publisher sends the envelopes again as they were, on the data name: every subscriber
//!   that missed them takes them, the others drop them by sequence (their replay windows).
//!   What the window no longer holds is counted at both ends.
//!
//! Recoverable: reliable streams whose publisher keeps every message (a KEEP_ALL history, or
//! a keyed topic). Best-effort and keep-last streams are left as they are: their readers
//! want the newest sample, not one that waits for older ones.

pub(crate) mod ask;
pub mod reorder;
pub mod request;
mod seq_ranges;
pub(crate) mod serve;
pub mod window;

use roam_proto::{EnvelopeFlags, Kind, Name, RealmSecret, TopicDescriptor};

pub use reorder::{Arrival, AskPolicy, Reorder};
pub use window::{LossReport, Window, WindowLimits};

/// The type field of the repair name's descriptor.
const REPAIR_TYPE: &str = "roam/repair/v1";

/// Where the subscribers of data name `data` ask its publishers for messages again: derived
/// from the data name with the realm secret, like every name, so only members can compute it
/// and routers cannot tell it belongs to the data.
pub fn repair_name(realm: &RealmSecret, data: &Name) -> Name {
    TopicDescriptor {
        topic: hex::encode(data.0),
        type_name: REPAIR_TYPE.into(),
        kind: Kind::Topic,
        instance: String::new(),
    }
    .name(realm)
}

/// Whether envelopes with these flags belong to a recoverable stream.
pub fn recoverable(flags: EnvelopeFlags) -> bool {
    !flags.best_effort() && !flags.keep_latest()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_data_name_has_its_own_repair_name_in_each_realm() {
        let a = RealmSecret::from_bytes([1; 32]);
        let b = RealmSecret::from_bytes([2; 32]);
        let (x, y) = (Name([3; 32]), Name([4; 32]));
        assert_ne!(repair_name(&a, &x), repair_name(&a, &y));
        assert_ne!(repair_name(&a, &x), repair_name(&b, &x));
        assert_ne!(repair_name(&a, &x), x);
        assert_eq!(repair_name(&a, &x), repair_name(&a, &x));
    }

    #[test]
    fn only_reliable_streams_that_keep_everything_are_recoverable() {
        assert!(recoverable(EnvelopeFlags(0)));
        assert!(recoverable(EnvelopeFlags(EnvelopeFlags::SIGNED)));
        assert!(!recoverable(EnvelopeFlags(EnvelopeFlags::BEST_EFFORT)));
        assert!(!recoverable(EnvelopeFlags(EnvelopeFlags::KEEP_LATEST)));
    }
}
