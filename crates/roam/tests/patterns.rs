//! `allow:`/`deny:` patterns in a proxy's file, per kind of endpoint (as the Zenoh ROS 2
//! bridge's): an import pattern imports what local subscribers read, once they appear, and
//! nothing else. Through real `roam router` and `roam proxy` processes with Python
//! cyclonedds talkers and listeners.
//!
//! Everything stays on loopback (see tests/vendor.rs). Domains 189 and 190 and router port
//! 18184 are this file's alone.

mod common;

use std::time::Duration;

use common::*;

const T: Duration = Duration::from_secs(30);

#[test]
fn an_import_pattern_imports_what_local_subscribers_read_and_nothing_else() {
    let net = Net::new("patterns-imports");
    let (_router, addr) = net.router("cloud", "127.0.0.1:18184", &[]);
    // The robot exports every topic its nodes publish but /debug ones, by publishers pattern.
    let robot = net.proxy(
        "robot",
        189,
        &addr,
        "exports:\n  - allow: {publishers: ['.*']}\n    deny: {publishers: ['^/debug']}\n    realm: test\n",
    );
    // The base imports what its nodes subscribe to under /robot/, except /robot/secret.
    let base = net.proxy(
        "base",
        190,
        &addr,
        "imports:\n  - allow: {subscribers: ['^/robot/']}\n    deny: {subscribers: ['^/robot/secret$']}\n    realm: test\n",
    );
    let logs = || format!("\n--- robot:\n{}\n--- base:\n{}", robot.logs(), base.logs());
    let _status = python("status", "talker.py", &["189", "rt/robot/status", "ok"]);
    let _secret = python("secret", "talker.py", &["189", "rt/robot/secret", "s"]);
    let _debug = python("debug", "talker.py", &["189", "rt/debug/robot", "d"]);
    // Nobody at the base reads /robot/status yet: not imported.
    assert!(
        !base.wait_log("importing", Duration::from_secs(2)),
        "imported with no local subscriber:{}",
        logs()
    );
    let status = python(
        "status-listener",
        "listener.py",
        &["190", "rt/robot/status"],
    );
    let secret = python(
        "secret-listener",
        "listener.py",
        &["190", "rt/robot/secret"],
    );
    let other = python("other-listener", "listener.py", &["190", "rt/elsewhere"]);
    assert!(
        wait_line(&status, "data: ok", T).is_some(),
        "/robot/status was not imported for its subscriber:{}",
        logs()
    );
    assert!(
        base.wait_log("importing (a local subscriber reads it", T),
        "{}",
        logs()
    );
    // Denied and unmatched topics stay out, though the robot exports /robot/secret.
    assert!(
        wait_line(&secret, "data:", Duration::from_secs(2)).is_none(),
        "{}",
        logs()
    );
    assert!(wait_line(&other, "data:", Duration::from_millis(200)).is_none());
    let imported: Vec<String> = base
        .logs()
        .lines()
        .filter(|l| l.contains("importing"))
        .map(str::to_string)
        .collect();
    assert_eq!(imported.len(), 1, "one import, /robot/status: {imported:?}");
    assert!(imported[0].contains("rt/robot/status"), "{imported:?}");
    // The robot's /debug topic was never exported.
    assert!(!robot.logs().contains("rt/debug/robot"), "{}", logs());
}
