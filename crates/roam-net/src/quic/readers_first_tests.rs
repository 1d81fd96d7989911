//! A connection's readers get what arrived before its acknowledgement is sent (quinn as
//! patched in vendor/quinn, see its ROAM.md): on one worker thread, a message goes on its way
//! first, through the tasks it is handed to as in a proxy (the stream reader, which routes
//! it, and the import), and the acknowledgement after it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::tapped_pair::{tapped_pair, Pair, Tap};
use crate::link::LinkConfig;

/// What the listening side's socket and its reader did, in order.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Event {
    Received,
    Sent,
    /// The last of the tasks the reader hands the message to got its first bytes.
    Delivered,
}

type Log = Arc<Mutex<Vec<Event>>>;

/// Notes every datagram batch taken in and every send.
#[derive(Debug, Default)]
struct Logged(Log);

impl Tap for Logged {
    fn sent(&self) {
        self.0.lock().unwrap().push(Event::Sent);
    }

    fn received(&self) {
        self.0.lock().unwrap().push(Event::Received);
    }
}

/// Everything the log holds from `from` on, up to the message's delivery.
fn before_delivery(log: &Log, from: usize) -> Vec<Event> {
    let log = log.lock().unwrap();
    let delivered = log[from..]
        .iter()
        .position(|e| *e == Event::Delivered)
        .expect("the message was delivered");
    log[from..from + delivered].to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_message_is_delivered_before_its_acknowledgement_is_sent() {
    let Pair {
        socket,
        server_conn,
        conn,
        _kept,
    } = tapped_pair(&LinkConfig::default(), Logged::default()).await;
    let log = socket.tap.0.clone();

    // The stream is opened by a first message; the reader then waits on it for the second,
    // as a topic's lane does between messages.
    let mut send = conn.open_uni().await.unwrap();
    send.write_all(b"hello").await.unwrap();
    let mut recv = server_conn.accept_uni().await.unwrap();
    let mut hello = [0u8; 5];
    recv.read_exact(&mut hello).await.unwrap();
    assert_eq!(&hello, b"hello");

    // As in a proxy: the stream's reader routes what it reads and hands it to the task that
    // delivers it (the import).
    let (to_delivery, mut delivery) = tokio::sync::mpsc::channel::<usize>(8);
    let delivery_log = log.clone();
    let delivered = tokio::spawn(async move {
        let mut total = 0;
        while let Some(n) = delivery.recv().await {
            if total == 0 {
                delivery_log.lock().unwrap().push(Event::Delivered);
            }
            total += n;
        }
        total
    });
    tokio::spawn(async move {
        while let Some(chunk) = recv.read_chunk(usize::MAX, true).await.unwrap() {
            let _ = to_delivery.send(chunk.bytes.len()).await;
        }
    });
    // Let the acknowledgements of the first message go out before the second is sent.
    let quiet = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut seen = usize::MAX;
    loop {
        let now = log.lock().unwrap().len();
        if now == seen {
            break;
        }
        seen = now;
        assert!(
            tokio::time::Instant::now() < quiet,
            "the link never went quiet"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let from = log.lock().unwrap().len();
    // Several packets, so that the receiver owes an acknowledgement at once.
    let message = vec![7u8; 64 << 10];
    send.write_all(&message).await.unwrap();
    send.finish().unwrap();
    let total = tokio::time::timeout(Duration::from_secs(10), delivered)
        .await
        .expect("the message arrives")
        .unwrap();
    assert_eq!(total, message.len());

    let events = before_delivery(&log, from);
    let last_arrival = events
        .iter()
        .rposition(|e| *e == Event::Received)
        .expect("the message arrived before it was delivered");
    assert!(
        !events[last_arrival..].contains(&Event::Sent),
        "the listener sent a datagram between taking in the message and delivering it \
         (events from the message on: {events:?})"
    );
    conn.close(0u32.into(), b"done");
}
