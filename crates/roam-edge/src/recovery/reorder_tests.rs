use super::*;

const NAME: Name = Name([7; 32]);

fn reorder() -> Reorder<u64> {
    Reorder::new(AskPolicy::default())
}

/// Feeds `seq` and returns what the reader gets now, in order.
fn feed(r: &mut Reorder<u64>, seq: u64, now: Instant) -> Vec<u64> {
    let mut out = Vec::new();
    if let Arrival::Deliver(s) = r.arrive(NAME, 1, seq, seq, 10, now) {
        out.push(s);
    }
    while let Some(s) = r.pop_ready() {
        out.push(s);
    }
    out
}

fn drain(r: &mut Reorder<u64>) -> Vec<u64> {
    std::iter::from_fn(|| r.pop_ready()).collect()
}

#[test]
fn in_order_messages_pass_at_once_and_start_wherever_the_session_is() {
    let t = Instant::now();
    let mut r = reorder();
    assert_eq!(feed(&mut r, 500, t), vec![500]);
    assert_eq!(feed(&mut r, 501, t), vec![501]);
    assert_eq!(r.deadline(), None);
    assert_eq!(r.poll(t + Duration::from_secs(5)), Due::default());
}

#[test]
fn a_gap_is_held_asked_for_and_delivered_in_order_once_filled() {
    let t = Instant::now();
    let mut r = reorder();
    feed(&mut r, 1, t);
    assert!(feed(&mut r, 4, t).is_empty());
    assert!(feed(&mut r, 6, t).is_empty());
    // Not asked for at once: another path may still be delivering it.
    assert!(r.poll(t).asks.is_empty());
    let at = r.deadline().expect("a request is due");
    assert_eq!(at, t + AskPolicy::default().first_after);
    let due = r.poll(at);
    assert_eq!(
        due.asks,
        vec![Ask {
            name: NAME,
            session: 1,
            ranges: vec![(2, 3), (5, 5)]
        }]
    );
    assert_eq!(feed(&mut r, 3, at), Vec::<u64>::new());
    assert_eq!(feed(&mut r, 2, at), vec![2, 3, 4]);
    assert_eq!(feed(&mut r, 5, at), vec![5, 6]);
    assert_eq!(r.counts(), (0, 3));
    assert_eq!(r.deadline(), None);
    // The resends that others asked for come too late for this reader: dropped.
    assert_eq!(r.arrive(NAME, 1, 3, 3, 10, at), Arrival::Late);
}

#[test]
fn a_gap_nobody_fills_is_given_up_after_the_attempts_and_counted() {
    let t = Instant::now();
    let p = AskPolicy::default();
    let mut r = reorder();
    feed(&mut r, 1, t);
    feed(&mut r, 10, t);
    feed(&mut r, 11, t);
    feed(&mut r, 20, t);
    let mut now;
    let mut asks = 0;
    loop {
        now = r.deadline().expect("due");
        let due = r.poll(now);
        asks += due.asks.len();
        if due.lost > 0 {
            assert_eq!(due.lost, 8 + 8);
            break;
        }
    }
    assert_eq!(asks as u32, p.attempts);
    assert!(now - t < p.first_after + p.every * p.attempts + Duration::from_millis(1));
    assert_eq!(drain(&mut r), vec![10, 11, 20]);
    assert_eq!(r.counts(), (16, 0));
    assert_eq!(feed(&mut r, 21, now), vec![21]);
}

#[test]
fn progress_renews_the_attempts() {
    let t = Instant::now();
    let p = AskPolicy::default();
    let mut r = reorder();
    feed(&mut r, 1, t);
    feed(&mut r, 100, t);
    let mut now = t;
    // Each round the request brings one message: the gap is never given up.
    for seq in 2..=40 {
        now = r.deadline().expect("due");
        let due = r.poll(now);
        assert_eq!(due.lost, 0);
        assert_eq!(due.asks[0].ranges[0].0, seq);
        assert_eq!(feed(&mut r, seq, now), vec![seq]);
    }
    assert!(now - t > p.every * p.attempts);
    assert_eq!(r.counts(), (0, 39));
}

#[test]
fn what_is_held_is_bounded_by_giving_up_the_oldest_gap() {
    let t = Instant::now();
    let mut r = Reorder::new(AskPolicy {
        max_held: 3,
        ..AskPolicy::default()
    });
    let mut got = Vec::new();
    for seq in [1, 3, 5, 7, 9] {
        if let Arrival::Deliver(s) = r.arrive(NAME, 1, seq, seq, 1, t) {
            got.push(s);
        }
    }
    got.extend(drain(&mut r));
    assert_eq!(got, vec![1, 3]);
    assert_eq!(r.counts().0, 1);
}

