//! The lab's smoke run, as CI runs it: native DDS and roam (proxy - router - proxy, and proxy
//! to proxy; real processes on loopback) each deliver the load generator's messages, both round trips and a
//! stream; roam's processes report the age of the data at every hop in the metrics snapshots
//! they leave in their metrics files, which the lab reads. With Fast DDS installed, one E2 row
//! has Fast DDS nodes on both sides of roam (proxy to proxy): the lab builds its Fast DDS load
//! generator (bench/fastdds) and that stream is delivered whole too. E1's floor (a bare UDP
//! echo through copies of `roam-lab --floor-forwarder`) answers every echo at every E1 size.
//! Asserts delivery and that measurements exist, never a speed.

use std::process::Command;

#[test]
fn the_lab_smoke_suite_delivers_through_native_dds_and_roam() {
    let dir = std::env::temp_dir().join(format!("roam-lab-smoke-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("lab.json");
    let status = Command::new(env!("CARGO_BIN_EXE_roam-lab"))
        .args(["--smoke", "--zenoh-off", "--out"])
        .arg(&out)
        .status()
        .expect("run roam-lab");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).expect("lab.json")).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let ms = report["measurements"].as_array().expect("measurements");
    let mut seen = std::collections::BTreeSet::new();
    for m in ms {
        let label = m["label"].as_str().unwrap().to_string();
        assert!(m["error"].is_null(), "{label}: {}", m["error"]);
        let (received, expected) = if m["load"]["echo"].as_bool().unwrap() {
            (
                &m["source"]["echo"]["received"],
                &m["source"]["echo"]["expected"],
            )
        } else {
            (
                &m["sink"]["counts"]["received"],
                &m["sink"]["counts"]["expected"],
            )
        };
        let (received, expected) = (received.as_u64().unwrap(), expected.as_u64().unwrap());
        assert!(received > 0, "{label} delivered nothing");
        assert_eq!(received, expected, "{label}: reliable messages lost");
        if label.starts_with("roam") {
            // Every hop measured: the router's and both proxies' final snapshots carry ages
            // for the links, the exported topic and the imported one, and QUIC path figures.
            let hops = m["hops"].as_array().expect("hops");
            // Proxy to proxy has no router: the proxies link directly.
            let processes: &[&str] = if label.contains("proxy to proxy") {
                &["proxy-a", "proxy-b"]
            } else {
                &["r1", "proxy-a", "proxy-b"]
            };
            for process in processes {
                assert!(
                    hops.iter().any(|h| h["process"] == *process),
                    "{label}: no snapshot of {process} in {hops:?}"
                );
            }
            if !label.contains("TCP links") {
                let quic = hops.iter().any(|h| {
                    h["kind"] == "link" && h["path"]["sent_packets"].as_f64().unwrap_or(0.0) > 0.0
                });
                assert!(quic, "{label}: no QUIC path figures in {hops:?}");
            }
            for (kind, field) in [
                ("link", "data_age_us"),
                ("export", "dds_age_us"),
                ("import", "written_age_us"),
            ] {
                let measured = hops.iter().any(|h| {
                    h["kind"] == kind && h["ages"][field]["n"].as_f64().unwrap_or(0.0) > 0.0
                });
                assert!(measured, "{label}: no {kind} {field} in {hops:?}");
            }
        }
        seen.insert(label);
    }
    // E1's floor: the bare-UDP echo through 0, 2 and 3 copies of `roam-lab --floor-forwarder`
    // at each E1 size, every echo back.
    let floor = report["floor"].as_array().expect("floor");
    let e1_sizes: std::collections::BTreeSet<u64> = ms
        .iter()
        .filter(|m| m["experiment"] == "e1")
        .map(|m| m["load"]["size"].as_u64().unwrap())
        .collect();
    for size in &e1_sizes {
        for forwarders in [0, 2, 3] {
            let run = floor
                .iter()
                .find(|f| f["size"] == *size && f["forwarders"] == forwarders)
                .unwrap_or_else(|| panic!("no floor run of {size} B through {forwarders}"));
            assert!(run["error"].is_null(), "{run}");
            assert_eq!(run["lost"], 0, "{run}");
            assert!(run["median_us"].as_f64().unwrap() > 0.0, "{run}");
        }
    }
    assert!(!e1_sizes.is_empty());
    assert!(seen.contains("native DDS"), "{seen:?}");
    assert!(seen.contains("roam, 1 router"), "{seen:?}");
    assert!(seen.contains("roam, proxy to proxy"), "{seen:?}");
    // Fast DDS (scripts/setup.sh installs it): the lab must have built its load generator and
    // delivered the Fast DDS row (checked with the others above). Without it, the lab says why.
    let fastdds_installed = Command::new("sh")
        .args(["-c", "command -v fastddsgen && command -v cmake"])
        .output()
        .is_ok_and(|o| o.status.success());
    if fastdds_installed {
        assert!(
            report["fastdds_left_out"].is_null(),
            "Fast DDS is installed but the lab left its rows out: {}",
            report["fastdds_left_out"]
        );
        assert!(
            seen.contains("roam, proxy to proxy, Fast DDS nodes"),
            "{seen:?}"
        );
    } else {
        assert!(report["fastdds_left_out"].is_string(), "{report:?}");
    }
    assert!(status.success());
}
