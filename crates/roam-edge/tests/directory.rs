//! The realm directory on a real router (in process) and over a real client link (QUIC on
//! loopback): announcers are heard as soon as a view listens, changes arrive at once, a closed
//! announcer's member is forgotten at once, and nobody can speak for another member.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use roam_edge::directory::{DirectoryView, ItemKind, Listing, Progress, Role};
use roam_edge::{Edge, Port};
use roam_proto::directory::DirectoryItem;
use roam_proto::{SigningIdentity, StreamQos};

mod support;
use support::{client, pki_dir, realm_with_members as realm, router, T};

fn item(kind: ItemKind, role: Role, name: &str, ty: &str) -> DirectoryItem {
    DirectoryItem {
        kind,
        role,
        name: name.into(),
        types: vec![ty.into()],
        qos: vec![],
    }
}

/// Waits until the view's listing satisfies `want`.
async fn until(view: &DirectoryView, what: &str, want: impl Fn(&Listing, Progress) -> bool) {
    let mut progress = view.progress();
    let end = Instant::now() + T;
    loop {
        let p = *progress.borrow_and_update();
        if want(&view.listing(), p) {
            return;
        }
        let left = end.saturating_duration_since(Instant::now());
        assert!(
            tokio::time::timeout(left, progress.changed()).await.is_ok(),
            "{what}: not seen within {T:?}; listing {:?}, progress {p:?}",
            view.listing()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_over_a_client_link_hears_every_member_and_each_change_at_once() {
    let dir = pki_dir("hears");
    let r = router(&dir, "r").await;
    let realm = realm(HashMap::new());
    let robot = Edge::new(Port::Router(r.clone()), "robot");
    let base = Edge::new(Port::Router(r.clone()), "base");
    let a = robot.directory_announcer(realm.clone()).await.unwrap();
    let mut chatter = item(
        ItemKind::Topic,
        Role::Offers,
        "/chatter",
        "std_msgs/msg/String",
    );
    chatter.qos.push(StreamQos {
        reliable: true,
        transient_local: true,
        depth: 1,
    });
    a.set(vec![
        chatter,
        item(
            ItemKind::Service,
            Role::Offers,
            "/add",
            "example_interfaces/srv/AddTwoInts",
        ),
    ]);
    let b = base.directory_announcer(realm.clone()).await.unwrap();
    b.set(vec![item(
        ItemKind::Topic,
        Role::Imports,
        "/chatter",
        "std_msgs/msg/String",
    )]);

    let tool = Edge::new(Port::Client(client(&dir, "laptop", &r)), "laptop");
    let view = tool.directory_view(realm.clone()).await;
    until(&view, "both members", |l, _| l.members == ["base", "robot"]).await;
    let l = view.listing();
    assert_eq!(l.topics.len(), 1);
    assert_eq!(l.topics[0].name, "/chatter");
    assert_eq!(l.topics[0].types, ["std_msgs/msg/String"]);
    assert_eq!(l.topics[0].offered_by[0].member, "robot");
    assert_eq!(
        l.topics[0].offered_by[0].qos[0].to_string(),
        "reliable, transient-local, depth 1"
    );
    assert_eq!(l.topics[0].imported_by[0].member, "base");
    assert_eq!(l.services[0].name, "/add");

    // A change is heard at once (well before the next period's repeat), ...
    b.set(vec![item(
        ItemKind::Topic,
        Role::Imports,
        "/scan",
        "sensor_msgs/msg/LaserScan",
    )]);
    until(&view, "the change", |l, _| {
        l.topics.iter().any(|t| t.name == "/scan")
    })
    .await;
    // ... the entries keep coming while the view listens, ...
    let heard = view.progress().borrow().heard;
    until(&view, "repeats", |_, p| p.heard >= heard + 2).await;
    // ... and a closed announcer's member is forgotten at once (long before its expiry).
    a.close().await;
    until(&view, "robot gone", |l, _| l.members == ["base"]).await;
    assert!(view.listing().services.is_empty());
    assert_eq!(view.progress().borrow().refused, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_signed_realm_an_entry_must_be_signed_by_the_member_it_names() {
    let dir = pki_dir("signed");
    let r = router(&dir, "r").await;
    let honest = Arc::new(SigningIdentity::from_seed(&[1; 32]));
    let liar = Arc::new(SigningIdentity::from_seed(&[2; 32]));
    let members = HashMap::from([
        (honest.public_key(), "robot".to_string()),
        (liar.public_key(), "intruder".to_string()),
    ]);
    let realm = realm(members);
    // "intruder" is a member, but names itself "robot" in its entry.
    let spoof = Edge::signed(Port::Router(r.clone()), "robot", liar);
    let s = spoof.directory_announcer(realm.clone()).await.unwrap();
    s.set(vec![item(
        ItemKind::Topic,
        Role::Offers,
        "/fake",
        "x/msg/Y",
    )]);
    let real = Edge::signed(Port::Router(r.clone()), "robot", honest);
    let a = real.directory_announcer(realm.clone()).await.unwrap();
    a.set(vec![item(
        ItemKind::Topic,
        Role::Offers,
        "/real",
        "x/msg/Y",
    )]);
    // Unsigned entries are refused too.
    let unsigned = Edge::new(Port::Router(r.clone()), "anon");
    let u = unsigned.directory_announcer(realm.clone()).await.unwrap();
    u.set(vec![item(
        ItemKind::Topic,
        Role::Offers,
        "/anon",
        "x/msg/Y",
    )]);

    let view = Edge::new(Port::Router(r.clone()), "viewer")
        .directory_view(realm.clone())
        .await;
    until(
        &view,
        "the honest entry and refusals of the others",
        |l, p| l.topics.iter().any(|t| t.name == "/real") && p.refused >= 2,
    )
    .await;
    // Refused again and again, never listed.
    until(&view, "more refusals", |_, p| p.refused >= 4).await;
    let names: Vec<String> = view.listing().topics.into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["/real"]);
}

/// What a robot's proxy lists: the topic it exports.
fn offers_chatter() -> DirectoryItem {
    item(
        ItemKind::Topic,
        Role::Offers,
        "/chatter",
        "std_msgs/msg/String",
    )
}

/// What a gateway door's client lists: a topic it reads.
fn imports_scan() -> DirectoryItem {
    item(
        ItemKind::Topic,
        Role::Imports,
        "/scan",
        "sensor_msgs/msg/LaserScan",
    )
}

/// A proxy that also opens gateway doors lists things from two parts: both go into the one
/// entry of its member name. Two entries under one name would replace each other in every
/// view, and the realm's listing would flip between them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_parts_of_one_process_share_its_one_entry() {
    let dir = pki_dir("parts");
    let r = router(&dir, "r").await;
    let realm = realm(HashMap::new());
    let robot = Edge::new(Port::Router(r.clone()), "robot");
    let proxy = robot.directory_announcer(realm.clone()).await.unwrap();
    proxy.set(vec![offers_chatter()]);
    // The doors' part: no client yet, nothing listed.
    let doors = robot.directory_announcer(realm.clone()).await.unwrap();
    doors.set(vec![]);

    let tool = Edge::new(Port::Client(client(&dir, "laptop", &r)), "laptop");
    let views = [
        tool.directory_view(realm.clone()).await,
        robot.directory_view(realm.clone()).await,
    ];
    let has = |l: &Listing, name: &str| l.topics.iter().any(|t| t.name == name);
    for view in &views {
        until(view, "the proxy's topic", |l, _| has(l, "/chatter")).await;
    }
    // Entry after entry, for several periods, the topic stays listed.
    let mut progress = views[0].progress();
    let from = progress.borrow().heard;
    while progress.borrow_and_update().heard < from + 4 {
        assert!(
            has(&views[0].listing(), "/chatter"),
            "{:?}",
            views[0].listing()
        );
        tokio::time::timeout(T, progress.changed())
            .await
            .expect("entries keep coming")
            .unwrap();
    }
    // What either part lists is in the entry, ...
    doors.set(vec![imports_scan()]);
    for view in &views {
        until(view, "both parts' topics", |l, _| {
            has(l, "/chatter") && has(l, "/scan") && l.members == ["robot"]
        })
        .await;
    }
    // ... a part that closes takes only its own items, ...
    proxy.close().await;
    until(&views[0], "the proxy's part gone", |l, _| {
        !has(l, "/chatter") && has(l, "/scan")
    })
    .await;
    // ... and the last part's going empties the entry at once.
    doors.close().await;
    until(&views[0], "robot gone", |l, _| l.members.is_empty()).await;

    // A stopping process leaves the realm whatever its other parts list.
    let proxy = robot.directory_announcer(realm.clone()).await.unwrap();
    proxy.set(vec![offers_chatter()]);
    let doors = robot.directory_announcer(realm.clone()).await.unwrap();
    doors.set(vec![imports_scan()]);
    until(&views[0], "robot back", |l, _| {
        has(l, "/chatter") && has(l, "/scan")
    })
    .await;
    proxy.leave().await;
    until(&views[0], "robot gone although its doors remain", |l, _| {
        l.members.is_empty()
    })
    .await;
    // Still gone after the next periods' repeats.
    let heard = views[0].progress().borrow().heard;
    until(&views[0], "repeats", |_, p| p.heard >= heard + 2).await;
    assert!(
        views[0].listing().members.is_empty(),
        "{:?}",
        views[0].listing()
    );
    drop(doors);
    assert_eq!(views[0].progress().borrow().refused, 0);
}
