//! A realm re-keyed while it runs: `roam realm rotate --remove` from the operator's own shell
//! while a reliable topic streams across two routers. The remaining member reads every
//! message once and in order across the switch; the removed member, which keeps its realm
//! file and its valid link, opens nothing sealed after it; a member that names itself
//! administrator in its own file starts nothing.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::*;

const T: Duration = Duration::from_secs(20);

fn roam(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(ROAM).args(args).output().expect("run roam");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A copy of the realm file for `member`, as on a machine of its own (its epoch file is kept
/// beside it).
fn realm_copy(net: &Net, member: &str) -> String {
    let file = net.dir.join(format!("{member}.realm"));
    std::fs::copy(&net.realm, &file).unwrap();
    file.to_string_lossy().into_owned()
}

/// `roam pub`/`roam sub` of `member` with its own realm file.
fn endpoint(net: &Net, cmd: &str, member: &str, realm: &str, router: &str, extra: &[&str]) -> Proc {
    let mut args = net.endpoint_args_in(&net.pki, cmd, "/orders", member, router, extra);
    let at = args.iter().position(|a| a == "--realm").unwrap() + 1;
    args[at] = realm.to_string();
    Proc::spawn(&format!("{cmd}-{member}"), &args, None)
}

fn rotate(
    net: &Net,
    member: &str,
    realm: &str,
    router: &str,
    extra: &[&str],
) -> (bool, String, String) {
    let mut args = vec![
        "realm",
        "rotate",
        "--realm",
        realm,
        "--connect",
        router,
        "--pki",
        &net.pki,
        "--id",
        member,
    ];
    args.extend_from_slice(extra);
    roam(&args)
}

#[test]
fn a_rotation_shuts_out_the_removed_member_and_loses_nothing_of_a_reliable_topic() {
    let net = Net::new("realm-rotate");
    net.members(
        &[
            ("ops", "client"),
            ("robot", "client"),
            ("laptop", "client"),
            ("thief", "client"),
        ],
        "ops",
    );
    let files: Vec<String> = ["ops", "robot", "laptop", "thief"]
        .iter()
        .map(|m| realm_copy(&net, m))
        .collect();
    let (_r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let (r2, a2) = net.router("r2", "127.0.0.1:0", std::slice::from_ref(&a1));
    assert!(r2.wait_log("link up", T), "{}", r2.logs());

    let laptop = endpoint(&net, "sub", "laptop", &files[2], &a2, &[]);
    let mut thief = endpoint(&net, "sub", "thief", &files[3], &a2, &[]);
    wait_subscribed(&laptop);
    wait_subscribed(&thief);
    let count = 5000u64;
    let _robot = endpoint(
        &net,
        "pub",
        "robot",
        &files[1],
        &a1,
        &[
            "--size",
            "64",
            "--rate",
            "500",
            "--count",
            &count.to_string(),
        ],
    );
    let first = collect(&laptop, 100, T);
    assert_eq!(
        first.len(),
        100,
        "the laptop reads before the rotation: {}",
        laptop.logs()
    );
    let thief_first = collect(&thief, 10, T);
    assert!(
        !thief_first.is_empty(),
        "so does the thief: {}",
        thief.logs()
    );

    // A member that makes itself administrator in its own realm file starts nothing: the
    // others check records against their own files.
    let mut forged = std::fs::read_to_string(&files[3]).unwrap();
    forged = forged.replace("admins:\n- ops", "admins:\n- ops\n- thief");
    std::fs::write(&files[3], forged).unwrap();
    let (ok, _, err) = rotate(&net, "thief", &files[3], &a2, &["--wait", "2"]);
    assert!(!ok && err.contains("not switched"), "{err}");
    assert!(
        laptop.wait_log("refused an epoch record", T),
        "{}",
        laptop.logs()
    );
    // A member that is not an administrator anywhere is refused before anything is sent.
    let (ok, _, err) = rotate(&net, "robot", &files[1], &a1, &[]);
    assert!(!ok && err.contains("not an administrator"), "{err}");

    // The operator removes the thief from its own shell.
    let started = Instant::now();
    let (ok, out, err) = rotate(
        &net,
        "ops",
        &files[0],
        &a1,
        &[
            "--remove",
            "thief",
            "--switch-after",
            "0.5",
            "--retire-after",
            "2",
        ],
    );
    let took = started.elapsed();
    assert!(ok, "{out}\n{err}");
    assert!(
        out.contains("robot switched to epoch 1")
            && out.contains("laptop switched to epoch 1")
            && out.contains("every member of realm \"test\" switched to epoch 1"),
        "{out}"
    );

    // The laptop: every message, once, in order, across the switch.
    let mut all = first;
    all.extend(collect(&laptop, count as usize - all.len(), T));
    let seqs: Vec<u64> = all.iter().map(|m| m.seq).collect();
    assert!(
        seqs.iter().copied().eq(1..=count),
        "the laptop read {} messages, not 1..={count} in order: {}",
        seqs.len(),
        laptop.logs()
    );
    // The thief, still linked with its realm file: what it read is the stream up to the
    // switch, and everything after was refused as sealed in an epoch it does not hold.
    let mut read: Vec<u64> = thief_first.iter().map(|m| m.seq).collect();
    while let Some(l) = thief.line(Duration::from_millis(200)) {
        if let Some(m) = parse_line(&l) {
            read.push(m.seq);
        }
    }
    thief.terminate();
    let summary = thief
        .logs()
        .lines()
        .find(|l| l.contains("received ") && l.contains("of an epoch not held"))
        .map(str::to_string)
        .unwrap_or_else(|| panic!("no summary: {}", thief.logs()));
    let refused: u64 = summary
        .split(", ")
        .find_map(|p| p.strip_suffix(" of an epoch not held"))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("{summary}"));
    assert!(
        read.iter().copied().eq(1..=read.len() as u64),
        "the removed member read the stream up to the switch, nothing else"
    );
    assert!(
        (read.len() as u64) < count && read.len() as u64 + refused >= count,
        "read {} and refused {refused} of {count}",
        read.len()
    );
    println!(
        "rotate --remove took {took:?}; the removed member read {} messages and was refused {refused}",
        read.len()
    );
    let kept = std::path::Path::new(&files[2]).with_extension("realm.epoch");
    assert!(
        kept.exists(),
        "the laptop keeps the epoch beside its realm file"
    );
}

#[test]
fn fleet_remove_revokes_and_re_keys_in_one_command_and_fleet_status_shows_each_member() {
    let net = Net::new("fleet-remove");
    net.members(
        &[
            ("ops", "client"),
            ("robot", "client"),
            ("laptop", "client"),
            ("thief", "client"),
        ],
        "ops",
    );
    // A second realm the thief was never in: left as it is.
    let other = net.dir.join("other.realm").to_string_lossy().into_owned();
    roam_ok(&["realm", "new", "other", "--out", &other]);
    roam_ok(&[
        "realm",
        "add-member",
        "ops",
        "--realm",
        &other,
        "--pki",
        &net.pki,
        "--admin",
    ]);
    let files: Vec<String> = ["ops", "robot", "laptop", "thief"]
        .iter()
        .map(|m| realm_copy(&net, m))
        .collect();
    let (r1, a1) = net.router("r1", "127.0.0.1:0", &[]);
    let laptop = endpoint(&net, "sub", "laptop", &files[2], &a1, &[]);
    let thief = endpoint(&net, "sub", "thief", &files[3], &a1, &[]);
    wait_subscribed(&laptop);
    wait_subscribed(&thief);
    let _robot = endpoint(
        &net,
        "pub",
        "robot",
        &files[1],
        &a1,
        &["--size", "64", "--rate", "200", "--count", "100000"],
    );
    assert_eq!(collect(&laptop, 20, T).len(), 20, "{}", laptop.logs());

    let status = |extra: &[&str]| {
        let mut args = vec![
            "fleet",
            "status",
            "--realm",
            &files[0],
            "--connect",
            &a1,
            "--pki",
            &net.pki,
            "--id",
            "ops",
        ];
        args.extend_from_slice(extra);
        roam(&args)
    };
    let (ok, before, err) = status(&[]);
    assert!(ok, "{err}");
    for m in ["robot", "laptop", "thief"] {
        let row = before
            .lines()
            .find(|l| l.trim_start().starts_with(m))
            .unwrap_or("");
        assert!(row.contains(" 0  connected"), "{m}: {before}");
    }

    let (ok, out, err) = roam(&[
        "fleet",
        "remove",
        "thief",
        "--ca",
        &net.pki,
        "--realm",
        &files[0],
        "--realm",
        &other,
        "--switch-after",
        "0.5",
        "--retire-after",
        "1",
        "--connect",
        &a1,
        "--pki",
        &net.pki,
        "--id",
        "ops",
    ]);
    assert!(ok, "{out}\n{err}");
    for needle in [
        "revoked thief",
        "holds revocation list 1",
        "robot switched to epoch 1",
        "laptop switched to epoch 1",
        "thief is not a member of realm \"other\"",
        "thief is out of the fleet",
    ] {
        assert!(out.contains(needle), "{needle:?} in {out}");
    }
    assert!(r1.wait_log("certificate revoked", T), "{}", r1.logs());

    let (ok, after, err) = status(&[]);
    assert!(ok, "{err}");
    assert!(
        after.contains("realm \"test\": epoch 1, 3 members"),
        "{after}"
    );
    for m in ["robot", "laptop"] {
        let row = after
            .lines()
            .find(|l| l.trim_start().starts_with(m))
            .unwrap_or("");
        assert!(row.contains(" 1  connected"), "{m}: {after}");
    }
    assert!(!after.contains("thief"), "{after}");
    // The laptop reads on in the new epoch.
    assert_eq!(collect(&laptop, 20, T).len(), 20, "{}", laptop.logs());
}
