//! Writes the fuzz seed for directory entries when ROAM_WRITE_FUZZ_SEEDS is set; always checks
//! that the committed seed still decodes (so the fuzzer starts from valid input).

use roam_proto::directory::{DirectoryEntry, DirectoryItem, ItemKind, Role};
use roam_proto::meta::StreamQos;

fn sample() -> DirectoryEntry {
    DirectoryEntry {
        member: "robot-7".into(),
        period_ms: 2000,
        items: vec![
            DirectoryItem {
                kind: ItemKind::Topic,
                role: Role::Offers,
                name: "/chatter".into(),
                types: vec!["std_msgs/msg/String".into()],
                qos: vec![StreamQos {
                    reliable: true,
                    transient_local: true,
                    depth: 1,
                }],
            },
            DirectoryItem {
                kind: ItemKind::Service,
                role: Role::Imports,
                name: "/add_two_ints".into(),
                types: vec!["example_interfaces/srv/AddTwoInts".into()],
                qos: vec![],
            },
            DirectoryItem {
                kind: ItemKind::Action,
                role: Role::Offers,
                name: "/fibonacci".into(),
                types: vec![],
                qos: vec![],
            },
        ],
    }
}

#[test]
fn the_committed_fuzz_seed_is_a_valid_entry() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/seeds/directory/three_items"
    );
    if std::env::var_os("ROAM_WRITE_FUZZ_SEEDS").is_some() {
        std::fs::write(path, sample().encode()).unwrap();
    }
    let bytes = std::fs::read(path).expect("fuzz/seeds/directory/three_items");
    assert_eq!(DirectoryEntry::decode(&bytes).unwrap(), sample());
}
