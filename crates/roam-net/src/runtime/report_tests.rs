//! The status report: per link, the age of arriving data, kept after the link goes down.

use std::time::Duration;

use bytes::Bytes;
use roam_proto::{Name, RealmSecret, Sealer};

use super::test_support::{pub_sub, Dir, PubSub};
use super::RouterHandle;
use crate::latency::now_us;
use crate::link::LinkConfig;

async fn link_data_ages(h: &RouterHandle, closed: bool) -> Option<u64> {
    let r = h.report().await?;
    r.links
        .iter()
        .find(|l| l.peer.name == "pub" && l.closed == closed)
        .map(|l| l.data_age.count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_link_reports_the_age_of_its_data_and_keeps_it_after_going_down() {
    let dir = Dir(std::env::temp_dir().join(format!("roam-report-{}", std::process::id())));
    let name = Name([9; 32]);
    let PubSub {
        sub_router,
        pub_router,
        mut rx,
    } = pub_sub(&dir, name, 64, LinkConfig::default()).await;
    let mut sealer = Sealer::new(&RealmSecret::from_bytes([2; 32]), name, false, None).unwrap();
    const N: u64 = 20;
    for i in 0..N {
        let env = sealer.seal_to_vec(&i.to_be_bytes(), now_us()).unwrap();
        pub_router.send(name, Bytes::from(env)).await;
    }
    for _ in 0..N {
        tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .expect("data did not arrive")
            .unwrap();
    }
    assert_eq!(link_data_ages(&sub_router, false).await, Some(N));
    let r = sub_router.report().await.unwrap();
    let link = r.links.iter().find(|l| l.peer.name == "pub").unwrap();
    // Loopback, one host clock: young data, not the epoch's age.
    assert!(link.data_age.max_us < 10_000_000, "{:?}", link.data_age);

    pub_router.shutdown().await;
    // The peer's CONNECTION_CLOSE normally ends the link at once; if that one datagram is
    // lost (a loaded machine), the idle timeout (10 s) ends it: wait past that.
    let mut kept = None;
    for _ in 0..300 {
        kept = link_data_ages(&sub_router, true).await;
        if kept.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(kept, Some(N), "the closed link's figures were not kept");
    assert_eq!(link_data_ages(&sub_router, false).await, None);
    sub_router.shutdown().await;
}
