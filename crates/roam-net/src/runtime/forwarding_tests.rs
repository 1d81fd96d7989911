//! A link learns from its peer's link state whether the peer forwards what it gets: a
//! proxy linked to this one alone delivers only, a router with other links forwards.

use std::time::Duration;

use super::test_support::{router, Dir};
use super::RouterHandle;
use crate::link::LinkConfig;

/// What `h`'s link to the peer named `peer` says of it, once it says `want` (10 s at most).
async fn wait_forwards(h: &RouterHandle, peer: &str, want: bool) -> Option<bool> {
    let mut last = None;
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    while tokio::time::Instant::now() < end {
        let r = h.report().await?;
        last = r
            .links
            .iter()
            .find(|l| l.peer.name == peer && !l.closed)
            .map(|l| l.peer_forwards);
        if last == Some(want) {
            break;
        }
        // The report is asked for, not pushed: ask again shortly, until the deadline.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    last
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_linked_to_this_router_alone_does_not_forward_and_one_with_others_does() {
    let dir = Dir(std::env::temp_dir().join(format!("roam-forwards-{}", std::process::id())));
    roam_pki::init_ca(&dir.0).unwrap();
    let b = router(&dir, "b", None, LinkConfig::default()).await;
    let b_addr = b.quic_addr.expect("b listens on QUIC");
    let a = router(&dir, "a", Some(b_addr), LinkConfig::default()).await;
    // a and b linked to each other alone: each delivers only (proxy to proxy).
    assert_eq!(
        wait_forwards(&a, "b", false).await,
        Some(false),
        "a's view of b"
    );
    assert_eq!(
        wait_forwards(&b, "a", false).await,
        Some(false),
        "b's view of a"
    );
    // c links to b: b now forwards to a router besides a; a still delivers only.
    let c = router(&dir, "c", Some(b_addr), LinkConfig::default()).await;
    assert_eq!(
        wait_forwards(&a, "b", true).await,
        Some(true),
        "a's view of b, with c"
    );
    assert_eq!(
        wait_forwards(&c, "b", true).await,
        Some(true),
        "c's view of b"
    );
    assert_eq!(
        wait_forwards(&b, "a", false).await,
        Some(false),
        "b's view of a, with c"
    );
    // c goes: b is back to a alone.
    c.shutdown().await;
    assert_eq!(
        wait_forwards(&a, "b", false).await,
        Some(false),
        "a's view of b, c gone"
    );
}
