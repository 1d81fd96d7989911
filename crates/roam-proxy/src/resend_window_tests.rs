//! The resend windows a proxy file gives: the proxy's default, an entry's own, and the
//! mistakes named with their line and field.

use std::time::Duration;

use crate::config::ProxyConfig;

const HEAD: &str = "\
id: robot-7
pki: ./pki
realms: {warehouse: ./w.realm}
";

fn parse(body: &str) -> Result<ProxyConfig, String> {
    ProxyConfig::parse(&format!("{HEAD}{body}"), "r.yaml").map_err(|e| e.to_string())
}

fn secs(c: &ProxyConfig, ros: Option<&str>, dds: &str) -> Duration {
    c.resend_windows.limits(ros, dds).max_age
}

#[test]
fn without_a_setting_every_export_keeps_ten_seconds() {
    let c = parse("exports:\n  - topic: /chatter\n    realm: warehouse\n").unwrap();
    assert_eq!(
        secs(&c, Some("/chatter"), "rt/chatter"),
        Duration::from_secs(10)
    );
}

#[test]
fn an_entry_window_wins_over_its_pattern_and_the_proxy_default() {
    let c = parse(
        "resend_window_s: 4
exports:
  - topic: /map_updates
    realm: warehouse
    resend_window_s: 60
  - allow: ['^/telemetry/', '^/map']
    realm: warehouse
    resend_window_s: 0.5
  - dds_topic: DDSPerfRDataKS
    realm: warehouse
    resend_window_s: 30
  - allow: ['^/other/']
    realm: warehouse
",
    )
    .unwrap();
    let ms = Duration::from_millis;
    assert_eq!(secs(&c, Some("/map_updates"), "rt/map_updates"), ms(60_000));
    assert_eq!(
        secs(&c, Some("/telemetry/battery"), "rt/telemetry/battery"),
        ms(500)
    );
    assert_eq!(secs(&c, Some("/other/x"), "rt/other/x"), ms(4_000));
    assert_eq!(secs(&c, None, "DDSPerfRDataKS"), ms(30_000));
    // The byte and message bounds stay the window's own.
    let l = c
        .resend_windows
        .limits(Some("/map_updates"), "rt/map_updates");
    assert_eq!(
        l.max_messages,
        roam_edge::recovery::WindowLimits::default().max_messages
    );
}

#[test]
fn a_window_that_cannot_work_is_named_with_its_line_and_field() {
    for (body, want) in [
        (
            "resend_window_s: -1\nexports:\n  - topic: /a\n    realm: warehouse\n",
            "r.yaml: line 4: resend_window_s: -1 is not a resend window",
        ),
        (
            "exports:\n  - topic: /a\n    realm: warehouse\n    resend_window_s: 7200\n",
            "r.yaml: line 7: exports[0].resend_window_s: 7200 is not a resend window",
        ),
        (
            "exports:\n  - service: /add\n    realm: warehouse\n    resend_window_s: 5\n",
            "r.yaml: line 7: exports[0].resend_window_s: `resend_window_s` applies to topics",
        ),
        (
            "exports:\n  - topic: /a\n    realm: warehouse\n    resend_window_s: soon\n",
            "r.yaml: line 7",
        ),
    ] {
        let e = parse(body).err().unwrap_or_default();
        assert!(e.starts_with(want), "{body}\n got  {e}\n want {want}");
    }
}
