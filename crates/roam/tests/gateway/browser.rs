//! A web page on roslibjs 2.x (npm `roslib`), in Debian's headless Chromium, shows a live ROS 2
//! topic over `wss://`: a DDS talker behind a real `roam proxy` publishes `/chatter`, the
//! gateway serves rosbridge over TLS with a given certificate and a token, the page subscribes
//! and publishes back, and a DDS listener behind the proxy hears the page. The test reads the
//! page's DOM (through playwright-core, tests/js/browser/drive.mjs) and keeps a screenshot.

use std::path::Path;

use crate::common::*;
use crate::gateway_support::*;

const TOKEN: &str = "browser-token-0123456789";

#[test]
fn roslibjs_in_chromium_shows_a_dds_topic_over_wss_and_publishes_back() {
    let js = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/browser");
    assert!(
        js.join("node_modules/roslib").is_dir(),
        "run scripts/setup.sh first (npm ci in {})",
        js.display()
    );
    let net = Net::new("gw-browser");
    let defs = definitions(&net.dir);
    let (_cloud, addr) = net.router("cloud", "127.0.0.1:0", &[]);
    let _talker = python("talker", "talker.py", &["90", "rt/chatter", "hello"]);
    let listener = python("listener", "listener.py", &["90", "rt/from_page"]);
    let robot = net.proxy(
        "robot",
        90,
        &addr,
        &(format!("msg_paths: [{}]\n", defs.display())
            + "exports:\n  - topic: /chatter\n    realm: test\nimports:\n  - topic: /from_page\n    realm: test\n"),
    );
    let (cert, key, spki) = web_certificate(&net.dir, "gateway-web");
    let extra = format!(
        "tls:\n  cert: {}\n  key: {}\nauth:\n  tokens:\n    - identity: panel\n      token: {TOKEN}\n      subscribe: {{allow: ['/chatter']}}\n      publish: {{allow: ['/from_page']}}\n",
        cert.display(),
        key.display()
    );
    let (gw, port) = gateway(&net, "gw", &addr, Some(&defs), &extra);
    assert!(
        gw.logs().contains("wss://") || gw.wait_log("wss://", T),
        "{}",
        gw.logs()
    );

    let shot =
        std::env::temp_dir().join(format!("roam-gateway-browser-{}.png", std::process::id()));
    let url = format!("wss://127.0.0.1:{port}/?token={TOKEN}");
    let drive = js.join("drive.mjs");
    let page = Proc::spawn_system(
        "chromium-page",
        "node",
        &[
            drive.to_str().unwrap(),
            &url,
            &spki,
            "/chatter",
            "std_msgs/String",
            "/from_page",
            shot.to_str().unwrap(),
        ],
    );
    let connected = line_or_seen(&page, "status connected", T);
    assert!(
        connected.is_ok(),
        "the page did not connect: {:?}\ngateway: {}",
        connected,
        gw.logs()
    );
    // Five messages shown in the page's DOM, the last one a talker's.
    let end = std::time::Instant::now() + T;
    let mut shown = None;
    while std::time::Instant::now() < end {
        match page.line(std::time::Duration::from_millis(200)) {
            Some(l) if l.starts_with("count ") => {
                let n: u64 = l
                    .split(' ')
                    .nth(1)
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(0);
                if n >= 5 {
                    shown = Some(l);
                    break;
                }
            }
            Some(l) if l.starts_with("error ") || l == "done" => break,
            _ => {}
        }
    }
    let shown = shown.unwrap_or_else(|| {
        panic!(
            "the page did not show 5 messages.\npage: {}\ngateway: {}\nproxy: {}",
            page.logs(),
            gw.logs(),
            robot.logs()
        )
    });
    assert!(
        shown.split_once(" last ").unwrap().1.starts_with("hello "),
        "{shown}"
    );
    assert!(
        wait_line(&page, "screenshot ", T).is_some(),
        "{}",
        page.logs()
    );
    let png = std::fs::read(&shot).expect("screenshot");
    assert!(
        png.starts_with(b"\x89PNG") && png.len() > 1000,
        "not a PNG screenshot"
    );
    let kept = Path::new(env!("CARGO_TARGET_TMPDIR")).join("gateway-browser.png");
    std::fs::copy(&shot, &kept).expect("keep the screenshot");
    let _ = std::fs::remove_file(&shot);

    // What the page published reached the DDS listener behind the proxy.
    let heard = wait_line(&listener, "data: page saw hello ", T);
    assert!(
        heard.is_some(),
        "the DDS listener did not hear the page.\ngateway: {}\nproxy: {}",
        gw.logs(),
        robot.logs()
    );
}
