//! Rust writer -> Rust reader in one process, over a real CycloneDDS domain on loopback.

mod common;

use std::sync::mpsc::channel;
use std::time::Duration;

use common::{cdr_string, decode_cdr_string, wait_for};
use roam_dds::{
    loopback_config, DdsError, Discovery, DiscoveryEvent, History, Participant, Qos, Reader,
    TopicInfo, Writer,
};

const T: Duration = Duration::from_secs(20);

fn participant(domain: u32) -> Participant {
    Participant::new(domain, Some(loopback_config())).expect("participant")
}

#[test]
fn keyless_samples_arrive_byte_exact() {
    let p = participant(101);
    let topic = TopicInfo::keyless("rt/chatter", "std_msgs::msg::dds_::String_");
    let (tx, rx) = channel();
    let reader = Reader::new(&p, &topic, &Qos::default(), move |s| tx.send(s).unwrap()).unwrap();
    let writer = Writer::new(&p, &topic, &Qos::default()).unwrap();
    // Each side learns of the other on its own discovery traffic: wait for both.
    wait_for("match", T, || {
        (writer.matched_readers().unwrap() >= 1 && reader.matched_writers().unwrap() >= 1)
            .then_some(())
    });

    let sent: Vec<Vec<u8>> = (0..20).map(|i| cdr_string(&format!("hello {i}"))).collect();
    for s in &sent {
        writer.write_cdr(s).unwrap();
    }
    for (i, s) in sent.iter().enumerate() {
        let got = rx.recv_timeout(T).expect("sample");
        assert_eq!(&got.cdr, s, "sample {i}");
        assert_eq!(decode_cdr_string(&got.cdr).unwrap(), format!("hello {i}"));
        assert!(
            got.source_timestamp_ns > 1_600_000_000_000_000_000,
            "timestamp {}",
            got.source_timestamp_ns
        );
        assert_ne!(got.writer_guid, [0; 16], "writer guid resolved");
        assert_eq!(
            got.writer_guid[..12],
            p.guid()[..12],
            "our writer: same GUID prefix as our participant"
        );
    }
}

#[test]
fn keyed_samples_keep_their_key_bytes() {
    let p = participant(102);
    // A keyed type: struct { @key long id; string text; } — the bytes are opaque to us.
    let topic = TopicInfo::keyed_blob("roam_keyed", "roam::test::Keyed");
    // Keep all: the blob sertype cannot tell keys apart (every sample is one instance to it),
    // so keep-last 1 would let samples of different keys replace each other.
    let qos = Qos {
        reliable: true,
        transient_local: false,
        history: History::KeepAll,
    };
    let (tx, rx) = channel();
    let _reader = Reader::new(&p, &topic, &qos, move |s| tx.send(s).unwrap()).unwrap();
    let writer = Writer::new(&p, &topic, &qos).unwrap();
    wait_for("match", T, || {
        (writer.matched_readers().unwrap() >= 1).then_some(())
    });

    let sample = |id: u32, text: &str| {
        let mut v = vec![0x00, 0x01, 0x00, 0x00];
        v.extend_from_slice(&id.to_le_bytes());
        v.extend_from_slice(&cdr_string(text)[4..]);
        v
    };
    let sent = [
        sample(7, "seven"),
        sample(0xdead_beef, "big"),
        sample(7, "seven again"),
    ];
    for s in &sent {
        writer.write_cdr(s).unwrap();
    }
    for s in &sent {
        let got = rx.recv_timeout(T).expect("sample");
        assert_eq!(&got.cdr, s);
    }
    assert!(
        rx.recv_timeout(Duration::from_millis(200)).is_err(),
        "no extra samples"
    );
}

