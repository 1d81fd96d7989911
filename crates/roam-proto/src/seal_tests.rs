use std::collections::HashMap;
use std::sync::Arc;

use super::*;
use crate::envelope::{EnvelopeError, SOURCE_TIME_LEN};
use crate::name::TopicDescriptor;

fn realm(b: u8) -> RealmSecret {
    RealmSecret::from_bytes([b; 32])
}

fn name() -> Name {
    TopicDescriptor::topic("/chatter", "std_msgs/msg/String").name(&realm(1))
}

#[test]
fn seal_open_round_trip_all_sizes() {
    let mut s = Sealer::new(&realm(1), name(), false, None).unwrap();
    let mut o = Opener::new(&realm(1), OpenerConfig::default());
    let mut out = Vec::new();
    for len in [0usize, 1, 64, 1024, 65536, 1 << 20] {
        let payload: Vec<u8> = (0..len).map(|i| i as u8).collect();
        let env = s.seal_to_vec(&payload, 5).unwrap();
        assert_eq!(env.len(), s.sealed_len(len));
        // The payload never appears in the clear (checked on a distinctive prefix).
        if len >= 64 {
            assert!(!env.windows(32).any(|w| w == &payload[..32]));
        }
        let opened = o.open(&env, 5, &mut out).unwrap();
        assert_eq!(out, payload);
        assert_eq!(opened.header.name, name());
        assert_eq!(opened.signer, None);
    }
    assert_eq!(o.stats().opened, 6);
}

#[test]
fn reused_buffers_hold_exactly_the_latest_message() {
    // Sealing and opening overwrite reused buffers without clearing them first: a shorter
    // message after a longer one must leave nothing of the longer behind.
    let mut s = Sealer::new(&realm(1), name(), false, None).unwrap();
    let mut o = Opener::new(&realm(1), OpenerConfig::default());
    let (mut env, mut out) = (Vec::new(), Vec::new());
    for len in [1usize << 20, 65536, 1024, 1, 0, 300] {
        let payload = vec![len as u8 ^ 0x5a; len];
        s.seal(&payload, 0, &mut env).unwrap();
        assert_eq!(env.len(), s.sealed_len(len));
        o.open(&env, 0, &mut out).unwrap();
        assert_eq!(out, payload);
    }
    // A forged envelope leaves no plaintext behind.
    s.seal(&[7; 300], 0, &mut env).unwrap();
    let last = env.len() - 1;
    env[last] ^= 1;
    assert_eq!(o.open(&env, 0, &mut out), Err(OpenError::Forged));
    assert!(out.is_empty());
}

#[test]
fn test_vector_matches_docs() {
    // Published in docs/protocol.md: a fixed session makes the envelope deterministic.
    let mut s = Sealer::with_session(
        &realm(0x42),
        Name([0x11; 32]),
        0x0102030405060708,
        false,
        None,
    );
    let env = s.seal_to_vec(b"hello roam", 1_700_000_000_000_000).unwrap();
    assert_eq!(
        hex::encode(&env),
        include_str!("../testdata/envelope_hello.hex").trim()
    );
}

#[test]
fn wrong_realm_is_forged() {
    let mut s = Sealer::new(&realm(2), name(), false, None).unwrap();
    let mut o = Opener::new(&realm(1), OpenerConfig::default());
    let env = s.seal_to_vec(b"secret", 0).unwrap();
    assert_eq!(o.open(&env, 0, &mut Vec::new()), Err(OpenError::Forged));
    assert_eq!(o.stats().forged, 1);
}

#[test]
fn any_bit_flip_is_refused() {
    let mut s = Sealer::new(&realm(1), name(), false, None).unwrap();
    let env = s.seal_to_vec(b"0123456789abcdef", 0).unwrap();
    for i in 0..env.len() {
        for bit in [0x01u8, 0x80] {
            let mut o = Opener::new(&realm(1), OpenerConfig::default());
            let mut bad = env.clone();
            bad[i] ^= bit;
            assert!(
                o.open(&bad, 0, &mut Vec::new()).is_err(),
                "flip at byte {i} accepted"
            );
        }
    }
}

