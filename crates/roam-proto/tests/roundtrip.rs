//! Property tests: every frame round-trips through the codec, every sealed payload opens to
//! itself, and no input makes a decoder panic.

use bytes::Bytes;
use proptest::prelude::*;
use roam_proto::frame::{decode_all, Advert, Lsa, Role};
use roam_proto::{Frame, Name, Opener, OpenerConfig, RealmSecret, Sealer};

fn name() -> impl Strategy<Value = Name> {
    any::<[u8; 32]>().prop_map(Name)
}

fn frame() -> impl Strategy<Value = Frame> {
    prop_oneof![
        (any::<u8>(), any::<bool>(), any::<u64>(), "[a-z0-9-]{0,63}").prop_map(
            |(version, r, id, name)| Frame::Hello {
                version,
                role: if r { Role::Router } else { Role::Client },
                id,
                name
            }
        ),
        (
            any::<u64>(),
            any::<u64>(),
            any::<u32>(),
            prop::collection::vec(any::<u64>(), 0..50)
        )
            .prop_map(|(origin, seq, lifetime_s, neighbours)| Frame::Lsa(Lsa {
                origin,
                seq,
                lifetime_s,
                neighbours
            })),
        prop::collection::vec(
            (
                name(),
                any::<u64>(),
                any::<u64>(),
                any::<u32>(),
                any::<bool>()
            )
                .prop_map(|(name, origin, seq, lifetime_s, withdrawn)| {
                    Advert {
                        name,
                        origin,
                        seq,
                        lifetime_s,
                        withdrawn,
                    }
                }),
            0..20
        )
        .prop_map(Frame::Advertise),
        prop::collection::vec(name(), 0..20).prop_map(Frame::Subscribe),
        prop::collection::vec(name(), 0..20).prop_map(Frame::Unsubscribe),
        prop::collection::vec(name(), 0..20).prop_map(Frame::Publish),
        prop::collection::vec(name(), 0..20).prop_map(Frame::Unpublish),
        (any::<u64>(), any::<u8>(), name()).prop_map(|(id, ttl, name)| Frame::Query {
            id,
            ttl,
            name
        }),
        (any::<u64>(), prop::collection::vec(any::<u8>(), 0..2000)).prop_map(|(origin, e)| {
            Frame::Data {
                origin,
                envelope: Bytes::from(e),
            }
        }),
        prop::collection::vec(any::<u8>(), 0..2000)
            .prop_map(|list| Frame::Revocations(Bytes::from(list))),
    ]
}

proptest! {
    #[test]
    fn frames_round_trip(frames in prop::collection::vec(frame(), 1..8)) {
        let mut wire = Vec::new();
        for f in &frames {
            wire.extend_from_slice(&f.encode());
        }
        prop_assert_eq!(decode_all(Bytes::from(wire), 1 << 20).unwrap(), frames);
    }

    #[test]
    fn truncated_frames_fail_cleanly(f in frame(), cut in any::<prop::sample::Index>()) {
        let wire = f.encode();
        let n = cut.index(wire.len());
        prop_assert!(decode_all(Bytes::copy_from_slice(&wire[..n]), 1 << 20).is_err() || n == 0);
    }

    #[test]
    fn random_bytes_never_panic(data in prop::collection::vec(any::<u8>(), 0..512)) {
        let _ = decode_all(Bytes::from(data.clone()), 1 << 20);
        let mut o = Opener::new(&RealmSecret::from_bytes([1; 32]), OpenerConfig::default());
        prop_assert!(o.open(&data, 0, &mut Vec::new()).is_err());
    }

    #[test]
    fn sealed_payloads_open_to_themselves(payloads in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..3000), 1..10), best_effort in any::<bool>()) {
        let realm = RealmSecret::from_bytes([9; 32]);
        let mut s = Sealer::new(&realm, Name([4; 32]), best_effort, None).unwrap();
        let mut o = Opener::new(&realm, OpenerConfig::default());
        let mut out = Vec::new();
        for p in &payloads {
            let env = s.seal_to_vec(p, 1).unwrap();
            let opened = o.open(&env, 1, &mut out).unwrap();
            prop_assert_eq!(&out, p);
            prop_assert_eq!(opened.header.flags.best_effort(), best_effort);
        }
    }
}
