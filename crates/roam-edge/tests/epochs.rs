//! Realm epochs on a real router (in process) over real client links (QUIC on loopback): an
//! administrator rotates the realm while a reliable topic streams, and removes a member.

use std::sync::Arc;
use std::time::Duration;

use roam_edge::epochs::{self, rotate};
use roam_edge::{Edge, Event, Port, Realm, StreamSpec, SubscriberOptions, TopicRef};
use roam_pki::{self as pki, Validity};
use roam_proto::epoch_record::MemberKey;
use roam_proto::frame::Role;

mod support;
use support::{client, pki_dir, router, Dir, T};

const TYPE: &str = "std_msgs::msg::dds_::UInt32_";

fn member_key(dir: &Dir, name: &str) -> MemberKey {
    let id = pki::load_identity(&dir.0, name).unwrap();
    MemberKey::from_pkcs8(&id.signing_pkcs8).unwrap()
}

/// One realm file per member, copies of the administrator's: each keeps its own epoch file.
fn realm_files(dir: &Dir, members: &[&str]) -> Vec<Arc<Realm>> {
    let ops = dir.0.join("ops.realm");
    roam_edge::realm::create(&ops, "warehouse").unwrap();
    for m in members {
        let pk = member_key(dir, m).public_key();
        roam_edge::realm::add_member(&ops, m, &pk).unwrap();
    }
    roam_edge::realm::add_admin(&ops, "ops").unwrap();
    members
        .iter()
        .map(|m| {
            let file = dir.0.join(format!("{m}.realm"));
            if *m != "ops" {
                std::fs::copy(&ops, &file).unwrap();
            }
            Arc::new(roam_edge::realm::load(&file).unwrap())
        })
        .collect()
}

/// The counter of the messages that only show a reader's route is up.
const WARM_UP: u32 = u32::MAX;