#[test]
fn replays_are_dropped_and_counted() {
    let mut s = Sealer::new(&realm(1), name(), false, None).unwrap();
    let mut o = Opener::new(&realm(1), OpenerConfig::default());
    let a = s.seal_to_vec(b"a", 0).unwrap();
    let b = s.seal_to_vec(b"b", 0).unwrap();
    let mut out = Vec::new();
    o.open(&b, 0, &mut out).unwrap();
    o.open(&a, 0, &mut out).unwrap(); // reordered, inside the window
    assert_eq!(o.open(&a, 0, &mut out), Err(OpenError::Replayed(1)));
    assert_eq!(o.open(&b, 0, &mut out), Err(OpenError::Replayed(2)));
    assert_eq!(o.stats().replayed, 2);
}

#[test]
fn forgeries_do_not_evict_sessions() {
    let mut s = Sealer::new(&realm(1), name(), false, None).unwrap();
    let mut o = Opener::new(
        &realm(1),
        OpenerConfig {
            max_sessions: 2,
            ..Default::default()
        },
    );
    let first = s.seal_to_vec(b"x", 0).unwrap();
    o.open(&first, 0, &mut Vec::new()).unwrap();
    // Many forged sessions: none is remembered.
    for session in 0..100 {
        let mut f = Sealer::with_session(&realm(9), name(), session, false, None);
        let env = f.seal_to_vec(b"x", 0).unwrap();
        assert_eq!(o.open(&env, 0, &mut Vec::new()), Err(OpenError::Forged));
    }
    assert_eq!(
        o.open(&first, 0, &mut Vec::new()),
        Err(OpenError::Replayed(1))
    );
}

#[test]
fn at_most_max_sessions_are_remembered_and_the_least_recently_used_goes() {
    let mut o = Opener::new(
        &realm(1),
        OpenerConfig {
            max_sessions: 2,
            ..Default::default()
        },
    );
    let mut sealers: Vec<Sealer> = (0..3)
        .map(|session| Sealer::with_session(&realm(1), name(), session, false, None))
        .collect();
    let first: Vec<Vec<u8>> = sealers
        .iter_mut()
        .map(|s| s.seal_to_vec(b"x", 0).unwrap())
        .collect();
    let mut out = Vec::new();
    o.open(&first[0], 0, &mut out).unwrap();
    o.open(&first[1], 0, &mut out).unwrap();
    let again = sealers[0].seal_to_vec(b"y", 0).unwrap();
    o.open(&again, 0, &mut out).unwrap(); // session 0 is now the most recent
    o.open(&first[2], 0, &mut out).unwrap(); // a third: session 1 is forgotten
    assert_eq!(o.open(&first[0], 0, &mut out), Err(OpenError::Replayed(1)));
    assert_eq!(o.open(&first[2], 0, &mut out), Err(OpenError::Replayed(1)));
    // Forgotten: its replay window starts again (what the bound costs).
    assert!(o.open(&first[1], 0, &mut out).is_ok());
}

#[test]
fn signed_mode_names_the_member() {
    let alice = Arc::new(SigningIdentity::from_seed(&[1; 32]));
    let mallory = Arc::new(SigningIdentity::from_seed(&[2; 32]));
    let mut members = HashMap::new();
    members.insert(alice.public_key(), "alice".to_string());
    let cfg = OpenerConfig {
        require_signed: true,
        members,
        ..Default::default()
    };
    let mut o = Opener::new(&realm(1), cfg);
    let mut out = Vec::new();

    let mut s = Sealer::new(&realm(1), name(), false, Some(alice.clone())).unwrap();
    let env = s.seal_to_vec(b"from alice", 0).unwrap();
    let opened = o.open(&env, 0, &mut out).unwrap();
    assert_eq!(opened.signer.as_deref(), Some("alice"));
    assert_eq!(out, b"from alice");

    // A member without a signature is refused when signatures are required.
    let mut u = Sealer::new(&realm(1), name(), false, None).unwrap();
    assert_eq!(
        o.open(&u.seal_to_vec(b"x", 0).unwrap(), 0, &mut out),
        Err(OpenError::Unsigned)
    );

    // A realm member that is not in the member list cannot sign.
    let mut m = Sealer::new(&realm(1), name(), false, Some(mallory.clone())).unwrap();
    assert_eq!(
        o.open(&m.seal_to_vec(b"x", 0).unwrap(), 0, &mut out),
        Err(OpenError::UnknownSigner)
    );

    // Swapping in alice's key without her private key fails the signature.
    let mut forged = m.seal_to_vec(b"pretending", 0).unwrap();
    let pk_at = forged.len() - 96;
    forged[pk_at..pk_at + 32].copy_from_slice(&alice.public_key());
    assert_eq!(o.open(&forged, 0, &mut out), Err(OpenError::BadSignature));
}

