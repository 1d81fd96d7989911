//! Translating service call identities between rmw_fastrtps's convention (sample identities,
//! [`roam_dds::rpc`]) and the realm's (a [`RequestId`] header in the payload). Pure: fed the
//! time, no DDS and no I/O; every table is bounded and counts what it drops.
//!
//! - **Clients here** ([`FastClients`]): a local client is known by its request writer's GUID.
//!   Its requests enter the realm as `RequestId { client: id of that GUID, seq: the request's
//!   sample sequence number }`; a reply carrying that client id leaves as a sample whose
//!   `related_sample_identity` is (the GUID the client reads replies by, seq). No per-call
//!   state: the sequence number travels as the realm's.
//! - **Server here** ([`PendingCalls`]): the proxy writes each realm request with its own
//!   writer, so the server's reply names the proxy's sample; the proxy remembers which realm
//!   call each of its samples is, until the reply comes, the call times out, or the table is
//!   full (oldest dropped first).

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, VecDeque};
use std::hash::BuildHasher;
use std::time::{Duration, Instant};

use roam_dds::rpc::SampleId;
use roam_dds::Guid;
use roam_edge::service::RequestId;

/// Clients one proxy tells apart per service before it forgets the least recently heard.
pub const MAX_CLIENTS: usize = 4096;
/// Calls one proxy keeps waiting per served service.
pub const MAX_PENDING: usize = 4096;
/// How long a call may wait for its server's reply. Services can be slow (a planner, a
/// calibration); longer than any rmw's default client timeout.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(600);

struct Client {
    writer: Guid,
    /// Where its replies must point: its reply reader when its requests named one (as
    /// rmw_fastrtps's do), else its request writer.
    reply_to: Guid,
    last: Instant,
}

/// The local clients of one service in rmw_fastrtps's convention.
pub struct FastClients {
    hasher: RandomState,
    by_writer: HashMap<Guid, u64>,
    by_id: HashMap<u64, Client>,
    cap: usize,
    /// Clients forgotten to make room (their later replies are not delivered).
    pub evicted: u64,
}

impl Default for FastClients {
    fn default() -> Self {
        Self::with_cap(MAX_CLIENTS)
    }
}

impl FastClients {
    pub fn with_cap(cap: usize) -> Self {
        FastClients {
            hasher: RandomState::new(),
            by_writer: HashMap::new(),
            by_id: HashMap::new(),
            cap: cap.max(1),
            evicted: 0,
        }
    }

    /// The realm id of a request: `sample` is its own identity, `related` the
    /// `related_sample_identity` it carried (rmw_fastrtps names its reply reader there).
    pub fn request(
        &mut self,
        now: Instant,
        sample: SampleId,
        related: Option<SampleId>,
    ) -> RequestId {
        let reply_to = match related {
            Some(r) if !r.writer_unknown() => r.writer,
            _ => sample.writer,
        };
        let client = match self.by_writer.get(&sample.writer) {
            Some(id) => *id,
            None => {
                if self.by_id.len() >= self.cap {
                    self.evict_oldest();
                }
                // Random per proxy run, so ids never collide with another proxy's (or an
                // rmw_cyclonedds client's) in practice, and never repeat a forgotten one's
                // meaning across runs.
                let mut id = self.hasher.hash_one(sample.writer);
                while self.by_id.contains_key(&id) {
                    id = id.wrapping_add(1);
                }
                self.by_writer.insert(sample.writer, id);
                id
            }
        };
        self.by_id.insert(
            client,
            Client {
                writer: sample.writer,
                reply_to,
                last: now,
            },
        );
        RequestId {
            client,
            seq: sample.seq,
        }
    }

    /// Where the reply to realm call `id` goes, if it is one of these clients' calls.
    pub fn reply_to(&mut self, now: Instant, id: RequestId) -> Option<SampleId> {
        let c = self.by_id.get_mut(&id.client)?;
        c.last = now;
        Some(SampleId {
            writer: c.reply_to,
            seq: id.seq,
        })
    }

    /// Whether realm client id `client` is one of these clients.
    pub fn knows(&self, client: u64) -> bool {
        self.by_id.contains_key(&client)
    }

    /// The request writer `writer` is gone: forget its client; its realm id, if it was known.
    pub fn forget(&mut self, writer: &Guid) -> Option<u64> {
        let id = self.by_writer.remove(writer)?;
        self.by_id.remove(&id);
        Some(id)
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    fn evict_oldest(&mut self) {
        let oldest = self
            .by_id
            .iter()
            .min_by_key(|(_, c)| c.last)
            .map(|(id, c)| (*id, c.writer));
        if let Some((id, writer)) = oldest {
            self.by_id.remove(&id);
            self.by_writer.remove(&writer);
            self.evicted += 1;
        }
    }
}

/// What happened to a reply offered to [`PendingCalls::answer`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The realm call it answers.
    Call(RequestId),
    /// It names none of the proxy's samples (another writer's call, or no identity).
    NotOurs,
    /// It names a sample of ours that no call waits for (answered already, or expired).
    Late,
}

