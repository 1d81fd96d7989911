//! Any bytes as a message of a realm's epoch topic, a record or a status, as a member takes
//! it: never panics, and nothing is taken that an administrator did not sign (random bytes
//! never verify), so the member's epoch, membership and keyring stay as they were.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use roam_edge::epochs::{EpochState, Membership};
use roam_proto::epoch_record::{message_kind, EpochRecord, MemberKey, MemberStatus, Message};

fn member() -> &'static MemberKey {
    static KEY: OnceLock<MemberKey> = OnceLock::new();
    KEY.get_or_init(|| MemberKey::from_seed(&[8; 32]))
}

fuzz_target!(|data: &[u8]| {
    // Other keys than the seeds were signed with: the seeds parse, and their signatures fail.
    let admin = MemberKey::from_seed(&[7; 32]);
    let membership = Membership {
        admins: vec!["ops".into()],
        members: [("ops".to_string(), admin.public_key()), ("robot".to_string(), member().public_key())]
            .into_iter()
            .collect(),
    };
    let mut state = EpochState::new([3; 32], "robot", membership.clone());
    let before = state.stats();
    match message_kind(data) {
        Some(Message::Record) => {
            assert!(state.offer_record(data, member(), 0).is_err(), "unsigned record taken");
        }
        Some(Message::Status) => {
            assert!(state.offer_status(data, 0).is_err(), "unsigned status taken");
        }
        None => {}
    }
    if let Ok(record) = EpochRecord::parse(data) {
        assert!(record.verify(&[3; 32], &membership.admins, &membership.members).is_err());
        let _ = record.open("robot", member());
    }
    let _ = MemberStatus::parse(data, &[3; 32], &membership.members);
    assert_eq!(state.stats().newest, before.newest);
    assert_eq!(state.membership(), &membership);
});