#[test]
fn clock_skew_check_applies_to_new_sessions_only() {
    let cfg = OpenerConfig {
        max_new_session_skew_us: Some(60_000_000),
        ..Default::default()
    };
    let mut o = Opener::new(&realm(1), cfg);
    let mut s = Sealer::new(&realm(1), name(), false, None).unwrap();
    let old = s.seal_to_vec(b"x", 0).unwrap();
    assert_eq!(
        o.open(&old, 3_600_000_000, &mut Vec::new()),
        Err(OpenError::ClockSkew(3600))
    );
    let ok = s.seal_to_vec(b"x", 3_600_000_000).unwrap();
    o.open(&ok, 3_600_000_000, &mut Vec::new()).unwrap();
}

#[test]
fn garbage_never_panics() {
    let mut o = Opener::new(&realm(1), OpenerConfig::default());
    let mut x: u32 = 7;
    for len in 0..400 {
        let mut buf = vec![0u8; len];
        for b in buf.iter_mut() {
            x = x.wrapping_mul(1664525).wrapping_add(1013904223);
            *b = (x >> 24) as u8;
        }
        if len > 4 {
            buf[0] = 1;
            buf[1] &= 3;
            buf[2] = 0;
            buf[3] = 0;
        }
        assert!(o.open(&buf, 0, &mut Vec::new()).is_err());
    }
}

#[test]
fn clear_text_mode_shows_the_payload_but_refuses_tampering_and_replay() {
    let mut s = Sealer::new(&realm(1), name(), false, None)
        .unwrap()
        .clear_text(true);
    let mut o = Opener::new(&realm(1), OpenerConfig::default());
    let payload: Vec<u8> = (0..4096).map(|i| (i * 7) as u8).collect();
    let env = s.seal_to_vec(&payload, 0).unwrap();
    assert_eq!(env.len(), s.sealed_len(payload.len()));
    assert_eq!(&env[HEADER_LEN..HEADER_LEN + payload.len()], &payload[..]);
    let mut out = Vec::new();
    let opened = o.open(&env, 0, &mut out).unwrap();
    assert!(opened.header.flags.clear());
    assert_eq!(out, payload);
    assert_eq!(o.open(&env, 0, &mut out), Err(OpenError::Replayed(1)));
    // Any change to header, payload or tag, including the CLEAR flag itself, is refused.
    let env = s.seal_to_vec(b"0123456789abcdef", 0).unwrap();
    for i in 0..env.len() {
        for bit in [0x01u8, 0x04, 0x80] {
            let mut bad = env.clone();
            bad[i] ^= bit;
            let mut o = Opener::new(&realm(1), OpenerConfig::default());
            assert!(o.open(&bad, 0, &mut out).is_err(), "flip at {i} accepted");
        }
    }
    // An outsider's clear-text envelope does not authenticate.
    let mut outsider = Sealer::new(&realm(2), name(), false, None)
        .unwrap()
        .clear_text(true);
    let forged = outsider.seal_to_vec(b"inject", 0).unwrap();
    assert_eq!(o.open(&forged, 0, &mut out), Err(OpenError::Forged));
}

#[test]
fn setting_the_clear_flag_on_an_encrypted_envelope_is_refused() {
    let mut s = Sealer::new(&realm(1), name(), false, None).unwrap();
    let mut env = s.seal_to_vec(b"secret payload", 0).unwrap();
    env[1] ^= EnvelopeFlags::CLEAR;
    let mut o = Opener::new(&realm(1), OpenerConfig::default());
    assert_eq!(o.open(&env, 0, &mut Vec::new()), Err(OpenError::Forged));
}

#[test]
fn keep_latest_is_carried_and_cannot_be_altered_by_a_router() {
    let mut s = Sealer::new(&realm(1), name(), false, None)
        .unwrap()
        .keep_latest(true);
    let env = s.seal_to_vec(b"newest image", 0).unwrap();
    let mut o = Opener::new(&realm(1), OpenerConfig::default());
    let mut out = Vec::new();
    let opened = o.open(&env, 0, &mut out).unwrap();
    assert!(opened.header.flags.keep_latest());
    assert_eq!(out, b"newest image");
    // Routers read the bit; flipping it either way fails authentication.
    let mut plain = Sealer::new(&realm(1), name(), false, None).unwrap();
    for mut e in [env, plain.seal_to_vec(b"every image", 0).unwrap()] {
        e[1] ^= EnvelopeFlags::KEEP_LATEST;
        let mut fresh = Opener::new(&realm(1), OpenerConfig::default());
        assert_eq!(fresh.open(&e, 0, &mut out), Err(OpenError::Forged));
    }
}