/// The calls a served service has waiting, by the proxy's request sample.
pub struct PendingCalls {
    calls: HashMap<i64, (RequestId, Instant)>,
    order: VecDeque<(Instant, i64)>,
    cap: usize,
    /// `None`: calls wait as long as they must (an action's `get_result`).
    timeout: Option<Duration>,
    /// Calls dropped because the table was full (oldest first).
    pub dropped_full: u64,
    /// Calls that waited longer than the timeout.
    pub expired: u64,
}

impl Default for PendingCalls {
    fn default() -> Self {
        Self::new(MAX_PENDING, Some(CALL_TIMEOUT))
    }
}

impl PendingCalls {
    /// The table for the served service `service` (a ROS name): an action's `get_result` is
    /// answered only when its goal ends, minutes or hours later (the call a bridge must not
    /// time out), so its calls never expire; other calls expire after [`CALL_TIMEOUT`].
    /// Both are bounded by [`MAX_PENDING`].
    pub fn for_service(service: &str) -> Self {
        let waits_for_goal = service.ends_with("/_action/get_result");
        Self::new(MAX_PENDING, (!waits_for_goal).then_some(CALL_TIMEOUT))
    }

    pub fn new(cap: usize, timeout: Option<Duration>) -> Self {
        PendingCalls {
            calls: HashMap::new(),
            order: VecDeque::new(),
            cap: cap.max(1),
            timeout,
            dropped_full: 0,
            expired: 0,
        }
    }

    /// The proxy wrote realm call `id` as its sample number `seq`.
    pub fn insert(&mut self, now: Instant, seq: i64, id: RequestId) {
        self.expire(now);
        while self.calls.len() >= self.cap {
            let Some((_, old)) = self.order.pop_front() else {
                break;
            };
            if self.calls.remove(&old).is_some() {
                self.dropped_full += 1;
            }
        }
        self.calls.insert(seq, (id, now));
        self.order.push_back((now, seq));
    }

    /// A reply arrived naming `related`; `ours` are the GUIDs a server may name (the proxy's
    /// request writer, and the reply reader its requests point at).
    pub fn answer(&mut self, now: Instant, related: Option<SampleId>, ours: &[Guid]) -> Answer {
        self.expire(now);
        let Some(r) = related else {
            return Answer::NotOurs;
        };
        if !ours.contains(&r.writer) {
            return Answer::NotOurs;
        }
        match self.calls.remove(&r.seq) {
            Some((id, _)) => Answer::Call(id),
            None => Answer::Late,
        }
    }

    /// Drops calls older than the timeout.
    pub fn expire(&mut self, now: Instant) {
        while let Some((at, seq)) = self.order.front().copied() {
            if self.timeout.is_none_or(|t| now.duration_since(at) < t) {
                break;
            }
            self.order.pop_front();
            if self.calls.remove(&seq).is_some() {
                self.expired += 1;
            }
        }
        // Entries answered long ago leave `order` as they reach its front; keep it from
        // growing without bound when answers come quickly.
        if self.order.len() > 2 * self.cap {
            let calls = &self.calls;
            self.order.retain(|(_, s)| calls.contains_key(s));
        }
    }

    pub fn len(&self) -> usize {
        self.calls.len()
    }