#[test]
fn twenty_megabyte_sample_arrives_intact() {
    let p = participant(103);
    let topic = TopicInfo::keyless("rt/big", "roam::test::Blob");
    let qos = Qos {
        reliable: true,
        transient_local: false,
        history: History::KeepLast(1),
    };
    let (tx, rx) = channel();
    let _reader = Reader::new(&p, &topic, &qos, move |s| tx.send(s).unwrap()).unwrap();
    let writer = Writer::new(&p, &topic, &qos).unwrap();
    wait_for("match", T, || {
        (writer.matched_readers().unwrap() >= 1).then_some(())
    });

    let mut big = vec![0x00, 0x01, 0x00, 0x00];
    let n = 20 * 1024 * 1024;
    big.extend_from_slice(&(n as u32).to_le_bytes());
    big.extend((0..n).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[3]));
    writer.write_cdr(&big).unwrap();
    let got = rx.recv_timeout(T).expect("20 MB sample");
    assert_eq!(got.cdr.len(), big.len());
    assert!(got.cdr == big, "20 MB sample differs");
}

#[test]
fn a_taken_sample_outlives_its_reader_and_participant() {
    // A blob topic's samples are lent out of CycloneDDS's buffers, not copied: they must stay
    // whole after the reader, the writer and the participant (the last in its domain) are gone.
    let p = participant(108);
    let topic = TopicInfo::keyless("rt/lent", "roam::test::Blob");
    let qos = Qos {
        reliable: true,
        transient_local: false,
        history: History::KeepAll,
    };
    let (tx, rx) = channel();
    let reader = Reader::new(&p, &topic, &qos, move |s| tx.send(s).unwrap()).unwrap();
    let writer = Writer::new(&p, &topic, &qos).unwrap();
    wait_for("match", T, || {
        (writer.matched_readers().unwrap() >= 1).then_some(())
    });
    let small = cdr_string("kept");
    let mut big = vec![0x00, 0x01, 0x00, 0x00];
    big.extend((0..300_000u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8));
    writer.write_cdr(&small).unwrap();
    writer.write_cdr(&big).unwrap();
    let got: Vec<_> = (0..2)
        .map(|_| rx.recv_timeout(T).expect("sample"))
        .collect();
    let copies: Vec<_> = got.iter().map(|s| s.cdr.clone()).collect();
    drop((writer, reader, p));
    drop(got);
    assert_eq!(copies[0], small);
    assert!(copies[1] == big, "300 KB sample differs");
}

#[test]
fn transient_local_history_reaches_a_late_reader() {
    let p = participant(104);
    let topic = TopicInfo::keyless("rt/tf_static", "tf2_msgs::msg::dds_::TFMessage_");
    let writer = Writer::new(&p, &topic, &Qos::latched(2)).unwrap();
    for i in 0..3 {
        writer
            .write_cdr(&cdr_string(&format!("static {i}")))
            .unwrap();
    }
    let (tx, rx) = channel();
    let _reader = Reader::new(&p, &topic, &Qos::latched(2), move |s| tx.send(s).unwrap()).unwrap();
    let got: Vec<String> = (0..2)
        .map(|_| decode_cdr_string(&rx.recv_timeout(T).expect("history sample").cdr).unwrap())
        .collect();
    assert_eq!(got, ["static 1", "static 2"]);
}

#[test]
fn discovery_reports_our_own_endpoints_and_their_departure() {
    let p = participant(105);
    let (tx, rx) = channel();
    let disco = Discovery::new(&p, move |e| tx.send(e).unwrap()).unwrap();
    let topic = TopicInfo::keyless("rt/disco_self", "std_msgs::msg::dds_::String_");
    let writer = Writer::new(&p, &topic, &Qos::latched(3)).unwrap();
    let _reader = Reader::new(&p, &topic, &Qos::best_effort(5), |_| {}).unwrap();

    let mut saw_pub = None;
    let mut saw_sub = None;
    while saw_pub.is_none() || saw_sub.is_none() {
        match rx.recv_timeout(T).expect("discovery event") {
            DiscoveryEvent::Publication(e) if e.topic_name == "rt/disco_self" => saw_pub = Some(e),
            DiscoveryEvent::Subscription(e) if e.topic_name == "rt/disco_self" => saw_sub = Some(e),
            _ => {}
        }
    }
    let (pb, sb) = (saw_pub.unwrap(), saw_sub.unwrap());
    assert!(pb.alive && p.owns(&pb) && pb.keyless());
    assert_eq!(pb.type_name, "std_msgs::msg::dds_::String_");
    assert_eq!(pb.qos, Qos::latched(3));
    assert_eq!(pb.participant_instance_handle, p.instance_handle());
    assert!(sb.alive && p.owns(&sb) && sb.keyless());
    assert_eq!(sb.qos, Qos::best_effort(5));
    assert!(disco.endpoints().iter().any(|e| e.guid == pb.guid));

    drop(writer);
    let gone = wait_for("publication gone", T, || match rx.try_recv() {
        Ok(DiscoveryEvent::Publication(e)) if e.guid == pb.guid => Some(e),
        _ => None,
    });
    assert!(!gone.alive);
    assert_eq!(gone.topic_name, "rt/disco_self");
    assert!(!disco.endpoints().iter().any(|e| e.guid == pb.guid));
}