#[test]
fn signed_clear_text_names_the_member() {
    let id = Arc::new(SigningIdentity::from_seed(&[9; 32]));
    let mut s = Sealer::new(&realm(1), name(), false, Some(id.clone()))
        .unwrap()
        .clear_text(true);
    let mut members = HashMap::new();
    members.insert(id.public_key(), "robot".to_string());
    let mut o = Opener::new(
        &realm(1),
        OpenerConfig {
            members,
            require_signed: true,
            ..OpenerConfig::default()
        },
    );
    let env = s.seal_to_vec(b"hello", 0).unwrap();
    let mut out = Vec::new();
    let opened = o.open(&env, 0, &mut out).unwrap();
    assert_eq!(out, b"hello");
    assert_eq!(opened.signer.as_deref(), Some("robot"));
}

#[test]
fn lifecycle_envelopes_say_so_and_the_kind_cannot_be_altered() {
    let mut s = Sealer::new(&realm(1), name(), false, None).unwrap();
    let mut o = Opener::new(&realm(1), OpenerConfig::default());
    let mut out = Vec::new();
    let key = b"\x00\x01\x00\x00robot 7";
    let env = {
        let mut b = Vec::new();
        s.seal_kind(PayloadKind::Dispose, key, 5, &mut b).unwrap();
        b
    };
    let opened = o.open(&env, 5, &mut out).unwrap();
    assert_eq!(opened.header.flags.payload_kind(), PayloadKind::Dispose);
    assert_eq!(out, key);
    // The next envelope of the session is data again.
    let data = s.seal_to_vec(b"x", 6).unwrap();
    let opened = o.open(&data, 6, &mut out).unwrap();
    assert_eq!(opened.header.flags.payload_kind(), PayloadKind::Data);
    // Turning a dispose into an unregister (or into data) breaks the tag.
    let mut forged = env.clone();
    forged[1] = (forged[1] & !EnvelopeFlags::DISPOSE) | EnvelopeFlags::UNREGISTER;
    let mut o2 = Opener::new(&realm(1), OpenerConfig::default());
    assert_eq!(
        o2.open(&forged, 5, &mut out).unwrap_err(),
        OpenError::Forged
    );
}

#[test]
fn source_time_travels_sealed_after_the_payload_in_every_mode() {
    let source = 1_764_000_000_123_456_789u64;
    let robot = Arc::new(SigningIdentity::from_seed(&[1; 32]));
    let members = HashMap::from([(robot.public_key(), "robot".to_string())]);
    for (clear, signed) in [(false, false), (true, false), (false, true), (true, true)] {
        let signer = signed.then(|| robot.clone());
        let mut s = Sealer::new(&realm(1), name(), false, signer)
            .unwrap()
            .clear_text(clear);
        let config = OpenerConfig {
            members: members.clone(),
            ..OpenerConfig::default()
        };
        let mut o = Opener::new(&realm(1), config);
        let (mut env, mut out) = (Vec::new(), Vec::new());
        for payload in [&b""[..], b"hello", &[9u8; 5000][..]] {
            s.seal_at(PayloadKind::Data, payload, 5, Some(source), &mut env)
                .unwrap();
            assert_eq!(env.len(), s.sealed_len(payload.len() + SOURCE_TIME_LEN));
            let opened = o.open(&env, 5, &mut out).unwrap();
            assert_eq!(out, payload, "clear {clear} signed {signed}");
            assert_eq!(opened.source_time_ns, Some(source));
            assert!(opened.header.flags.source_time());
            if !clear {
                // Encrypted with the payload: not in the clear.
                assert!(!env.windows(8).any(|w| w == source.to_be_bytes()));
            }
        }
        // Without one, none comes out, and the plaintext is the payload alone.
        s.seal_kind(PayloadKind::Data, b"plain", 6, &mut env)
            .unwrap();
        let opened = o.open(&env, 6, &mut out).unwrap();
        assert_eq!(
            (out.as_slice(), opened.source_time_ns),
            (&b"plain"[..], None)
        );
    }
}