/// Reads `topic` until `done`; returns each counted message's (epoch, counter). `progress`
/// says whether a warm-up message came, and how many counted ones.
async fn collect(
    edge: Edge,
    topic: TopicRef,
    done: tokio::sync::watch::Receiver<bool>,
    progress: tokio::sync::watch::Sender<(bool, usize)>,
) -> (Vec<(u16, u32)>, u64) {
    let mut sub = edge.subscriber(&topic, SubscriberOptions::default()).await;
    let mut got = Vec::new();
    let mut buf = Vec::new();
    loop {
        let idle = tokio::time::timeout(Duration::from_millis(500), sub.recv(&mut buf)).await;
        match idle {
            Ok(Some(Event::Message(r))) => {
                let n = u32::from_be_bytes(buf[..4].try_into().unwrap());
                if n != WARM_UP {
                    got.push((r.header.epoch, n));
                }
                progress.send_replace((true, got.len()));
            }
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(_) if *done.borrow() => break,
            Err(_) => {}
        }
    }
    (got, sub.open_stats().epoch)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotation_under_load_loses_nothing_and_shuts_the_removed_member_out() {
    let dir = pki_dir("epochs");
    let r = router(&dir, "r").await;
    let names = ["ops", "robot", "laptop", "thief"];
    let edges: Vec<Edge> = names
        .iter()
        .map(|n| Edge::new(Port::Client(client(&dir, n, &r)), *n))
        .collect();
    let realms = realm_files(&dir, &names);
    // Every member but the administrator's tool follows the realm's epochs.
    let mut followers = Vec::new();
    for i in 1..4 {
        followers.push(
            epochs::follow(&edges[i], &realms[i], member_key(&dir, names[i]))
                .await
                .unwrap(),
        );
    }
    let (done_tx, done) = tokio::sync::watch::channel(false);
    let (laptop_seen, mut laptop_progress) = tokio::sync::watch::channel((false, 0));
    let (thief_seen, thief_progress) = tokio::sync::watch::channel((false, 0));
    let laptop = tokio::spawn(collect(
        edges[2].clone(),
        TopicRef::new(realms[2].clone(), "/count"),
        done.clone(),
        laptop_seen,
    ));
    let thief = tokio::spawn(collect(
        edges[3].clone(),
        TopicRef::new(realms[3].clone(), "/count"),
        done.clone(),
        thief_seen,
    ));
    let publisher = edges[1]
        .publisher(
            &TopicRef::new(realms[1].clone(), "/count"),
            StreamSpec::new(TYPE),
        )
        .await
        .unwrap();
    let mut demand = publisher.demand();
    tokio::time::timeout(T, demand.wait_for(|d| *d))
        .await
        .unwrap()
        .unwrap();
    // Both readers' routes are up before counting starts (the second reader's subscription
    // may reach the router a moment after the first's): warm-up messages until both read one.
    let end = tokio::time::Instant::now() + T;
    while !(laptop_progress.borrow().0 && thief_progress.borrow().0) {
        assert!(
            tokio::time::Instant::now() < end,
            "a reader never got a route"
        );
        publisher.publish(&WARM_UP.to_be_bytes()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    const N: u32 = 4_000;
    let pace = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(1));
        for i in 0..N {
            tick.tick().await;
            publisher.publish(&i.to_be_bytes()).await.unwrap();
        }
        publisher
    });
    // The rotation starts with the stream well under way.
    tokio::time::timeout(T, laptop_progress.wait_for(|p| p.1 >= 500))
        .await
        .unwrap()
        .unwrap();
    let options = rotate::RotateOptions {
        remove: vec!["thief".into()],
        switch_after: Duration::from_millis(500),
        retire_after: Duration::from_millis(1_500),
    };
    let record = rotate::next_epoch(&realms[0], "ops", &member_key(&dir, "ops"), &options).unwrap();
    assert_eq!(record.terms.epoch, 1);
    let out = rotate::hand_out(&edges[0], &realms[0], &record, T, |_| {})
        .await
        .unwrap();
    assert_eq!(
        out.switched.iter().map(String::as_str).collect::<Vec<_>>(),
        vec!["laptop", "robot"]
    );
    // The removed member is not waited for: it is not in the new epoch.
    assert!(out.missing.is_empty(), "{:?}", out.missing);
    let _publisher = pace.await.unwrap();
    done_tx.send_replace(true);
    let (laptop, _) = laptop.await.unwrap();
    let (thief, thief_refused) = thief.await.unwrap();

    // The remaining member: every message once, in order, across the switch.
    let counts: Vec<u32> = laptop.iter().map(|(_, c)| *c).collect();
    assert_eq!(counts, (0..N).collect::<Vec<_>>());
    let switched_at = laptop
        .iter()
        .position(|(e, _)| *e == 1)
        .expect("epoch 1 reached the laptop");
    assert!(laptop[switched_at..].iter().all(|(e, _)| *e == 1));
    // The removed member opened nothing of the new epoch, and was refused the rest.
    assert!(
        thief.iter().all(|(e, _)| *e == 0),
        "the thief opened epoch 1"
    );
    assert!(
        thief.len() as u64 + thief_refused >= u64::from(N),
        "{} + {thief_refused}",
        thief.len()
    );
    assert!(thief_refused > 0);
    // The followers' reports say the same.
    let report = followers[2].report().borrow().clone();
    assert!(report.stats.removed && report.stats.sealing == 0);
    let report = followers[1].report().borrow().clone();
    assert_eq!((report.stats.sealing, report.stats.newest), (1, 1));
    // Each remaining member kept the epoch beside its realm file; the thief's file says it
    // was left out, and the administrator's realm file no longer lists it.
    assert!(epochs::store::read(&realms[2].path).unwrap().is_some());
    let reloaded = roam_edge::realm::load(&realms[0].path).unwrap();
    assert!(!reloaded.members_by_name().contains_key("thief"));
    drop(followers);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_was_away_catches_up_and_a_non_administrator_cannot_rotate() {
    let dir = pki_dir("epochs-away");
    let r = router(&dir, "r").await;
    let names = ["ops", "robot", "laptop"];
    for n in names {
        pki::issue(&dir.0, n, Role::Client, Validity::days(1)).unwrap();
    }
    let realms = realm_files(&dir, &names);
    let ops = Edge::new(Port::Router(r.clone()), "ops");
    let robot = Edge::new(Port::Router(r.clone()), "robot");
    let follower = epochs::follow(&robot, &realms[1], member_key(&dir, "robot"))
        .await
        .unwrap();
    // A member that is not an administrator is refused before anything is sent.
    let not_admin = rotate::next_epoch(
        &realms[1],
        "robot",
        &member_key(&dir, "robot"),
        &Default::default(),
    );
    assert!(
        matches!(not_admin, Err(rotate::RotateError::NotAdmin(_))),
        "{not_admin:?}"
    );
    let options = rotate::RotateOptions {
        switch_after: Duration::from_millis(100),
        retire_after: Duration::from_millis(200),
        ..Default::default()
    };
    let record = rotate::next_epoch(&realms[0], "ops", &member_key(&dir, "ops"), &options).unwrap();
    // The laptop is away: the hand-out gives up on it.
    let out = rotate::hand_out(&ops, &realms[0], &record, Duration::from_secs(3), |_| {})
        .await
        .unwrap();
    assert!(out.switched.contains("robot") && out.missing.contains("laptop"));
    // It comes back: the robot sees its status and passes the record on.
    let laptop = Edge::new(Port::Router(r.clone()), "laptop");
    let back = epochs::follow(&laptop, &realms[2], member_key(&dir, "laptop"))
        .await
        .unwrap();
    let mut report = back.report();
    tokio::time::timeout(T, report.wait_for(|r| r.stats.sealing == 1))
        .await
        .expect("the laptop caught up")
        .unwrap();
    drop((follower, back));
}
