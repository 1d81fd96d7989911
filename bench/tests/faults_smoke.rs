//! The fault campaigns' short version (`roam-lab faults --smoke`), as CI runs it: real routers
//! in a ring with chords and in a chain, killed (kill -9), restarted gracefully and cut off
//! (SIGSTOP) while a `roam pub --keep-all` streams to `roam sub`s. Asserts what end-to-end
//! recovery promises, never a time: nothing duplicated, nothing lost where the outage was
//! shorter than the resend window, and what a partition longer than it loses is counted
//! exactly at both ends. The gaps are in the report (bench/FAULTS.md from `--quick`). Then a
//! member floods a topic next to another's: held to its quota and counted, the neighbour
//! losing nothing (its latency is in the report).

use std::process::Command;

use serde_json::Value;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn routers_dying_restarting_and_cut_off_lose_nothing_that_can_be_resent() {
    let dir = std::env::temp_dir().join(format!("roam-faults-smoke-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("faults.json");
    let status = Command::new(env!("CARGO_BIN_EXE_roam-lab"))
        .args(["faults", "--smoke", "--out"])
        .arg(&out)
        .status()
        .expect("run roam-lab faults");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("faults.json")).expect("JSON");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(status.success(), "roam-lab faults failed: {report:#}");
    let campaigns = report["campaigns"].as_array().expect("campaigns");
    let names: Vec<&str> = campaigns
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(
        names,
        ["ring-kill", "ring-restart", "chain-kill", "partition"]
    );
    for c in campaigns {
        let name = c["name"].as_str().unwrap();
        assert!(c["error"].is_null(), "{name}: {}", c["error"]);
        let faults = c["faults"].as_array().unwrap();
        assert!(!faults.is_empty(), "{name}: no fault was done");
        let sent = u(&c["publisher"]["sent"]);
        for s in c["subscribers"].as_array().unwrap() {
            let who = format!("{name} {}", s["subscriber"]);
            assert!(u(&s["sent"]) > 0 && u(&s["sent"]) <= sent, "{who}: {s}");
            assert_eq!(u(&s["duplicated"]), 0, "{who}: duplicates");
            assert_eq!(u(&s["reordered"]), 0, "{who}: out of order");
            assert_eq!(s["events"].as_array().unwrap().len(), faults.len(), "{who}");
            if name != "partition" {
                // Every outage was shorter than the 10 s resend window.
                assert_eq!(u(&s["lost"]), 0, "{who}: lost {}", s["lost_ranges"]);
                assert_eq!(u(&s["lost_counted"]), 0, "{who}");
            }
        }
    }
    // The partition: 5 s (resent after the heal) and then 13 s (longer than the window).
    let p = &campaigns[3];
    let s = &p["subscribers"][0];
    assert_eq!(
        u(&s["events"][0]["lost"]),
        0,
        "the short partition lost {s}"
    );
    let lost = u(&s["lost"]);
    assert!(
        lost > 0,
        "a 13 s partition lost nothing beyond a 10 s window: {s}"
    );
    assert_eq!(u(&s["lost_counted"]), lost, "the subscriber's count: {s}");
    assert_eq!(
        u(&p["publisher"]["lost"]),
        lost,
        "the publisher's count: {}",
        p["publisher"]
    );
    // The flood: held to the quota (a rate can only come out lower on a slow machine) and
    // counted where a quota is in force, never where none is; the neighbour misses nothing.
    let flood = &report["flood"];
    assert!(flood["error"].is_null(), "flood: {}", flood["error"]);
    let runs = flood["runs"].as_array().expect("flood runs");
    let names: Vec<&str> = runs.iter().filter_map(|r| r["name"].as_str()).collect();
    assert_eq!(names, ["alone", "flood, no quota", "flood, quota"]);
    for r in runs {
        assert!(u(&r["neighbour_messages"]) > 0, "{r}");
        assert_eq!(u(&r["neighbour_missing"]), 0, "{r}");
    }
    assert_eq!(u(&runs[1]["flood_quota_waits"]), 0, "{}", runs[1]);
    let held = &runs[2];
    let quota = u(&held["quota_in_force"]) as f64;
    let rate = held["flood_per_s"].as_f64().expect("a flood rate");
    assert!(
        rate <= quota * 1.2,
        "flooded at {rate:.0} msg/s over {quota}: {held}"
    );
    assert!(u(&held["flood_quota_waits"]) > 0, "not counted: {held}");
}
