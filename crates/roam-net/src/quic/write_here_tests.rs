//! `quinn::SendStream::write_chunks_here` (roam's change to quinn, see vendor/quinn/ROAM.md):
//! a write from a thread outside the runtime is sent from that thread, and a packet of it
//! that is lost is sent again: the first such write wakes the connection's driver to arm its
//! loss-detection timer, and while they go on its timer stays armed close enough to cover
//! the next ones without a wake-up.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::thread::ThreadId;
use std::time::Duration;

use bytes::Bytes;
use quinn::udp::Transmit;

use super::tapped_pair::{tapped_pair, Pair, Tap};
use crate::link::LinkConfig;

/// The name of the threads [`write_from_a_thread`] writes from.
const WRITER: &str = "dds-receive";

/// Notes the thread of every send, and drops the next send of a [`WRITER`] thread when told.
#[derive(Debug, Default)]
struct Watched {
    senders: Mutex<Vec<ThreadId>>,
    drop_next: AtomicBool,
}

impl Tap for Watched {
    fn send(&self, _transmit: &Transmit) -> bool {
        self.senders
            .lock()
            .unwrap()
            .push(std::thread::current().id());
        // false: lost on the way
        !(std::thread::current().name() == Some(WRITER)
            && self.drop_next.swap(false, Ordering::SeqCst))
    }
}

/// A connection whose listening side's sends are watched, where nothing but loss detection
/// may wake the driver within a test's deadline (keep-alives are a minute away).
async fn watched_pair() -> Pair<Watched> {
    let cfg = LinkConfig {
        keepalive: Duration::from_secs(60),
        idle_timeout: Duration::from_secs(120),
        ..LinkConfig::default()
    };
    tapped_pair(&cfg, Watched::default()).await
}

/// Writes `data` on `send` from a thread of its own; the thread's id.
fn write_from_a_thread(
    mut send: quinn::SendStream,
    data: &'static [u8],
) -> (quinn::SendStream, ThreadId) {
    std::thread::Builder::new()
        .name(WRITER.into())
        .spawn(move || {
            let written = send
                .write_chunks_here(&mut [Bytes::from_static(data)])
                .expect("the stream takes writes")
                .expect("flow control has room");
            assert_eq!(written.bytes, data.len());
            (send, std::thread::current().id())
        })
        .unwrap()
        .join()
        .unwrap()
}

async fn read_all(conn: &quinn::Connection, len: usize) -> Vec<u8> {
    let mut recv = conn.accept_uni().await.unwrap();
    let mut got = vec![0; len];
    recv.read_exact(&mut got).await.unwrap();
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_write_here_is_sent_from_the_writing_thread() {
    let Pair {
        socket,
        server_conn,
        conn,
        _kept,
    } = watched_pair().await;
    let send = server_conn.open_uni().await.unwrap();
    let (_send, writer) = write_from_a_thread(send, b"from the DDS thread");
    assert!(
        socket.tap.senders.lock().unwrap().contains(&writer),
        "the writing thread sent nothing itself"
    );
    let got = tokio::time::timeout(Duration::from_secs(10), read_all(&conn, 19))
        .await
        .expect("the write arrives");
    assert_eq!(got, b"from the DDS thread");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_lost_write_here_is_sent_again() {
    let Pair {
        socket,
        server_conn,
        conn,
        _kept,
    } = watched_pair().await;
    // A write that arrives: the driver, woken to arm its timer for it, keeps the timer
    // close while such writes go on.
    let send = server_conn.open_uni().await.unwrap();
    let (_first, _) = write_from_a_thread(send, b"first");
    let got = tokio::time::timeout(Duration::from_secs(10), read_all(&conn, 5))
        .await
        .expect("the first write arrives");
    assert_eq!(got, b"first");
    // The next is lost once: the writing thread does not wake the driver for it, and only
    // the driver's loss-detection timer can send it again (keep-alives are a minute away).
    let send = server_conn.open_uni().await.unwrap();
    socket.tap.drop_next.store(true, Ordering::SeqCst);
    let (_send, writer) = write_from_a_thread(send, b"lost once");
    assert!(socket.tap.senders.lock().unwrap().contains(&writer));
    assert!(
        !socket.tap.drop_next.load(Ordering::SeqCst),
        "the write's packet was not sent"
    );
    let got = tokio::time::timeout(Duration::from_secs(5), read_all(&conn, 9))
        .await
        .expect("the lost packet was sent again");
    assert_eq!(got, b"lost once");
}
