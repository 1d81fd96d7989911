//! `roam dashboard` in Debian's headless Chromium while traffic flows: a DDS talker behind one
//! proxy, a listener behind another, a router between. The test reads the page's DOM (through
//! playwright-core, tests/js/browser/dashboard.mjs): both proxies healthy, a link with its RTT,
//! the topic rows with their rates and sparklines; then a 100 Hz topic starts and its row
//! shows the new load. A screenshot is kept (target/tmp/dashboard.png).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::*;

const T: Duration = Duration::from_secs(40);

/// The next `dom` line whose JSON satisfies `want`, or every line seen.
fn dom_where(
    p: &Proc,
    want: impl Fn(&serde_json::Value) -> bool,
) -> Result<serde_json::Value, Vec<String>> {
    let end = Instant::now() + T;
    let mut seen = Vec::new();
    while Instant::now() < end {
        match p.line(Duration::from_millis(100)) {
            Some(l) if l.starts_with("dom ") => {
                let v: serde_json::Value = serde_json::from_str(&l[4..]).unwrap();
                if want(&v) {
                    return Ok(v);
                }
                seen.push(l);
            }
            Some(l) if l == "done" => break,
            Some(l) => seen.push(l),
            None => {}
        }
    }
    Err(seen.split_off(seen.len().saturating_sub(5)))
}

fn rate_of(v: &serde_json::Value, topic: &str, member: &str) -> Option<f64> {
    v["topics"].as_array()?.iter().find_map(|t| {
        (t[0] == topic && t[2] == member)
            .then(|| t[3].as_f64())
            .flatten()
    })
}

#[test]
fn the_dashboard_shows_members_links_and_topics_and_follows_the_load() {
    let js = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/browser");
    assert!(
        js.join("node_modules/playwright-core").is_dir(),
        "run scripts/setup.sh first"
    );
    let net = Net::new("dashboard");
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _talker = python("talker", "talker.py", &["91", "rt/chatter", "hello"]);
    let topics = "  - topic: /chatter\n    realm: test\n  - topic: /fast\n    realm: test\n";
    // The robot's proxy serves a dashboard of its own too (`dashboard:` in its file).
    let robot = net.proxy(
        "robot",
        91,
        &addr,
        &format!("dashboard: {{listen: 127.0.0.1:0, realm: test}}\nexports:\n{topics}"),
    );
    let _base = net.proxy("base", 99, &addr, &format!("imports:\n{topics}"));
    net.issue("ops", "client");
    let dash = Proc::spawn(
        "dashboard",
        &[
            "dashboard",
            "--realm",
            &net.realm,
            "--connect",
            &addr,
            "--pki",
            &net.pki,
            "--id",
            "ops",
            "--listen",
            "127.0.0.1:0",
        ]
        .map(String::from),
        None,
    );
    let end = Instant::now() + T;
    let mut url = None;
    while url.is_none() && Instant::now() < end {
        if let Some(l) = dash.line(Duration::from_millis(100)) {
            url = l.strip_prefix("dashboard listening ").map(str::to_string);
        }
    }
    let url = url.unwrap_or_else(|| panic!("the dashboard did not start: {}", dash.logs()));

    let shot = std::env::temp_dir().join(format!("roam-dashboard-{}.png", std::process::id()));
    let page = Proc::spawn_system(
        "chromium-dashboard",
        "node",
        &[
            js.join("dashboard.mjs").to_str().unwrap(),
            &url,
            shot.to_str().unwrap(),
            "60",
            "/fast",
            "50",
        ],
    );
    // Both proxies, healthy; the 20 Hz topic on both sides; a link with its RTT.
    let v = dom_where(&page, |v| {
        let healthy = v["members"]
            .as_array()
            .is_some_and(|m| m.len() == 2 && m.iter().all(|r| r[2] == "ok"));
        let out = rate_of(v, "/chatter", "robot").unwrap_or(0.0);
        let inn = rate_of(v, "/chatter", "base").unwrap_or(0.0);
        healthy && (5.0..=40.0).contains(&out) && inn > 5.0
    })
    .unwrap_or_else(|seen| {
        panic!(
            "the page never showed both proxies with /chatter: {seen:#?}\n{}",
            dash.logs()
        )
    });
    assert!(v["state"].as_str().unwrap().starts_with("live"), "{v}");
    let links = v["links"].as_array().unwrap();
    assert!(
        links
            .iter()
            .any(|l| l[0] == "robot" && l[1] == "cloud" && l[2].as_str().unwrap().ends_with('s')),
        "no link of robot to cloud with an RTT: {v}"
    );
    assert!(v["sparklines"].as_u64().unwrap() >= 2, "{v}");
    assert!(
        rate_of(&v, "/fast", "robot").is_none_or(|r| r == 0.0),
        "{v}"
    );

    // More load: a 100 Hz topic starts, and the page follows.
    let _fast = python(
        "fast",
        "talker.py",
        &["91", "rt/fast", "fast", "--period", "0.01"],
    );
    let v = dom_where(&page, |v| {
        rate_of(v, "/fast", "robot").is_some_and(|r| r >= 50.0)
    })
    .unwrap_or_else(|seen| panic!("the page never showed /fast's load: {seen:#?}"));
    assert!(rate_of(&v, "/fast", "base").is_some(), "{v}");
    assert!(line_after(&page, "screenshot "), "{}", page.logs());
    let png = std::fs::read(&shot).expect("screenshot");
    assert!(png.starts_with(b"\x89PNG") && png.len() > 1000);
    std::fs::copy(
        &shot,
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("dashboard.png"),
    )
    .unwrap();
    let _ = std::fs::remove_file(&shot);
    // /rates.json serves the same figures to scripts.
    let json = std::process::Command::new("curl")
        .args(["-sf", &format!("{url}/rates.json")])
        .output()
        .unwrap();
    let j: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(j["realm"], "test");
    // ... and so does the proxy's own.
    let end = Instant::now() + T;
    let mut own = None;
    while own.is_none() && Instant::now() < end {
        if let Some(l) = robot.line(Duration::from_millis(100)) {
            own = l.strip_prefix("dashboard listening ").map(str::to_string);
        }
    }
    let own =
        own.unwrap_or_else(|| panic!("the proxy's dashboard did not start: {}", robot.logs()));
    let page = std::process::Command::new("curl")
        .args(["-sf", &own])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&page.stdout).contains("<title>roam dashboard</title>"));
    let end = Instant::now() + T;
    loop {
        let json = std::process::Command::new("curl")
            .args(["-sf", &format!("{own}/rates.json")])
            .output()
            .unwrap();
        let j: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap_or_default();
        let topics = j["rates"]["topics"].as_array().cloned().unwrap_or_default();
        if topics
            .iter()
            .any(|t| t["topic"] == "/fast" && t["msgs_per_s"].as_f64().unwrap_or(0.0) > 50.0)
        {
            break;
        }
        assert!(
            Instant::now() < end,
            "the proxy's dashboard never showed /fast: {j}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn line_after(p: &Proc, prefix: &str) -> bool {
    let end = Instant::now() + T;
    while Instant::now() < end {
        if p.line(Duration::from_millis(100))
            .is_some_and(|l| l.starts_with(prefix))
        {
            return true;
        }
    }
    false
}
