//! Keyed topics with real Python `cyclonedds` peers: the type resolved through DDS type lookup
//! on one domain, rebuilt from its XTypes description on another, history kept per instance,
//! and the instance lifecycle (dispose, unregister) read and written as raw CDR.

mod common;

use std::collections::BTreeSet;
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{wait_for, PyPeer};
use roam_dds::{
    loopback_config, Discovery, DiscoveryEvent, Participant, Qos, Reader, SampleKind, TopicInfo,
    TypeDescriptor, Writer,
};

const T: Duration = Duration::from_secs(30);

fn participant(domain: u32) -> Participant {
    Participant::new(domain, Some(loopback_config())).expect("participant")
}

/// The lines a keyed.py listener prints until `n` arrived or `timeout` passed.
fn lines(peer: &mut PyPeer, n: usize, timeout: Duration) -> BTreeSet<String> {
    let deadline = Instant::now() + timeout;
    let mut out = BTreeSet::new();
    while out.len() < n && Instant::now() < deadline {
        if let Some(l) = peer.expect_line(|_| true, Duration::from_millis(200)) {
            out.insert(l);
        }
    }
    out
}

#[test]
fn a_keyed_transient_local_topic_keeps_every_instance_and_its_lifecycle_across_domains() {
    // Domain 113: a publisher of 8 robots x 5 updates, KEEP_LAST 1 per instance, robot 3
    // disposed, robot 5 unregistered.
    let _talker = {
        let mut t = PyPeer::start(
            "keyed.py",
            &[
                "talk",
                "113",
                "fleet_state",
                "--dispose",
                "3",
                "--unregister",
                "5",
            ],
        );
        t.expect_line(|l| l == "done", T).expect("talker done");
        t
    };
    let here = participant(113);
    let (tx, rx) = channel();
    let tx = Mutex::new(tx);
    let _disco = Discovery::new(&here, move |ev| {
        if let DiscoveryEvent::Publication(ep) = ev {
            if ep.topic_name == "fleet_state" && ep.alive {
                let _ = tx.lock().unwrap().send(ep);
            }
        }
    })
    .unwrap();
    let ep = rx.recv_timeout(T).expect("the publication is discovered");
    assert!(!ep.keyless(), "a keyed writer");
    let info = ep
        .type_info
        .clone()
        .expect("python cyclonedds announces type information");
    let desc = Arc::new(TypeDescriptor::resolve(&here, &info, T).expect("type lookup"));
    assert_eq!(desc.type_name(), "roam_test::RobotState");
    assert!(!desc.keyless());

    // A late reader with the publisher's QoS gets the history of every instance.
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let topic = TopicInfo::described("fleet_state", desc.clone());
    let _reader = Reader::new(&here, &topic, &Qos::latched(1), move |s| {
        sink.lock().unwrap().push(s)
    })
    .unwrap();
    let samples = wait_for("6 live instances and 1 disposed", T, || {
        let g = got.lock().unwrap();
        let data = g.iter().filter(|s| s.kind == SampleKind::Data).count();
        let disposed = g.iter().filter(|s| s.kind == SampleKind::Disposed).count();
        (data >= 6 && disposed >= 1).then(|| g.clone())
    });
    assert_eq!(
        samples
            .iter()
            .filter(|s| s.kind == SampleKind::Data)
            .count(),
        6,
        "robots 0,1,2,4,6,7 (5 was unregistered, 3 disposed): {samples:?}"
    );

    // Domain 114 has never seen the type: rebuild it from its XTypes description alone.
    let there = participant(114);
    let rebuilt = TypeDescriptor::from_xtypes(
        &there,
        desc.type_name(),
        desc.type_information(),
        desc.type_mapping(),
    )
    .expect("rebuilt from type information and type map");
    assert_eq!(rebuilt.type_name(), desc.type_name());
    assert!(!rebuilt.keyless());
    let writer = Writer::new(
        &there,
        &TopicInfo::described("fleet_state", Arc::new(rebuilt)),
        &Qos::latched(1),
    )
    .unwrap();
    for s in &samples {
        match s.kind {
            SampleKind::Data => writer.write_cdr(&s.cdr).unwrap(),
            SampleKind::Disposed => writer.dispose_cdr(&s.cdr).unwrap(),
            SampleKind::Unregistered => writer.unregister_cdr(&s.cdr).unwrap(),
        }
    }
    let mut listener = PyPeer::start("keyed.py", &["listen", "114", "fleet_state"]);
    let seen = lines(&mut listener, 7, T);
    let expected: BTreeSet<String> = [
        "data fleet=f0 robot=0 update=4",
        "data fleet=f1 robot=1 update=4",
        "data fleet=f0 robot=2 update=4",
        "data fleet=f0 robot=4 update=4",
        "data fleet=f0 robot=6 update=4",
        "data fleet=f1 robot=7 update=4",
        "disposed fleet=f1 robot=3",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(
        seen, expected,
        "the late listener sees what a native one would"
    );

    // Unregistering the disposed robot 3 removes it from the writer's history: the next late
    // joiner sees only the six live robots.
    let key3 = samples
        .iter()
        .find(|s| s.kind == SampleKind::Disposed)
        .unwrap();
    writer.unregister_cdr(&key3.cdr).unwrap();
    let mut late = PyPeer::start("keyed.py", &["listen", "114", "fleet_state"]);
    let mut seen = lines(&mut late, 6, T);
    // Anything else would have come with the history, right behind the six.
    seen.extend(lines(&mut late, 1, Duration::from_secs(1)));
    let live: BTreeSet<String> = expected
        .into_iter()
        .filter(|l| l.starts_with("data"))
        .collect();
    assert_eq!(seen, live);
    // A blob writer cannot name an instance.
    let blob = Writer::new(
        &there,
        &TopicInfo::keyed_blob("other", "x::Y"),
        &Qos::default(),
    )
    .unwrap();
    let e = blob.dispose_cdr(&key3.cdr).unwrap_err();
    assert!(
        e.to_string()
            .contains("instance lifecycle needs the topic's type"),
        "{e}"
    );
}

#[test]
fn malformed_type_descriptions_are_refused_with_a_reason() {
    let p = participant(115);
    let e = TypeDescriptor::from_xtypes(&p, "x::Y", b"garbage", b"garbage").unwrap_err();
    assert!(e.to_string().contains("malformed"), "{e}");
    let e = TypeDescriptor::from_xtypes(&p, "x::Y", &[], &[]).unwrap_err();
    assert!(e.to_string().contains("malformed"), "{e}");
}

#[test]
fn a_live_reader_sees_dispose_and_unregister_apart_and_a_writer_replays_them() {
    let dir = std::env::temp_dir().join(format!("roam-dds-keyed-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let go = dir.join("go");
    let _ = std::fs::remove_file(&go);
    let go_arg = go.to_string_lossy().into_owned();
    let mut talker = PyPeer::start(
        "keyed.py",
        &[
            "talk",
            "116",
            "fleet_state",
            "--dispose",
            "3",
            "--unregister",
            "5",
            "--no-autodispose",
            "--lifecycle-when",
            &go_arg,
        ],
    );
    talker.expect_line(|l| l == "written", T).expect("written");
    let here = participant(116);
    let (tx, rx) = channel();
    let tx = Mutex::new(tx);
    let _disco = Discovery::new(&here, move |ev| {
        if let DiscoveryEvent::Publication(ep) = ev {
            if ep.topic_name == "fleet_state" && ep.alive {
                let _ = tx.lock().unwrap().send(ep);
            }
        }
    })
    .unwrap();
    let ep = rx.recv_timeout(T).unwrap();
    let desc = Arc::new(TypeDescriptor::resolve(&here, ep.type_info.as_ref().unwrap(), T).unwrap());
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = got.clone();
    let _reader = Reader::new(
        &here,
        &TopicInfo::described("fleet_state", desc.clone()),
        &Qos::latched(1),
        move |s| sink.lock().unwrap().push(s),
    )
    .unwrap();
    wait_for("8 robots", T, || {
        (got.lock().unwrap().len() >= 8).then_some(())
    });
    std::fs::write(&go, b"").unwrap();
    let changes = wait_for("2 lifecycle changes", T, || {
        let g = got.lock().unwrap();
        let c: Vec<SampleKind> = g.iter().skip(8).map(|s| s.kind).collect();
        (c.len() >= 2).then_some(c)
    });
    assert_eq!(
        changes,
        vec![SampleKind::Disposed, SampleKind::Unregistered]
    );
    let _ = std::fs::remove_dir_all(&dir);
}
