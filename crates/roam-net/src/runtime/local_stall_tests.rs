//! Back-pressure to an in-process subscriber (a proxy's importer): reliable data that finds its
//! queue full waits and pauses the topic upstream instead of being dropped.

use std::time::Duration;

use bytes::Bytes;
use roam_proto::{Name, RealmSecret, Sealer};

use super::test_support::{pub_sub, router, Dir, PubSub};
use crate::link::LinkConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_in_process_subscriber_loses_no_reliable_message() {
    let dir = Dir(std::env::temp_dir().join(format!("roam-local-stall-{}", std::process::id())));
    let name = Name([7; 32]);
    // A queue of 4 that is read slowly: the publisher outruns it by far.
    let PubSub {
        sub_router,
        pub_router,
        mut rx,
    } = pub_sub(&dir, name, 4, LinkConfig::default()).await;
    let mut sealer = Sealer::new(&RealmSecret::from_bytes([1; 32]), name, false, None).unwrap();
    const N: u64 = 3000;
    let sender = {
        let h = pub_router.clone();
        let envs: Vec<Bytes> = (0..N)
            .map(|i| Bytes::from(sealer.seal_to_vec(&i.to_be_bytes(), 0).unwrap()))
            .collect();
        tokio::spawn(async move {
            for e in envs {
                h.send(name, e).await;
            }
        })
    };
    let mut seqs = Vec::new();
    while seqs.len() < N as usize {
        let env = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("stalled after {} messages", seqs.len()))
            .unwrap();
        seqs.push(roam_proto::EnvelopeHeader::parse(&env).unwrap().seq);
        if seqs.len() % 100 == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    sender.await.unwrap();
    assert_eq!(seqs, (1..=N).collect::<Vec<_>>(), "lost or reordered");
    let report = sub_router.report().await.unwrap();
    assert_eq!(report.local_dropped, 0);
    sub_router.shutdown().await;
    pub_router.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_behind_on_large_messages_holds_its_byte_bound_and_loses_none() {
    let dir = Dir(std::env::temp_dir().join(format!("roam-local-bytes-{}", std::process::id())));
    roam_pki::init_ca(&dir.0).unwrap();
    let name = Name([8; 32]);
    let sub_router = router(&dir, "sub", None, LinkConfig::default()).await;
    let pub_router = router(&dir, "pub", sub_router.quic_addr, LinkConfig::default()).await;
    // Room for 4096 envelopes but only 1 MiB: 300 KB messages fill it at the fourth.
    const MAX: usize = 1 << 20;
    let mut rx = sub_router.subscribe_bounded(name, 4096, MAX).await.rx;
    let mut demand = pub_router.publish(name).await.demand;
    tokio::time::timeout(Duration::from_secs(10), demand.wait_for(|w| *w))
        .await
        .expect("no demand")
        .unwrap();
    let mut sealer = Sealer::new(&RealmSecret::from_bytes([1; 32]), name, false, None).unwrap();
    const N: u64 = 12;
    let envs: Vec<Bytes> = (0..N)
        .map(|i| {
            let mut body = vec![0u8; 300_000];
            body[..8].copy_from_slice(&i.to_be_bytes());
            Bytes::from(sealer.seal_to_vec(&body, 0).unwrap())
        })
        .collect();
    let sender = {
        let h = pub_router.clone();
        tokio::spawn(async move {
            for e in envs {
                h.send(name, e).await;
            }
        })
    };
    // Nobody reads: the topic pauses with the queue at its byte bound, not at 4096 envelopes.
    let end = std::time::Instant::now() + Duration::from_secs(10);
    while !sub_router.is_paused(&name) {
        assert!(std::time::Instant::now() < end, "never paused");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        rx.queued_bytes() <= MAX,
        "{} bytes queued",
        rx.queued_bytes()
    );
    assert!(
        rx.queued_bytes() >= 3 * 300_000,
        "{} bytes queued",
        rx.queued_bytes()
    );
    let mut seqs = Vec::new();
    while seqs.len() < N as usize {
        let env = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("stalled after {} messages", seqs.len()))
            .unwrap();
        assert!(rx.queued_bytes() <= MAX);
        seqs.push(roam_proto::EnvelopeHeader::parse(&env).unwrap().seq);
    }
    sender.await.unwrap();
    assert_eq!(seqs, (1..=N).collect::<Vec<_>>(), "lost or reordered");
    assert_eq!(sub_router.report().await.unwrap().local_dropped, 0);
    sub_router.shutdown().await;
    pub_router.shutdown().await;
}
