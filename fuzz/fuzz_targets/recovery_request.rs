//! Any bytes as end-to-end recovery's traffic (roam_edge::recovery): as a repair request a
//! publisher opened, and as the sessions and sequences of envelopes reaching a subscriber's
//! reorder. Nothing panics; a request that parses encodes back to the same bytes and is
//! answered exactly from what the window holds (nothing twice within the holdoff, each loss
//! counted once); a subscriber delivers each session in order and only asks for what a
//! publisher takes.
#![no_main]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use roam_edge::recovery::request::{Request, MAX_RANGES, MAX_SPAN};
use roam_edge::recovery::{Arrival, AskPolicy, Reorder, Window, WindowLimits};
use roam_proto::Name;

/// The window below holds the last `KEPT` of `SENT` envelopes.
const SENT: u64 = 100;
const KEPT: u64 = 64;

fuzz_target!(|data: &[u8]| {
    if let Ok(req) = Request::parse(data) {
        let mut again = Vec::new();
        req.encode(&mut again);
        assert_eq!(again, data, "a parsed request is its own encoding");
        answer(&req);
    }
    reorder(data);
});

/// Answers `req` from a window of envelopes 1..=SENT (each its sequence's 8 bytes) that
/// holds the last KEPT, and checks the answer against what the request names.
fn answer(req: &Request) {
    assert!(req.ranges.len() <= MAX_RANGES);
    let t0 = Instant::now();
    let mut w = Window::new(WindowLimits {
        max_messages: KEPT as usize,
        ..WindowLimits::default()
    });
    for s in 1..=SENT {
        w.push(s, Bytes::copy_from_slice(&s.to_be_bytes()), t0);
    }
    let first_kept = SENT - KEPT + 1;
    let (mut held, mut gone) = (Vec::new(), 0u64);
    for &(first, last) in &req.ranges {
        assert!(first >= 1 && first <= last);
        let gone_end = last.min(first_kept - 1);
        if first <= gone_end {
            gone += gone_end - first + 1;
        }
        held.extend(first.max(first_kept)..=last.min(SENT));
    }
    let a = w.answer(req, t0);
    let resent: Vec<u64> = a
        .resend
        .iter()
        .map(|e| u64::from_be_bytes(e[..].try_into().expect("8-byte envelopes")))
        .collect();
    assert_eq!(
        resent, held,
        "what is held and asked for is resent, in order"
    );
    assert_eq!(a.gone, gone, "what was let go is reported gone");
    assert!(resent.len() as u64 + a.gone <= MAX_SPAN);
    // The same request at once: served by the first resend; the losses are not counted again.
    let b = w.answer(req, t0);
    assert!(b.resend.is_empty(), "resent twice within the holdoff");
    assert_eq!(b.gone, gone);
    let report = w.report();
    assert_eq!(report.lost, gone);
    assert_eq!(report.resent, held.len() as u64);
    assert_eq!(report.subscribers, u64::from(gone > 0));
}

/// The bytes as operations on a subscriber's reorder, 10 bytes each: a kind, a session (one
/// of four), then a sequence (kind 0), a signed step from the session's last sequence (kind
/// 1) or a time step in milliseconds before a poll (kind 2).
fn reorder(data: &[u8]) {
    let policy = AskPolicy {
        first_after: Duration::from_millis(20),
        every: Duration::from_millis(200),
        attempts: 3,
        max_held: 64,
        max_held_bytes: 4096,
    };
    let mut r: Reorder<(u64, u64)> = Reorder::new(policy);
    let mut now = Instant::now();
    let mut last_seq: HashMap<u64, u64> = HashMap::new();
    let mut delivered: HashMap<u64, u64> = HashMap::new();
    for op in data.chunks_exact(10) {
        let session = u64::from(op[1] % 4);
        let word = u64::from_be_bytes(op[2..].try_into().expect("8 bytes"));
        match op[0] % 3 {
            kind @ (0 | 1) => {
                let seq = match kind {
                    0 => word,
                    _ => last_seq
                        .get(&session)
                        .copied()
                        .unwrap_or(1)
                        .saturating_add_signed(i64::from(op[2] as i8)),
                };
                last_seq.insert(session, seq);
                if !r.knows(session) {
                    // A session forgotten (silent too long) starts again where it is heard.
                    delivered.remove(&session);
                }
                let would = r.would_deliver(session, seq);
                let arrival = r.arrive(Name([7; 32]), session, seq, (session, seq), 64, now);
                assert_eq!(would, matches!(arrival, Arrival::Deliver(_)));
                if let Arrival::Deliver(item) = arrival {
                    in_order(&mut delivered, item);
                }
            }
            _ => {
                now += Duration::from_millis(word & 0xffff);
                let due = r.poll(now);
                for ask in due.asks {
                    assert!(!ask.ranges.is_empty(), "an ask for nothing");
                    let req = Request {
                        session: ask.session,
                        requester: 1,
                        ranges: ask.ranges,
                    };
                    let mut bytes = Vec::new();
                    req.encode(&mut bytes);
                    assert_eq!(
                        Request::parse(&bytes).as_ref(),
                        Ok(&req),
                        "a subscriber asked for what a publisher refuses"
                    );
                }
            }
        }
        while let Some(item) = r.pop_ready() {
            in_order(&mut delivered, item);
        }
    }
}

/// Each session's messages reach the reader in increasing sequence order, each once.
fn in_order(delivered: &mut HashMap<u64, u64>, (session, seq): (u64, u64)) {
    if let Some(&before) = delivered.get(&session) {
        assert!(seq > before, "session {session}: {seq} after {before}");
    }
    delivered.insert(session, seq);
}