    pub fn is_empty(&self) -> bool {
        self.calls.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn g(n: u8) -> Guid {
        [n; 16]
    }

    fn sid(w: u8, seq: i64) -> SampleId {
        SampleId { writer: g(w), seq }
    }

    #[test]
    fn a_clients_requests_share_one_id_and_replies_go_back_to_its_reader() {
        let now = Instant::now();
        let mut c = FastClients::default();
        // rmw_fastrtps names its reply reader (seq unknown) in the request.
        let reader = SampleId {
            writer: g(2),
            seq: -1 << 32,
        };
        let a = c.request(now, sid(1, 1), Some(reader));
        let b = c.request(now, sid(1, 2), Some(reader));
        assert_eq!(a.client, b.client);
        assert_eq!((a.seq, b.seq), (1, 2));
        assert_eq!(c.reply_to(now, b), Some(sid(2, 2)));
        // ros2-client's Enhanced client names nothing: replies point at its writer.
        let other = c.request(now, sid(3, 1), None);
        assert_ne!(other.client, a.client);
        assert_eq!(c.reply_to(now, other), Some(sid(3, 1)));
        // Another client's reply (an rmw_cyclonedds client elsewhere) is not ours.
        assert_eq!(
            c.reply_to(
                now,
                RequestId {
                    client: a.client ^ 1,
                    seq: 1
                }
            ),
            None
        );
        assert!(c.knows(a.client));
        c.forget(&g(1));
        assert!(!c.knows(a.client));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn clients_are_bounded_and_the_least_recently_heard_goes_first() {
        let t0 = Instant::now();
        let mut c = FastClients::with_cap(2);
        let a = c.request(t0, sid(1, 1), None);
        let b = c.request(t0 + Duration::from_secs(1), sid(2, 1), None);
        c.reply_to(t0 + Duration::from_secs(2), a);
        let n = c.request(t0 + Duration::from_secs(3), sid(3, 1), None);
        assert_eq!(c.len(), 2);
        assert_eq!(c.evicted, 1);
        assert!(c.knows(a.client) && c.knows(n.client) && !c.knows(b.client));
    }

    #[test]
    fn a_reply_finds_its_call_once_and_strangers_are_told_apart() {
        let t0 = Instant::now();
        let mut p = PendingCalls::new(10, Some(Duration::from_secs(5)));
        let call = RequestId { client: 9, seq: 4 };
        p.insert(t0, 17, call);
        let ours = [g(5), g(6)];
        assert_eq!(p.answer(t0, Some(sid(7, 17)), &ours), Answer::NotOurs);
        assert_eq!(p.answer(t0, None, &ours), Answer::NotOurs);
        assert_eq!(p.answer(t0, Some(sid(6, 17)), &ours), Answer::Call(call));
        assert_eq!(p.answer(t0, Some(sid(5, 17)), &ours), Answer::Late);
        assert!(p.is_empty());
    }

    #[test]
    fn waiting_calls_expire_and_a_full_table_drops_the_oldest() {
        let t0 = Instant::now();
        let mut p = PendingCalls::new(2, Some(Duration::from_secs(5)));
        for seq in 1..=3 {
            p.insert(t0, seq, RequestId { client: 1, seq });
        }
        assert_eq!((p.len(), p.dropped_full), (2, 1));
        let ours = [g(1)];
        assert_eq!(p.answer(t0, Some(sid(1, 1)), &ours), Answer::Late);
        p.expire(t0 + Duration::from_secs(6));
        assert_eq!((p.len(), p.expired), (0, 2));
        assert_eq!(p.answer(t0, Some(sid(1, 3)), &ours), Answer::Late);
    }

    #[test]
    fn an_actions_result_call_waits_for_its_goal_however_long_it_runs() {
        let t0 = Instant::now();
        let mut result = PendingCalls::for_service("/arm/fibonacci/_action/get_result");
        let mut goal = PendingCalls::for_service("/arm/fibonacci/_action/send_goal");
        let call = RequestId { client: 3, seq: 1 };
        result.insert(t0, 7, call);
        goal.insert(t0, 7, call);
        // A goal that ran for a day: its result still finds the client's call.
        let later = t0 + Duration::from_secs(24 * 3600);
        goal.expire(later);
        assert_eq!((goal.len(), goal.expired), (0, 1));
        assert_eq!(
            result.answer(later, Some(sid(2, 7)), &[g(2)]),
            Answer::Call(call)
        );
        assert_eq!(result.expired, 0);
        // Still bounded: the oldest waiting call makes room when the table is full.
        for seq in 0..=MAX_PENDING as i64 {
            result.insert(later, seq, call);
        }
        assert_eq!((result.len(), result.dropped_full), (MAX_PENDING, 1));
    }

    proptest! {
        #[test]
        fn the_pending_table_never_outgrows_its_cap(
            ops in proptest::collection::vec((any::<bool>(), 0i64..64, 0u64..20), 0..400),
        ) {
            let t0 = Instant::now();
            let mut p = PendingCalls::new(8, Some(Duration::from_secs(5)));
            for (i, (insert, seq, dt)) in ops.into_iter().enumerate() {
                let now = t0 + Duration::from_millis(i as u64 * 10 + dt);
                if insert {
                    p.insert(now, seq, RequestId { client: 1, seq });
                } else {
                    let _ = p.answer(now, Some(sid(1, seq)), &[g(1)]);
                }
                prop_assert!(p.len() <= 8);
                prop_assert!(p.order.len() <= 2 * 8 + 1);
            }
        }
    }
}
