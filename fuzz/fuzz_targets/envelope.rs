//! Any bytes through the envelope parser and opener (plain and signed-required): never panics,
//! never opens without the realm's key.
#![no_main]

use libfuzzer_sys::fuzz_target;
use roam_proto::envelope::{peek_name, EnvelopeHeader};
use roam_proto::{Opener, OpenerConfig, RealmSecret};

fuzz_target!(|data: &[u8]| {
    let _ = peek_name(data);
    let _ = EnvelopeHeader::parse(data);
    let realm = RealmSecret::from_bytes([7; 32]);
    let mut out = Vec::new();
    let mut o = Opener::new(&realm, OpenerConfig::default());
    // Random bytes cannot carry a valid AES-GCM tag under this key.
    assert!(o.open(data, 0, &mut out).is_err());
    let mut s = Opener::new(&realm, OpenerConfig { require_signed: true, ..Default::default() });
    assert!(s.open(data, 0, &mut out).is_err());
});
