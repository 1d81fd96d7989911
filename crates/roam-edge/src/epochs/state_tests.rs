use super::*;
use roam_proto::epoch_record::EpochTerms;

const REALM: [u8; 32] = [3; 32];

fn key(b: u8) -> MemberKey {
    MemberKey::from_seed(&[b; 32])
}

fn membership(members: &[(&str, &MemberKey)], admins: &[&str]) -> Membership {
    Membership {
        admins: admins.iter().map(|a| a.to_string()).collect(),
        members: members
            .iter()
            .map(|(n, k)| (n.to_string(), k.public_key()))
            .collect(),
    }
}

fn record(epoch: Epoch, members: &[(&str, &MemberKey)], by: (&str, &MemberKey)) -> EpochRecord {
    EpochRecord::issue(
        EpochTerms {
            realm: REALM,
            epoch,
            issued_ms: 0,
            switch_after_ms: 1_000,
            retire_after_ms: 5_000,
            admins: vec!["ops".into()],
            members: members
                .iter()
                .map(|(n, k)| (n.to_string(), k.public_key()))
                .collect(),
        },
        &RealmSecret::from_bytes([epoch as u8; 32]),
        by.0,
        by.1,
    )
    .unwrap()
}

#[test]
fn a_member_installs_at_once_switches_later_and_retires_last() {
    let (ops, robot, thief) = (key(1), key(2), key(3));
    let all = [("ops", &ops), ("robot", &robot), ("thief", &thief)];
    let mut s = EpochState::new(REALM, "robot", membership(&all, &["ops"]));
    let r1 = record(1, &[("ops", &ops), ("robot", &robot)], ("ops", &ops));
    let offer = s.offer_record(r1.bytes(), &robot, 10_000).unwrap();
    assert_eq!(
        offer,
        Offer::Took(1, vec![Step::Install(1, RealmSecret::from_bytes([1; 32]))])
    );
    assert_eq!((s.stats().newest, s.stats().sealing), (1, 0));
    assert_eq!(s.next_due(), Some(11_000));
    assert!(s.due(10_999).is_empty());
    assert_eq!(s.due(11_000), vec![Step::SealWith(1)]);
    assert_eq!(s.stats().sealing, 1);
    assert_eq!(s.due(15_000), vec![Step::RetireBefore(1)]);
    assert_eq!(s.next_due(), None);
    // The same record again changes nothing; the removed member's statuses are refused now.
    assert_eq!(
        s.offer_record(r1.bytes(), &robot, 20_000).unwrap(),
        Offer::Same
    );
    let from_thief = MemberStatus {
        realm: REALM,
        member: "thief".into(),
        epoch: 0,
        sent_ms: 0,
        ask: false,
    }
    .encode(&thief);
    assert!(s.offer_status(&from_thief, 20_000).is_err());
    assert_eq!(s.stats().statuses_refused, 1);
}

#[test]
fn the_removed_member_learns_it_holds_nothing_new() {
    let (ops, robot, thief) = (key(1), key(2), key(3));
    let all = [("ops", &ops), ("robot", &robot), ("thief", &thief)];
    let mut s = EpochState::new(REALM, "thief", membership(&all, &["ops"]));
    let r1 = record(1, &[("ops", &ops), ("robot", &robot)], ("ops", &ops));
    assert_eq!(
        s.offer_record(r1.bytes(), &thief, 0).unwrap(),
        Offer::Removed(1)
    );
    assert!(s.stats().removed);
    assert_eq!(s.stats().sealing, 0);
    assert!(s.due(u64::MAX).is_empty());
}

#[test]
fn only_the_views_administrators_start_epochs_and_old_records_are_answered() {
    let (ops, robot) = (key(1), key(2));
    let both = [("ops", &ops), ("robot", &robot)];
    let mut s = EpochState::new(REALM, "robot", membership(&both, &["ops"]));
    // A member that signs a record itself is refused and counted.
    let forged = record(1, &both, ("robot", &robot));
    assert_eq!(
        s.offer_record(forged.bytes(), &robot, 0),
        Err(RecordError::NotAdmin("robot".into()))
    );
    assert!(s.offer_record(b"RMEP\x01 junk", &robot, 0).is_err());
    assert_eq!(s.stats().records_refused, 2);
    let r2 = record(2, &both, ("ops", &ops));
    assert!(matches!(
        s.offer_record(r2.bytes(), &robot, 0).unwrap(),
        Offer::Took(2, _)
    ));
    // A replayed older epoch is not taken; its sender is behind.
    let r1 = record(1, &both, ("ops", &ops));
    assert_eq!(s.offer_record(r1.bytes(), &robot, 0).unwrap(), Offer::Older);
    assert_eq!(s.stats().newest, 2);
    // A member that says it is in epoch 0 is behind and gets this member's record.
    let status = MemberStatus {
        realm: REALM,
        member: "ops".into(),
        epoch: 0,
        sent_ms: 0,
        ask: false,
    };
    assert_eq!(
        s.offer_status(&status.encode(&ops), 5).unwrap(),
        Answer {
            record: true,
            status: true
        }
    );
    // Heard again within its period: its record still, not this member's status again.
    assert_eq!(
        s.offer_status(&status.encode(&ops), 6_000).unwrap(),
        Answer {
            record: true,
            status: false
        }
    );
    assert!(s.offer_status(&status.encode(&ops), 20_000).unwrap().status);
    assert_eq!(
        s.peers()["ops"],
        PeerEpoch {
            epoch: 0,
            seen_ms: 20_000
        }
    );
}

#[test]
fn a_kept_record_is_in_force_at_once() {
    let (ops, robot) = (key(1), key(2));
    let both = [("ops", &ops), ("robot", &robot)];
    let mut s = EpochState::new(REALM, "robot", Membership::default());
    let steps = s.resume(record(4, &both, ("ops", &ops)), &robot).unwrap();
    assert_eq!(
        steps,
        vec![
            Step::Install(4, RealmSecret::from_bytes([4; 32])),
            Step::SealWith(4),
            Step::RetireBefore(4)
        ]
    );
    assert_eq!(s.status(9).epoch, 4);
    assert_eq!(s.membership().admins, vec!["ops".to_string()]);
}
