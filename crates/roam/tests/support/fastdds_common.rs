//! What the Fast DDS suites of tests/fastdds_suites (topics, keyed, latched, large, services)
//! share: the domain pairs they take turns on, a router
//! and two proxies on a pair, a late joiner's history, what a Fast DDS talker says it sent.
//!
//! Everything stays on loopback. The Fast DDS nodes use no built-in transport (no shared memory),
//! one UDPv4 transport whitelisted to 127.0.0.1, unicast locators 127.0.0.1 with the well-known
//! ports, no multicast, and initial peers 127.0.0.1 without a port, which Fast DDS expands to the
//! SPDP ports of participant ids 0..31: CycloneDDS peers (`roam_dds::loopback_config()`,
//! `ParticipantIndex auto`) listen at one of those, and send their SPDP to indices 0..50, where
//! Fast DDS listens at its own id's port.
//!
//! Domains 200..209 and router ports 18600..18604 are these suites' alone. Tests share five pairs
//! of domains (a lock per pair, so two tests never use one domain at once); each test stops its
//! processes with SIGTERM at the end, so the next test on those domains sees no stale participant.
//! The suites are modules of one test binary (tests/fastdds_suites), so the locks hold across
//! all of them.
#![allow(dead_code)]

use std::collections::BTreeSet;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::common::*;

pub const T: Duration = Duration::from_secs(40);

/// Domain pair `i`: domains 200 + 2i and 201 + 2i, router port 18600 + i, held for the test.
pub struct Pair {
    _guard: MutexGuard<'static, ()>,
    pub a: u32,
    pub b: u32,
    pub router: String,
}

pub fn pair(i: usize) -> Pair {
    static LOCKS: [Mutex<()>; 5] = [
        Mutex::new(()),
        Mutex::new(()),
        Mutex::new(()),
        Mutex::new(()),
        Mutex::new(()),
    ];
    // A test that failed on this pair poisoned the lock; its processes are gone all the same.
    let guard = LOCKS[i].lock().unwrap_or_else(|e| e.into_inner());
    Pair {
        _guard: guard,
        a: 200 + 2 * i as u32,
        b: 201 + 2 * i as u32,
        router: format!("127.0.0.1:{}", 18600 + i),
    }
}

/// A router, a proxy on domain `a` and one on domain `b` with the given YAML bodies, both
/// logging their status every second.
pub fn deployment(net: &Net, p: &Pair, robot: &str, base: &str) -> (Proc, Proc, Proc) {
    let (cloud, addr) = net.router("cloud", &p.router, &[]);
    let robot = net.proxy(
        "robot",
        p.a,
        &addr,
        &format!("status_interval_s: 1\n{robot}"),
    );
    let base = net.proxy("base", p.b, &addr, &format!("status_interval_s: 1\n{base}"));
    (cloud, robot, base)
}

/// A late joiner's history: lines starting with `prefix`, the first within `T`, each next
/// within 3 s (history comes in one burst), stopping at `n`; then 1 s more for any extra.
/// Sorted (history arrives in no particular order across instances and writers).
pub fn burst(p: &Proc, prefix: &str, n: usize) -> Vec<String> {
    let mut out = lines(p, prefix, 1, T);
    while !out.is_empty() && out.len() < n {
        let next = lines(p, prefix, 1, Duration::from_secs(3));
        if next.is_empty() {
            break;
        }
        out.extend(next);
    }
    out.extend(lines(p, prefix, 1, Duration::from_secs(1)));
    out.sort();
    out
}

/// A set's members in order, to compare with [`burst`] (which keeps duplicates).
pub fn sorted(set: BTreeSet<String>) -> Vec<String> {
    set.into_iter().collect()
}

/// How many samples a talked Fast DDS node says it has written so far ("sent N" on stderr).
pub fn fast_sent(talker: &Proc) -> usize {
    talker
        .stderr
        .lock()
        .unwrap()
        .iter()
        .filter(|l| l.starts_with("sent "))
        .count()
}