#[test]
fn a_request_stays_within_its_limits() {
    let t = Instant::now();
    let mut r = reorder();
    feed(&mut r, 1, t);
    for k in 1..=(MAX_RANGES as u64 + 5) {
        feed(&mut r, 1 + 2 * k, t);
    }
    feed(&mut r, 10 * MAX_SPAN, t);
    let due = r.poll(t + Duration::from_secs(1));
    let ranges = &due.asks[0].ranges;
    assert_eq!(ranges.len(), MAX_RANGES);
    assert_eq!(ranges[0], (2, 2));
    let span: u64 = ranges.iter().map(|(a, b)| b - a + 1).sum();
    assert!(span <= MAX_SPAN);
    // The request is one a publisher accepts.
    let req = super::super::request::Request {
        session: 1,
        requester: 1,
        ranges: ranges.clone(),
    };
    let mut bytes = Vec::new();
    req.encode(&mut bytes);
    assert_eq!(super::super::request::Request::parse(&bytes), Ok(req));
}

#[test]
fn sessions_are_followed_apart_and_quiet_ones_forgotten() {
    let t = Instant::now();
    let mut r = reorder();
    assert!(matches!(r.arrive(NAME, 1, 1, 1, 1, t), Arrival::Deliver(1)));
    assert!(matches!(
        r.arrive(NAME, 2, 50, 50, 1, t),
        Arrival::Deliver(50)
    ));
    assert_eq!(r.arrive(NAME, 1, 3, 3, 1, t), Arrival::Held);
    assert!(matches!(
        r.arrive(NAME, 2, 51, 51, 1, t),
        Arrival::Deliver(51)
    ));
    r.poll(t + FORGET_AFTER + Duration::from_secs(1));
    // Session 2 was forgotten: it starts again wherever it is; session 1 still holds 3.
    assert!(matches!(
        r.arrive(NAME, 2, 10, 10, 1, t),
        Arrival::Deliver(10)
    ));
    assert!(matches!(r.arrive(NAME, 1, 2, 2, 1, t), Arrival::Deliver(2)));
    assert_eq!(drain(&mut r), vec![3]);
}

/// Found by the recovery_request fuzz target: a member's envelope with the last sequence made
/// `next` overflow (a panic in debug builds; in release a session that asked for sequence 0).
#[test]
fn the_sequence_no_sealer_sends_is_dropped_and_sessions_near_it_ask_within_limits() {
    let t = Instant::now();
    let mut r = reorder();
    assert!(!r.would_deliver(1, NEVER_SEALED));
    assert_eq!(r.arrive(NAME, 1, NEVER_SEALED, 0, 1, t), Arrival::Late);
    assert!(!r.knows(1), "a dropped arrival starts no session");
    feed(&mut r, NEVER_SEALED - 10, t);
    assert_eq!(r.arrive(NAME, 1, NEVER_SEALED, 0, 1, t), Arrival::Late);
    assert!(feed(&mut r, NEVER_SEALED - 1, t).is_empty());
    let due = r.poll(t + Duration::from_secs(1));
    let ranges = &due.asks[0].ranges;
    assert_eq!(ranges, &vec![(NEVER_SEALED - 9, NEVER_SEALED - 2)]);
    let req = super::super::request::Request {
        session: 1,
        requester: 1,
        ranges: ranges.clone(),
    };
    let mut bytes = Vec::new();
    req.encode(&mut bytes);
    assert_eq!(super::super::request::Request::parse(&bytes), Ok(req));
    assert_eq!(feed(&mut r, NEVER_SEALED - 9, t), vec![NEVER_SEALED - 9]);
}

/// Found by the recovery_request fuzz target: gaps of nearly 2^64 sequences, given up, made
/// the lost count overflow.
#[test]
fn gaps_as_wide_as_the_sequences_are_given_up_and_counted_without_overflow() {
    let t = Instant::now();
    let policy = AskPolicy {
        attempts: 0,
        ..AskPolicy::default()
    };
    let mut r: Reorder<u64> = Reorder::new(policy);
    for session in [1, 2] {
        assert!(matches!(
            r.arrive(NAME, session, 1, 1, 1, t),
            Arrival::Deliver(1)
        ));
        let far = NEVER_SEALED - 1;
        assert_eq!(r.arrive(NAME, session, far, far, 1, t), Arrival::Held);
    }
    let due = r.poll(t + Duration::from_secs(1));
    assert!(due.asks.is_empty());
    assert_eq!(due.lost, u64::MAX);
    assert_eq!(drain(&mut r), vec![NEVER_SEALED - 1; 2]);
    assert_eq!(r.counts().0, u64::MAX);
}
