//! Back-pressure to an in-process subscriber (a proxy's importer): reliable data that finds its
//! queue full waits and pauses the topic upstream instead of being dropped.

use std::time::Duration;

use bytes::Bytes;
use roam_proto::{Name, RealmSecret, Sealer};

use super::test_support::{pub_sub, Dir, PubSub};
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