#[test]
fn bad_input_is_an_error_not_a_crash() {
    let p = participant(106);
    let topic = TopicInfo::keyless("rt/x", "roam::test::X");
    let writer = Writer::new(&p, &topic, &Qos::default()).unwrap();
    assert!(matches!(
        writer.write_cdr(&[0, 1]),
        Err(DdsError::InvalidArgument(_))
    ));
    assert!(Writer::new(&p, &TopicInfo::keyless("a\0b", "t"), &Qos::default()).is_err());
    assert!(Writer::new(&p, &TopicInfo::keyless("", "t"), &Qos::default()).is_err());
    // One configuration per domain and process.
    assert!(matches!(
        Participant::new(106, Some("<General/>")),
        Err(DdsError::DomainConfigConflict(106))
    ));
    // Same configuration: shares the domain.
    let p2 = participant(106);
    assert_ne!(p2.guid(), p.guid());
    // A panicking callback does not take the process down.
    let (tx, rx) = channel();
    let _r = Reader::new(&p2, &topic, &Qos::default(), move |s| {
        tx.send(s.cdr.len()).unwrap();
        panic!("callback panic (expected in this test)");
    })
    .unwrap();
    wait_for("match", T, || {
        (writer.matched_readers().unwrap() >= 1).then_some(())
    });
    writer.write_cdr(&cdr_string("a")).unwrap();
    writer.write_cdr(&cdr_string("b")).unwrap();
    assert_eq!(rx.recv_timeout(T).unwrap(), 10);
    assert_eq!(rx.recv_timeout(T).unwrap(), 10);
}

/// What `record_readers` was told, per topic: the reader counts in order.
static READER_COUNTS: std::sync::Mutex<Vec<(String, u32)>> = std::sync::Mutex::new(Vec::new());

fn record_readers(topic: &str, readers: u32) {
    READER_COUNTS
        .lock()
        .unwrap()
        .push((topic.to_string(), readers));
}

fn reader_counts(topic: &str) -> Vec<u32> {
    let all = READER_COUNTS.lock().unwrap();
    all.iter()
        .filter(|(t, _)| t == topic)
        .map(|(_, n)| *n)
        .collect()
}

#[test]
fn a_writer_says_when_its_readers_come_and_go() {
    let p = participant(107);
    let topic = TopicInfo::keyless("rt/watched", "std_msgs::msg::dds_::String_");
    let options = roam_dds::WriterOptions {
        on_readers: Some(record_readers),
        ..Default::default()
    };
    let writer = Writer::with_options(&p, &topic, &Qos::default(), options).unwrap();
    assert!(reader_counts("rt/watched").is_empty(), "no reader yet");
    let first = Reader::new(&p, &topic, &Qos::default(), |_| {}).unwrap();
    wait_for("one reader", T, || {
        (reader_counts("rt/watched") == [1]).then_some(())
    });
    let second = Reader::new(&p, &topic, &Qos::default(), |_| {}).unwrap();
    wait_for("two readers", T, || {
        (reader_counts("rt/watched") == [1, 2]).then_some(())
    });
    assert_eq!(writer.matched_readers().unwrap(), 2);
    drop(first);
    drop(second);
    wait_for("none left", T, || {
        (reader_counts("rt/watched") == [1, 2, 1, 0]).then_some(())
    });
    // Dropping the writer frees what its listener used; nothing is said after.
    drop(writer);
    assert_eq!(reader_counts("rt/watched"), [1, 2, 1, 0]);
}

