use super::*;

fn key(b: u8) -> MemberKey {
    MemberKey::from_seed(&[b; 32])
}

fn terms(members: &[(&str, &MemberKey)]) -> EpochTerms {
    EpochTerms {
        realm: [9; 32],
        epoch: 1,
        issued_ms: 1_000,
        switch_after_ms: 2_000,
        retire_after_ms: 10_000,
        admins: vec!["ops".into()],
        members: members
            .iter()
            .map(|(n, k)| (n.to_string(), k.public_key()))
            .collect(),
    }
}

fn view(members: &[(&str, &MemberKey)]) -> HashMap<String, [u8; 32]> {
    members
        .iter()
        .map(|(n, k)| (n.to_string(), k.public_key()))
        .collect()
}

#[test]
fn each_member_opens_its_own_copy_and_nobody_else_does() {
    let (ops, robot, laptop, thief) = (key(1), key(2), key(3), key(4));
    let members = [("ops", &ops), ("robot", &robot), ("laptop", &laptop)];
    let secret = RealmSecret::from_bytes([0x5a; 32]);
    let record = EpochRecord::issue(terms(&members), &secret, "ops", &ops).unwrap();
    let parsed = EpochRecord::parse(record.bytes()).unwrap();
    assert_eq!(parsed, record);
    let admins = vec!["ops".to_string()];
    parsed.verify(&[9; 32], &admins, &view(&members)).unwrap();
    for (name, k) in members {
        assert_eq!(parsed.open(name, k).unwrap(), secret);
    }
    // A removed member holds no copy; another member's copy does not open with its key.
    assert_eq!(
        parsed.open("thief", &thief),
        Err(RecordError::NotSealedTo("thief".into()))
    );
    assert_eq!(
        parsed.open("robot", &thief),
        Err(RecordError::Unsealable("robot".into()))
    );
    // A copy moved to another member's name does not open either (the name is HPKE's aad).
    let mut moved = parsed.clone();
    moved.sealed.swap(1, 2);
    moved.sealed[1].0 = "robot".into();
    assert!(moved.open("robot", &robot).is_err());
}

#[test]
fn only_an_administrator_of_the_verifiers_view_starts_an_epoch() {
    let (ops, robot) = (key(1), key(2));
    let members = [("ops", &ops), ("robot", &robot)];
    let secret = RealmSecret::from_bytes([1; 32]);
    let admins = vec!["ops".to_string()];
    // A member that names itself administrator in the record it signs.
    let mut t = terms(&members);
    t.admins = vec!["robot".into()];
    let forged = EpochRecord::issue(t, &secret, "robot", &robot).unwrap();
    assert_eq!(
        forged.verify(&[9; 32], &admins, &view(&members)),
        Err(RecordError::NotAdmin("robot".into()))
    );
    // A record signed with another key than the one the verifier holds for the admin.
    let impostor = EpochRecord::issue(terms(&members), &secret, "ops", &robot).unwrap();
    assert_eq!(
        impostor.verify(&[9; 32], &admins, &view(&members)),
        Err(RecordError::BadSignature("ops".into()))
    );
    assert!(impostor.verify_self_consistent().is_err());
    // Another realm's record.
    let good = EpochRecord::issue(terms(&members), &secret, "ops", &ops).unwrap();
    assert_eq!(
        good.verify(&[8; 32], &admins, &view(&members)),
        Err(RecordError::OtherRealm)
    );
    good.verify_self_consistent().unwrap();
    // Any flipped byte is refused, by the parser or the signature.
    for i in 0..good.bytes().len() {
        let mut b = good.bytes().to_vec();
        b[i] ^= 0x01;
        let ok = EpochRecord::parse(&b)
            .and_then(|r| r.verify(&[9; 32], &admins, &view(&members)))
            .is_ok();
        assert!(!ok, "byte {i} flipped was accepted");
    }
}

#[test]
fn statuses_are_signed_by_the_member_they_name() {
    let (ops, robot) = (key(1), key(2));
    let members = view(&[("ops", &ops), ("robot", &robot)]);
    let s = MemberStatus {
        realm: [9; 32],
        member: "robot".into(),
        epoch: 3,
        sent_ms: 7,
        ask: true,
    };
    let bytes = s.encode(&robot);
    assert_eq!(message_kind(&bytes), Some(Message::Status));
    assert_eq!(MemberStatus::parse(&bytes, &[9; 32], &members).unwrap(), s);
    assert_eq!(
        MemberStatus::parse(&s.encode(&ops), &[9; 32], &members),
        Err(RecordError::BadSignature("robot".into()))
    );
    assert_eq!(
        MemberStatus::parse(&bytes, &[8; 32], &members),
        Err(RecordError::OtherRealm)
    );
    let mut other = s.clone();
    other.member = "stranger".into();
    assert_eq!(
        MemberStatus::parse(&other.encode(&robot), &[9; 32], &members),
        Err(RecordError::UnknownMember("stranger".into()))
    );
}

#[test]
fn truncated_and_oversized_input_is_an_error() {
    let ops = key(1);
    let record = EpochRecord::issue(
        terms(&[("ops", &ops)]),
        &RealmSecret::from_bytes([1; 32]),
        "ops",
        &ops,
    )
    .unwrap();
    assert_eq!(message_kind(record.bytes()), Some(Message::Record));
    for len in 0..record.bytes().len() {
        assert!(EpochRecord::parse(&record.bytes()[..len]).is_err());
    }
    let mut long = record.bytes().to_vec();
    long.push(0);
    assert!(EpochRecord::parse(&long).is_err());
    assert_eq!(
        EpochRecord::parse(&vec![0; MAX_RECORD_BYTES + 1]),
        Err(RecordError::TooLarge)
    );
    assert_eq!(message_kind(b"RM"), None);
}

#[test]
fn a_pkcs8_identity_key_is_the_member_key() {
    // PKCS#8 v1 as `roam pki issue` writes it.
    let mut der = vec![
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04,
        0x20,
    ];
    der.extend_from_slice(&[7; 32]);
    let k = MemberKey::from_pkcs8(&der).unwrap();
    assert_eq!(k.public_key(), key(7).public_key());
    assert!(MemberKey::from_pkcs8(&der[..40]).is_err());
    // The Montgomery form of a real key is a valid X25519 key; a small-order point is refused.
    assert!(x25519_public(&k.public_key()).is_some());
    let mut identity = [0u8; 32];
    identity[0] = 1;
    assert_eq!(x25519_public(&identity), None);
}
