//! Any bytes as a revocation list a peer or a file brings: never panics, and nothing but a
//! list signed by the CA is taken (random bytes never verify).
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use roam_pki::{Revocations, RevocationList};

/// A CA of its own, made once per fuzzing process.
fn ca() -> &'static roam_pki::Identity {
    static CA: OnceLock<roam_pki::Identity> = OnceLock::new();
    CA.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("roam-fuzz-crl-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        roam_pki::init_ca(&dir).expect("a CA");
        roam_pki::issue(&dir, "r", roam_proto::frame::Role::Router, roam_pki::Validity::default())
            .expect("an identity");
        roam_pki::load_identity(&dir, "r").expect("it loads")
    })
}

fuzz_target!(|data: &[u8]| {
    let id = ca();
    assert!(RevocationList::verify(data, &id.ca).is_err(), "unsigned bytes verified");
    let held = Revocations::in_memory(id.ca.clone());
    assert!(held.offer(data).is_err());
    assert!(held.current().is_none());
});