#[test]
fn a_sibling_instance_reads_this_domain_and_counts_as_ours() {
    let p = participant(103);
    let s = p.sibling().expect("sibling");
    assert_ne!(s.domain_id(), 103, "an internal domain id of its own");
    assert_eq!(p.sibling().unwrap().guid(), s.guid(), "made once");
    let topic = TopicInfo::keyless("rt/sibling", "std_msgs::msg::dds_::String_");
    let (tx, rx) = channel();
    let reader = Reader::new(&s, &topic, &Qos::default(), move |x| tx.send(x).unwrap()).unwrap();
    let writer = Writer::new(&p, &topic, &Qos::default()).unwrap();
    // Each side learns of the other on its own discovery traffic: wait for both.
    wait_for("match", T, || {
        (writer.matched_readers().unwrap() >= 1 && reader.matched_writers().unwrap() >= 1)
            .then_some(())
    });
    writer.write_cdr(&cdr_string("over the network")).unwrap();
    let got = rx.recv_timeout(T).expect("sample");
    assert_eq!(decode_cdr_string(&got.cdr).unwrap(), "over the network");
    assert_eq!(got.writer_guid[..12], p.guid()[..12]);

    // The main participant's discovery sees the sibling's reader, and owns() says it is ours.
    let (dtx, drx) = channel();
    let _d = Discovery::new(&p, move |ev| {
        let _ = dtx.send(ev);
    })
    .unwrap();
    let ep = wait_for("the sibling's reader", T, || {
        drx.try_iter().find_map(|ev| match ev {
            DiscoveryEvent::Subscription(ep) if ep.topic_name == "rt/sibling" => Some(ep),
            _ => None,
        })
    });
    assert_eq!(ep.participant_guid, s.guid());
    assert!(
        p.owns(&ep),
        "the sibling's endpoints are the participant's own"
    );
}

#[test]
fn a_waiting_reader_on_the_sibling_does_not_hold_this_participants_readers() {
    let p = participant(104);
    let s = p.sibling().expect("sibling");
    let bulk = TopicInfo::keyless("rt/bulk", "std_msgs::msg::dds_::String_");
    let small = TopicInfo::keyless("rt/small", "std_msgs::msg::dds_::String_");
    // The bulk reader's callback waits until the test opens the gate, as a full export
    // backlog makes it wait (never for long: a failing test must not hang in dds_delete,
    // which waits for the callback).
    let (gate_tx, gate_rx) = channel::<()>();
    let gate = std::sync::Mutex::new(gate_rx);
    let (bulk_tx, bulk_rx) = channel();
    let _bulk_reader = Reader::new(&s, &bulk, &Qos::default(), move |x| {
        let _ = gate.lock().unwrap().recv_timeout(2 * T);
        let _ = bulk_tx.send(x);
    })
    .unwrap();
    let (small_tx, small_rx) = channel();
    let _small_reader = Reader::new(&p, &small, &Qos::default(), move |x| {
        small_tx.send(x).unwrap()
    })
    .unwrap();
    let bulk_writer = Writer::new(&p, &bulk, &Qos::default()).unwrap();
    let small_writer = Writer::new(&p, &small, &Qos::default()).unwrap();
    wait_for("match", T, || {
        (bulk_writer.matched_readers().unwrap() >= 1
            && small_writer.matched_readers().unwrap() >= 1)
            .then_some(())
    });
    bulk_writer.write_cdr(&cdr_string("bulk")).unwrap();
    small_writer.write_cdr(&cdr_string("small")).unwrap();
    let got = small_rx
        .recv_timeout(T)
        .expect("the small sample, while the bulk reader waits");
    assert_eq!(decode_cdr_string(&got.cdr).unwrap(), "small");
    assert!(bulk_rx.try_recv().is_err(), "the bulk reader still waits");
    gate_tx.send(()).unwrap();
    let got = bulk_rx
        .recv_timeout(T)
        .expect("the bulk sample once let through");
    assert_eq!(decode_cdr_string(&got.cdr).unwrap(), "bulk");
}
