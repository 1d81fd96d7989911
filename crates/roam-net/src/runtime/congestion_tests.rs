//! Each congestion controller a QUIC link can be configured with carries data, large
//! messages included (a controller that never opened its window would stall them).

use std::time::Duration;

use bytes::Bytes;
use roam_proto::{Name, RealmSecret, Sealer};

use super::test_support::{pub_sub, Dir, PubSub};
use crate::latency::now_us;
use crate::link::{Congestion, LinkConfig};

async fn carries_messages_with(congestion: Congestion) {
    let dir = Dir(std::env::temp_dir().join(format!(
        "roam-congestion-{congestion:?}-{}",
        std::process::id()
    )));
    let link = LinkConfig {
        congestion,
        ..LinkConfig::default()
    };
    let name = Name([7; 32]);
    let PubSub {
        sub_router,
        pub_router,
        mut rx,
    } = pub_sub(&dir, name, 64, link).await;
    let mut sealer = Sealer::new(&RealmSecret::from_bytes([3; 32]), name, false, None).unwrap();
    let sizes = [8usize, 1 << 10, 1 << 20, 4 << 20];
    for (i, &size) in sizes.iter().enumerate() {
        let payload = vec![i as u8; size];
        let env = sealer.seal_to_vec(&payload, now_us()).unwrap();
        pub_router.send(name, Bytes::from(env.clone())).await;
        let got = tokio::time::timeout(Duration::from_secs(20), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("{congestion:?}: {size} B did not arrive"))
            .unwrap();
        assert_eq!(
            &got[..],
            &env[..],
            "{congestion:?}: {size} B changed on the way"
        );
    }
    // The publishing side's link reports its QUIC path: packets went out, an RTT was measured,
    // MTU discovery found loopback's room for packets above Ethernet's size, and the batches
    // of such packets the kernel was handed were taken whole (a batch over 64 KB is refused
    // and every packet of it lost).
    let report = pub_router.report().await.unwrap();
    let path = report.links[0].path.expect("a QUIC link reports its path");
    assert!(path.mtu > 1452, "{path:?}");
    assert!(path.sent_packets > (5 << 20) / path.mtu as u64, "{path:?}");
    assert!(path.lost_packets * 100 < path.sent_packets, "{path:?}");
    assert!(path.rtt_us > 0 && path.cwnd > 0, "{path:?}");
    pub_router.shutdown().await;
    sub_router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tolerant_links_carry_messages() {
    carries_messages_with(Congestion::Tolerant).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cubic_links_carry_messages() {
    carries_messages_with(Congestion::Cubic).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_reno_links_carry_messages() {
    carries_messages_with(Congestion::NewReno).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bbr_links_carry_messages() {
    carries_messages_with(Congestion::Bbr).await;
}
