//! The gateway's doors inside `roam proxy` (a `gateway:` section): a roslibpy program talks to
//! the DDS nodes of the proxy's own network through the proxy alone (the robot's web UI case),
//! and to a topic another proxy exports across the realm.

use std::time::Duration;

use crate::common::*;
use crate::gateway_support::*;

#[test]
fn a_proxy_with_a_gateway_section_serves_rosbridge_clients() {
    let net = Net::new("gw-in-proxy");
    let defs = definitions(&net.dir);
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _talker = python("talker", "talker.py", &["94", "rt/chatter", "hello"]);
    let listener = python("listener", "listener.py", &["94", "rt/from_web"]);
    let _far = python("far-talker", "talker.py", &["92", "rt/far", "far"]);
    let _other = net.proxy(
        "other",
        92,
        &addr,
        &(format!("msg_paths: [{}]\n", defs.display())
            + "exports:\n  - topic: /far\n    realm: test\n"),
    );
    let robot = net.proxy(
        "robot",
        94,
        &addr,
        &(format!("msg_paths: [{}]\n", defs.display())
            + "exports:\n  - topic: /chatter\n    realm: test\nimports:\n  - topic: /from_web\n    realm: test\n"
            + "gateway:\n  realm: test\n  rosbridge: {listen: 127.0.0.1:0}\n  limits: {max_clients: 8}\n"),
    );
    let l = wait_line(&robot, "rosbridge listening ws://", T)
        .unwrap_or_else(|| panic!("no rosbridge door in the proxy: {}", robot.logs()));
    let port: u16 = l.rsplit(':').next().unwrap().parse().unwrap();

    // The proxy's own DDS network, from a web client of the proxy.
    let chatter = client(
        "sub-chatter",
        port,
        &["sub", "/chatter", "std_msgs/String", "--count", "3"],
    );
    let m = wait_line(&chatter, "msg ", T)
        .unwrap_or_else(|| panic!("no /chatter through the proxy's door: {}", robot.logs()));
    assert!(
        json_after(&m, "msg ")["data"]
            .as_str()
            .unwrap()
            .starts_with("hello "),
        "{m}"
    );
    let _web = client(
        "pub-web",
        port,
        &[
            "pub",
            "/from_web",
            "std_msgs/String",
            r#"{"data": "web $N"}"#,
        ],
    );
    assert!(
        wait_line(&listener, "data: web ", T).is_some(),
        "the DDS listener heard nothing from the proxy's door: {}",
        robot.logs()
    );
    // ... and the realm: a topic another proxy exports.
    let far = client(
        "sub-far",
        port,
        &["sub", "/far", "std_msgs/String", "--count", "2"],
    );
    let m = wait_line(&far, "msg ", T)
        .unwrap_or_else(|| panic!("no /far across the realm: {}", robot.logs()));
    assert!(
        json_after(&m, "msg ")["data"]
            .as_str()
            .unwrap()
            .starts_with("far "),
        "{m}"
    );
    // The proxy stops cleanly and says what its door served.
    let mut robot = robot;
    assert!(robot.terminate().is_some());
    let end = std::time::Instant::now() + Duration::from_secs(5);
    while !robot.logs().contains("served ") && std::time::Instant::now() < end {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        robot.logs().contains("served 3 clients"),
        "{}",
        robot.logs()
    );
}
