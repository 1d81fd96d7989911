//! A link's send queue in the status report: a subscriber that stops reading fills the
//! publisher's lane toward it, the reliable topic stalls (counted, and shown as paused), and
//! once the subscriber reads again the queue drains to empty with nothing lost. A send from
//! outside the runtime while the topic is paused is not held until it resumes.

use std::time::{Duration, Instant};

use bytes::Bytes;
use roam_proto::{Name, RealmSecret, Sealer};

use super::test_support::{pub_sub, Dir, PubSub};
use super::{LinkReport, RouterHandle};
use crate::lane::LaneLimits;
use crate::link::LinkConfig;

async fn link_to_sub(h: &RouterHandle) -> LinkReport {
    let r = h.report().await.expect("router stopped");
    r.links
        .into_iter()
        .find(|l| l.peer.name == "sub" && !l.closed)
        .expect("no link to the subscriber")
}

/// Reliable lanes of two messages: a few 256 KiB envelopes fill one.
fn two_message_lanes() -> LinkConfig {
    LinkConfig {
        reliable: LaneLimits {
            max_messages: 2,
            max_bytes: 1 << 20,
        },
        ..LinkConfig::default()
    }
}

/// `n` envelopes of 256 KiB on `name`, sequences 1..=n.
fn sealed(name: Name, n: u64, keep_latest: bool) -> Vec<Bytes> {
    let mut sealer = Sealer::new(&RealmSecret::from_bytes([3; 32]), name, false, None)
        .unwrap()
        .keep_latest(keep_latest);
    let payload = vec![0u8; 256 << 10];
    (0..n)
        .map(|_| Bytes::from(sealer.seal_to_vec(&payload, 0).unwrap()))
        .collect()
}

/// Sends `envs` in order from an in-process publisher (each waits while the topic is paused).
fn send_all(h: &RouterHandle, name: Name, envs: Vec<Bytes>) -> tokio::task::JoinHandle<()> {
    let h = h.clone();
    tokio::spawn(async move {
        for e in envs {
            h.send(name, e).await;
        }
    })
}

/// The sequences of the next `n` envelopes on `rx`, each within 10 s.
async fn receive_seqs(rx: &mut crate::envelope_queue::QueueReceiver, n: usize) -> Vec<u64> {
    let mut seqs = Vec::new();
    while seqs.len() < n {
        let env = tokio::time::timeout(Duration::from_secs(10), rx.recv())
            .await
            .unwrap_or_else(|_| panic!("stuck after {} messages", seqs.len()))
            .unwrap();
        seqs.push(roam_proto::EnvelopeHeader::parse(&env).unwrap().seq);
    }
    seqs
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_link_reports_its_queue_and_stalls_then_drains() {
    let dir = Dir(std::env::temp_dir().join(format!("roam-link-queue-{}", std::process::id())));
    let name = Name([11; 32]);
    // The subscriber's queue holds one message and is not read: its router pauses the
    // topic, QUIC flow control (a quarter of the link's window per stream) stops the
    // publisher's lane writer, and the publisher's lane fills.
    let PubSub {
        sub_router,
        pub_router,
        mut rx,
    } = pub_sub(&dir, name, 1, two_message_lanes()).await;
    const N: u64 = 200;
    let mut envs = sealed(name, N + 1, false);
    // The last one is sent from a plain thread while the topic is paused.
    let late = envs.pop().unwrap();
    let sender = send_all(&pub_router, name, envs);

    let deadline = Instant::now() + Duration::from_secs(30);
    let stalled = loop {
        let l = link_to_sub(&pub_router).await;
        if l.stalls >= 1 && l.stalled_topics == 1 && l.queued.messages >= 1 {
            break l;
        }
        assert!(Instant::now() < deadline, "the link never stalled: {l:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(stalled.queued.bytes >= 256 << 10, "{:?}", stalled.queued);
    assert_eq!(stalled.dropped_full, 0, "a stall is not a drop");

    // A DDS listener thread that looked before the pause began sends without waiting for
    // the topic to resume (its envelope joins the stall): it must not be held meanwhile.
    assert!(pub_router.is_paused(&name));
    let (sent_tx, sent_rx) = std::sync::mpsc::channel();
    let blocking = {
        let h = pub_router.clone();
        std::thread::spawn(move || {
            h.send_blocking(name, late);
            let _ = sent_tx.send(());
        })
    };
    sent_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("send_blocking waited for the paused topic to resume");
    blocking.join().unwrap();
    assert!(
        pub_router.is_paused(&name),
        "the subscriber has read nothing"
    );

    let mut seqs = receive_seqs(&mut rx, N as usize + 1).await;
    sender.await.unwrap();
    // The late envelope (the last sealed) overtook those still waiting for the resume.
    let late_at = seqs
        .iter()
        .position(|&s| s == N + 1)
        .expect("the late one was lost");
    seqs.remove(late_at);
    assert_eq!(seqs, (1..=N).collect::<Vec<_>>(), "lost or reordered");

    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let l = link_to_sub(&pub_router).await;
        if l.stalled_topics == 0 && l.queued.messages == 0 && l.queued.bytes == 0 {
            assert!(l.stalls >= stalled.stalls, "the stall count went back");
            break;
        }
        assert!(Instant::now() < deadline, "the queue did not drain: {l:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    sub_router.shutdown().await;
    pub_router.shutdown().await;
}

/// A keep-latest topic is held back when its lane fills, before the lane refuses a sample:
/// nothing of it waits in the router's stall queue (where a newer sample could not replace
/// it), nothing is dropped, and it flows again when the subscriber reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_keep_latest_topic_is_held_back_when_its_lane_fills() {
    let dir = Dir(std::env::temp_dir().join(format!("roam-keep-latest-{}", std::process::id())));
    let name = Name([12; 32]);
    let PubSub {
        sub_router,
        pub_router,
        mut rx,
    } = pub_sub(&dir, name, 1, two_message_lanes()).await;
    const N: u64 = 100;
    let sender = send_all(&pub_router, name, sealed(name, N, true));

    // The subscriber reads nothing: the lane fills and the topic is held back.
    let deadline = Instant::now() + Duration::from_secs(30);
    let held = loop {
        let l = link_to_sub(&pub_router).await;
        if l.stalled_topics == 1 && l.queued.messages >= 2 {
            break l;
        }
        assert!(
            Instant::now() < deadline,
            "the topic was never held back: {l:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(pub_router.is_paused(&name));
    assert_eq!(held.stalls, 0, "the lane refused a sample: {held:?}");
    assert_eq!(held.dropped_full, 0);

    let seqs = receive_seqs(&mut rx, N as usize).await;
    sender.await.unwrap();
    assert_eq!(seqs, (1..=N).collect::<Vec<_>>(), "lost or reordered");
    let deadline = Instant::now() + Duration::from_secs(10);
    while pub_router.is_paused(&name) {
        assert!(Instant::now() < deadline, "the topic stayed held back");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    sub_router.shutdown().await;
    pub_router.shutdown().await;
}
