//! Interoperability with a real third-party DDS program: Python `cyclonedds` nodes that are, on
//! the wire, ROS 2 nodes on rmw_cyclonedds (topic `rt/...`, type `std_msgs::msg::dds_::String_`).
//! Separate processes, so samples cross the loopback network (RTPS over UDP), not the in-process
//! shortcut.

mod common;

use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use common::{cdr_string, decode_cdr_string, wait_for, PyPeer};
use roam_dds::{
    loopback_config, Discovery, DiscoveryEvent, History, Participant, Qos, Reader, TopicInfo,
    Writer,
};

const T: Duration = Duration::from_secs(30);
const STRING: &str = "std_msgs::msg::dds_::String_";

fn participant(domain: u32) -> Participant {
    Participant::new(domain, Some(loopback_config())).expect("participant")
}

#[test]
fn python_talker_to_rust_reader_exact_cdr() {
    let p = participant(111);
    let (tx, rx) = channel();
    let _reader = Reader::new(
        &p,
        &TopicInfo::keyless("rt/chatter", STRING),
        &Qos::default(),
        move |s| {
            let _ = tx.send(s);
        },
    )
    .unwrap();
    let _talker = PyPeer::start("talker.py", &["111", "rt/chatter", "hello from python"]);
    let s = rx.recv_timeout(T).expect("a sample from the python talker");
    // XCDR1 little endian, then a CDR string: u32 length including the NUL, bytes, NUL.
    assert_eq!(
        s.cdr[..4],
        [0x00, 0x01, 0x00, 0x00],
        "encapsulation header: {:02x?}",
        &s.cdr[..4]
    );
    let text =
        decode_cdr_string(&s.cdr).unwrap_or_else(|| panic!("not a CDR string: {:02x?}", s.cdr));
    assert!(text.starts_with("hello from python "), "{text}");
    // Byte exact: exactly what a std_msgs/String with this text serializes to (plus the
    // alignment padding a writer may add at the end).
    let n: u32 = text.rsplit(' ').next().unwrap().parse().unwrap();
    let expected = cdr_string(&format!("hello from python {n}"));
    assert_eq!(s.cdr[..expected.len()], expected[..]);
    assert!(s.cdr[expected.len()..].iter().all(|b| *b == 0) && s.cdr.len() - expected.len() < 4);
    assert_ne!(s.writer_guid, [0; 16]);
    assert_ne!(
        s.writer_guid[..12],
        p.guid()[..12],
        "the writer is the python participant's"
    );
    // More keep coming, in order.
    let s2 = rx.recv_timeout(T).expect("a second sample");
    let n2: u32 = decode_cdr_string(&s2.cdr)
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(n2 > n);
}

#[test]
fn rust_writer_to_python_listener() {
    let p = participant(112);
    let writer = Writer::new(
        &p,
        &TopicInfo::keyless("rt/chatter", STRING),
        &Qos::default(),
    )
    .unwrap();
    let mut listener = PyPeer::start("listener.py", &["112", "rt/chatter"]);
    wait_for("python listener matched", T, || {
        (writer.matched_readers().unwrap() >= 1).then_some(())
    });
    let deadline = Instant::now() + T;
    let mut i = 0;
    let line = loop {
        writer
            .write_cdr(&cdr_string(&format!("roam says hi {i}")))
            .unwrap();
        i += 1;
        if let Some(l) =
            listener.expect_line(|l| l.starts_with("data: "), Duration::from_millis(100))
        {
            break l;
        }
        assert!(
            Instant::now() < deadline,
            "the python listener printed nothing"
        );
    };
    assert!(line.starts_with("data: roam says hi "), "{line}");
}

#[test]
fn twenty_megabytes_to_python_over_the_network() {
    let p = participant(113);
    let qos = Qos {
        reliable: true,
        transient_local: false,
        history: History::KeepLast(1),
    };
    let writer = Writer::new(&p, &TopicInfo::keyless("rt/big", STRING), &qos).unwrap();
    let mut listener = PyPeer::start("listener.py", &["113", "rt/big", "--summary"]);
    wait_for("python listener matched", T, || {
        (writer.matched_readers().unwrap() >= 1).then_some(())
    });
    let text: String = (0..20 * 1024 * 1024)
        .map(|i| (b'a' + (i % 26) as u8) as char)
        .collect();
    let digest = listener_digest(&text);
    writer.write_cdr(&cdr_string(&text)).unwrap();
    let line = listener
        .expect_line(|l| l.starts_with("len: "), T)
        .expect("python got the 20 MB sample");
    assert_eq!(line, format!("len: {} sha256: {digest}", text.len()));
}

/// The sha256 the python listener prints, computed with python itself (no hash crate needed).
fn listener_digest(text: &str) -> String {
    use std::io::Write;
    let mut child = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys,hashlib; print(hashlib.sha256(sys.stdin.buffer.read()).hexdigest())",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn discovery_sees_a_python_publisher_with_its_qos() {
    let p = participant(114);
    // The publisher exists first: discovery must report endpoints that predate it too.
    let _talker = PyPeer::start(
        "talker.py",
        &[
            "114",
            "rt/disco_py",
            "x",
            "--transient-local",
            "--depth",
            "7",
        ],
    );
    let (tx, rx) = channel();
    let _disco = Discovery::new(&p, move |e| {
        let _ = tx.send(e);
    })
    .unwrap();
    let e = wait_for("the python publication", T, || match rx.try_recv() {
        Ok(DiscoveryEvent::Publication(e)) if e.topic_name == "rt/disco_py" => Some(e),
        _ => None,
    });
    assert!(e.alive);
    assert_eq!(e.type_name, STRING);
    assert_eq!(
        e.qos,
        Qos {
            reliable: true,
            transient_local: true,
            history: History::KeepLast(7)
        }
    );
    assert!(!p.owns(&e), "a foreign participant's endpoint");
    assert!(e.keyless());
}