#[test]
fn a_source_time_cannot_be_altered_added_or_removed() {
    let mut s = Sealer::new(&realm(1), name(), false, None)
        .unwrap()
        .clear_text(true);
    let mut out = Vec::new();
    let mut env = Vec::new();
    s.seal_at(PayloadKind::Data, b"hello", 5, Some(42), &mut env)
        .unwrap();
    // Clear text shows it; changing it breaks the tag.
    let at = HEADER_LEN + 5;
    assert_eq!(env[at..at + 8], 42u64.to_be_bytes());
    let mut forged = env.clone();
    forged[at + 7] ^= 1;
    let mut o = Opener::new(&realm(1), OpenerConfig::default());
    assert_eq!(o.open(&forged, 5, &mut out), Err(OpenError::Forged));
    // Clearing the flag (to pass the time off as payload) breaks it too.
    let mut forged = env.clone();
    forged[1] &= !EnvelopeFlags::SOURCE_TIME;
    assert_eq!(o.open(&forged, 5, &mut out), Err(OpenError::Forged));
    // Setting it on an envelope too short to hold one is malformed, not a panic.
    let mut short = Sealer::new(&realm(1), name(), false, None).unwrap();
    let mut tiny = short.seal_to_vec(b"", 7).unwrap();
    tiny[1] |= EnvelopeFlags::SOURCE_TIME;
    assert!(matches!(
        o.open(&tiny, 7, &mut out),
        Err(OpenError::Malformed(EnvelopeError::TooShort))
    ));
    assert!(o.open(&env, 5, &mut out).is_ok());
}

#[test]
fn a_rotation_keeps_the_session_and_shuts_out_who_lacks_the_new_epoch() {
    use crate::epoch::Keys;
    let publisher_keys = Keys::new(&realm(1));
    let member_keys = Keys::new(&realm(1));
    let mut s = Sealer::with_keys(&publisher_keys, name(), false, None).unwrap();
    let mut member = Opener::with_keys(&member_keys, OpenerConfig::default());
    // A removed member: it keeps its realm file (epoch 0) and nothing after.
    let mut removed = Opener::new(&realm(1), OpenerConfig::default());
    let mut out = Vec::new();
    let before = s.seal_to_vec(b"epoch 0", 0).unwrap();
    assert_eq!(EnvelopeHeader::parse(&before).unwrap().epoch, 0);
    member.open(&before, 0, &mut out).unwrap();
    removed.open(&before, 0, &mut out).unwrap();

    let next = RealmSecret::from_bytes([2; 32]);
    // Receivers install first, the publisher switches after: nothing is unreadable between.
    member_keys.install(1, &next);
    publisher_keys.install(1, &next);
    let still_0 = s.seal_to_vec(b"still 0", 0).unwrap();
    publisher_keys.seal_with(1).unwrap();
    let after = s.seal_to_vec(b"epoch 1", 0).unwrap();
    let h = EnvelopeHeader::parse(&after).unwrap();
    assert_eq!((h.epoch, h.session, h.seq), (1, s.session(), 3));
    member.open(&after, 0, &mut out).unwrap();
    assert_eq!(out, b"epoch 1");
    // An envelope of epoch 0 still in flight opens during the grace period, once.
    member.open(&still_0, 0, &mut out).unwrap();
    assert_eq!(out, b"still 0");
    assert_eq!(
        member.open(&still_0, 0, &mut out),
        Err(OpenError::Replayed(2))
    );
    assert_eq!(removed.open(&after, 0, &mut out), Err(OpenError::Epoch(1)));
    assert_eq!(removed.stats().epoch, 1);

    // After retirement epoch 0 opens no more, even on a session the opener already knows.
    member_keys.seal_with(1).unwrap();
    member_keys.retire(0).unwrap();
    let mut old = Sealer::new(&realm(1), name(), false, None).unwrap();
    let stale = old.seal_to_vec(b"sealed by the removed member", 0).unwrap();
    assert_eq!(member.open(&stale, 0, &mut out), Err(OpenError::Epoch(0)));
    let mut forged = after.clone();
    forged[3] = 0; // epoch 1 -> 0 in the header: authenticated, so refused
    assert_eq!(member.open(&forged, 0, &mut out), Err(OpenError::Epoch(0)));
    let mut bumped = after.clone();
    bumped[3] = 7;
    assert_eq!(member.open(&bumped, 0, &mut out), Err(OpenError::Epoch(7)));
}
