//! 20 MB messages from Fast DDS 2.9 through roam, to Fast DDS (a roam_test/msg/Blob) and to
//! CycloneDDS (a std_msgs/String), each arriving whole. The Fast DDS nodes, the domain pairs and
//! the deployment are those of tests/fastdds_suites/topics.rs (tests/support/fastdds_common.rs).

use std::time::Duration;

use crate::common::*;
use crate::fastdds_common::*;
use crate::fastdds_support::*;

// ---------------------------------------------------------------------------------------------
// Large

#[test]
fn a_20_mb_fastdds_message_arrives_whole() {
    // /big: roam_test/msg/Blob (a sequence<octet>) from Fast DDS to Fast DDS; /map: a 20 MB
    // std_msgs/String from Fast DDS to CycloneDDS.
    const SIZE: usize = 20 << 20;
    let p = pair(1);
    let net = Net::new("fastdds-large");
    let (mut cloud, mut robot, mut base) = deployment(
        &net,
        &p,
        "exports:\n  - topic: /big\n    realm: test\n  - topic: /map\n    realm: test\n",
        "imports:\n  - topic: /big\n    realm: test\n  - topic: /map\n    realm: test\n",
    );
    let why = |robot: &Proc, base: &Proc| format!("robot: {}\nbase: {}", robot.logs(), base.logs());
    let size = SIZE.to_string();
    let mut listener = fastdds(
        "listener",
        "listen",
        p.b,
        &["--type", "blob", "--topic", "rt/big"],
    );
    let go = Go::new(&net, "talker");
    let mut talker = fastdds(
        "talker",
        "talk",
        p.a,
        &[
            "--type",
            "blob",
            "--topic",
            "rt/big",
            "--size",
            &size,
            "--count",
            "3",
            "--rate",
            "1",
            "--wait-match",
            "1",
            "--start-when",
            &go.arg(),
        ],
    );
    wait_for(&talker, "writer matched 1", &|| why(&robot, &base));
    wait_for(&listener, "reader matched 1", &|| why(&robot, &base));
    assert!(
        base.wait_log("local readers of an import: 1", T),
        "{}",
        why(&robot, &base)
    );
    go.now();
    let got = lines(&listener, "blob", 3, Duration::from_secs(60));
    let expected: Vec<String> = (0..3)
        .map(|i| format!("blob seq={i} len={SIZE} intact=yes"))
        .collect();
    assert_eq!(
        got,
        expected,
        "(fast sent {}).\n{}",
        fast_sent(&talker),
        why(&robot, &base)
    );
    stop(&mut [&mut talker, &mut listener]);

    let mut cyclone = python(
        "cyclone",
        "listener.py",
        &[&p.b.to_string(), "rt/map", "--summary"],
    );
    let go = Go::new(&net, "map");
    let mut map = fastdds(
        "map",
        "talk",
        p.a,
        &[
            "--topic",
            "rt/map",
            "--text",
            "map",
            "--size",
            &size,
            "--count",
            "2",
            "--rate",
            "1",
            "--wait-match",
            "1",
            "--start-when",
            &go.arg(),
        ],
    );
    wait_for(&map, "writer matched 1", &|| why(&robot, &base));
    wait_for(&base, "writing locally topic=rt/map", &|| {
        why(&robot, &base)
    });
    go.now();
    let got = lines(&cyclone, "len:", 2, Duration::from_secs(60));
    let expected: Vec<String> = (0..2)
        .map(|i| {
            let text = format!("map {i}{}", "x".repeat(SIZE));
            format!(
                "len: {} sha256: {}",
                text.len(),
                roam::payload::sha256_hex(text.as_bytes())
            )
        })
        .collect();
    assert_eq!(got, expected, "{}", why(&robot, &base));
    stop(&mut [&mut map, &mut cyclone, &mut robot, &mut base, &mut cloud]);
}
