//! What one client may bring into a router: messages and bytes per second, as a token
//! bucket that holds one second of either (so a robot's burst, a point cloud at once, passes
//! untouched and only a sustained rate above the quota is held back). Pure: fed the time and
//! each frame's size, no I/O; [`LinkQuota`] shares one bucket between a link's reader tasks,
//! and [`ClientQuotas`] one between every link of a client identity, so a client that opens
//! ten links still has one quota.
//!
//! Over its quota, a reliable message is not dropped: its reader waits the time the bucket
//! needs to refill, so the link's QUIC flow control (or TCP's window) pushes back on the
//! sender, and the flooder alone slows down. A best-effort message over the quota is dropped
//! (counted), as a full best-effort lane drops.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// A quota: at most this many data messages and bytes per second (0: no limit on that one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuotaLimits {
    pub msgs_per_s: u64,
    pub bytes_per_s: u64,
}

impl QuotaLimits {
    /// No limit at all.
    pub const NONE: Self = Self {
        msgs_per_s: 0,
        bytes_per_s: 0,
    };

    pub fn is_none(&self) -> bool {
        self.msgs_per_s == 0 && self.bytes_per_s == 0
    }
}

impl Default for QuotaLimits {
    /// Far above what a client program carries (a `roam pub`, a gateway and its web
    /// clients, an edge program: thousands of messages a second; robots' proxies link as
    /// routers and have no quota), and a small share of what a router routes (about 250,000
    /// small messages a second on two cores): a program that reaches it is flooding, and its
    /// neighbours keep their latency (bench/FAULTS.md, "flood"). The bytes allow a client a
    /// gigabyte a second of large messages.
    fn default() -> Self {
        Self {
            msgs_per_s: 20_000,
            bytes_per_s: 1 << 30,
        }
    }
}

/// What a message may do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Within the quota: pass.
    Now,
    /// Over it: a reliable message passes after this wait (the quota is charged already).
    After(Duration),
    /// Over it, best effort: dropped (nothing charged).
    Drop,
}

/// One second of each limit, refilled continuously.
#[derive(Debug, Clone)]
pub struct TokenBucket {
    limits: QuotaLimits,
    /// Tokens left (negative: the debt reliable messages ran up while waiting).
    msgs: f64,
    bytes: f64,
    at: Instant,
}

impl TokenBucket {
    pub fn new(limits: QuotaLimits, now: Instant) -> Self {
        Self {
            limits,
            msgs: limits.msgs_per_s as f64,
            bytes: limits.bytes_per_s as f64,
            at: now,
        }
    }

    /// Charges one message of `bytes` arriving at `now`.
    pub fn take(&mut self, now: Instant, bytes: usize, best_effort: bool) -> Admit {
        self.refill(now);
        let (m, b) = (
            self.limits.msgs_per_s as f64,
            self.limits.bytes_per_s as f64,
        );
        let need_m = if m > 0.0 { 1.0 } else { 0.0 };
        let need_b = if b > 0.0 { bytes as f64 } else { 0.0 };
        // Whole messages: one larger than a second of bytes may still pass on a full bucket.
        let fits = |have: f64, need: f64, cap: f64| need == 0.0 || have >= need.min(cap);
        if fits(self.msgs, need_m, m) && fits(self.bytes, need_b, b) {
            self.msgs -= need_m;
            self.bytes -= need_b;
            return Admit::Now;
        }
        if best_effort {
            return Admit::Drop;
        }
        self.msgs -= need_m;
        self.bytes -= need_b;
        let wait = |have: f64, rate: f64| {
            if rate > 0.0 && have < 0.0 {
                -have / rate
            } else {
                0.0
            }
        };
        let secs = wait(self.msgs, m).max(wait(self.bytes, b));
        Admit::After(Duration::from_nanos((secs * 1e9).round() as u64))
    }

    fn refill(&mut self, now: Instant) {
        let dt = now.saturating_duration_since(self.at).as_secs_f64();
        self.at = self.at.max(now);
        let (m, b) = (
            self.limits.msgs_per_s as f64,
            self.limits.bytes_per_s as f64,
        );
        self.msgs = (self.msgs + dt * m).min(m);
        self.bytes = (self.bytes + dt * b).min(b);
    }
}

/// A client's bucket, shared by its links' reader tasks.
#[derive(Debug)]
pub struct LinkQuota {
    bucket: Mutex<TokenBucket>,
    /// Who it belongs to, for the one warning when it first holds something back.
    identity: String,
    warned: std::sync::atomic::AtomicBool,
}

impl LinkQuota {
    pub fn new(limits: QuotaLimits) -> Self {
        Self::of("a client", limits)
    }

    /// The bucket of client `identity`.
    pub fn of(identity: &str, limits: QuotaLimits) -> Self {
        Self {
            bucket: Mutex::new(TokenBucket::new(limits, Instant::now())),
            identity: identity.to_string(),
            warned: std::sync::atomic::AtomicBool::new(false),
        }
    }

    pub fn take(&self, bytes: usize, best_effort: bool) -> Admit {
        let mut b = self.bucket.lock().unwrap_or_else(|p| p.into_inner());
        b.take(Instant::now(), bytes, best_effort)
    }

    /// Says once that this client went over its quota: from then on it is counted only.
    fn warn_once(&self) {
        if self.warned.swap(true, Ordering::Relaxed) {
            return;
        }
        let limits = self
            .bucket
            .lock()
            .map(|b| b.limits)
            .unwrap_or(QuotaLimits::NONE);
        tracing::warn!(
            client = %self.identity,
            msgs_per_s = limits.msgs_per_s,
            bytes_per_s = limits.bytes_per_s,
            "client over its quota (link.client_max_messages_per_s, link.client_max_bytes_per_s): its reliable data is held back, its best-effort data dropped, counted as quota_waits and dropped_quota on its links"
        );
    }
}

/// Waits shorter than this are left as debt (the next ones pay it): a timer cannot sleep
/// less, and sleeping per message would hold a fast link far below its quota.
const LEAST_WAIT: Duration = Duration::from_millis(1);

/// Holds a data frame from a link with a quota back while the link is over it; false: drop
/// it (best effort over the quota). Counted in the link's stats. Control frames always pass.
pub async fn admit(
    quota: Option<&LinkQuota>,
    frame: &roam_proto::Frame,
    stats: &crate::link::LinkStats,
) -> bool {
    let (Some(q), roam_proto::Frame::Data { envelope, .. }) = (quota, frame) else {
        return true;
    };
    match q.take(envelope.len(), crate::link::is_best_effort(envelope)) {
        Admit::Now => true,
        Admit::After(wait) if wait < LEAST_WAIT => true,
        Admit::After(wait) => {
            q.warn_once();
            stats.quota_waits.fetch_add(1, Ordering::Relaxed);
            tokio::time::sleep(wait).await;
            true
        }
        Admit::Drop => {
            q.warn_once();
            stats.dropped_quota.fetch_add(1, Ordering::Relaxed);
            false
        }
    }
}

/// The quota of a link to `role`: client links get `limits` (unless they are none), router
/// links none (they carry whole meshes' traffic, and routers are trusted to route).
pub fn for_peer(role: roam_proto::frame::Role, limits: QuotaLimits) -> Option<Arc<LinkQuota>> {
    (role == roam_proto::frame::Role::Client && !limits.is_none())
        .then(|| Arc::new(LinkQuota::new(limits)))
}

/// A router's client quotas, one bucket per client identity shared by all of its links
/// while any is up: a client that links several times (on purpose, or a restarted one whose
/// old link has not timed out yet) cannot multiply its quota.
#[derive(Debug)]
pub struct ClientQuotas {
    limits: QuotaLimits,
    by_identity: Mutex<Identities>,
}

#[derive(Debug, Default)]
struct Identities {
    buckets: HashMap<String, Weak<LinkQuota>>,
    /// Forget the ended ones once this many are held (twice the live ones after each sweep,
    /// so a sweep costs nothing per link on average).
    sweep_at: usize,
}

impl ClientQuotas {
    pub fn new(limits: QuotaLimits) -> Self {
        Self {
            limits,
            by_identity: Mutex::new(Identities::default()),
        }
    }

    /// The bucket of a link to `identity` in `role`: the one its other live links share, or
    /// a new one; none for routers, or when there are no limits.
    pub fn for_peer(
        &self,
        role: roam_proto::frame::Role,
        identity: &str,
    ) -> Option<Arc<LinkQuota>> {
        if role != roam_proto::frame::Role::Client || self.limits.is_none() {
            return None;
        }
        let mut ids = self.by_identity.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(q) = ids.buckets.get(identity).and_then(Weak::upgrade) {
            return Some(q);
        }
        if ids.buckets.len() >= ids.sweep_at {
            ids.buckets.retain(|_, w| w.strong_count() > 0);
            ids.sweep_at = (ids.buckets.len() * 2).max(64);
        }
        let q = Arc::new(LinkQuota::of(identity, self.limits));
        ids.buckets.insert(identity.to_string(), Arc::downgrade(&q));
        Some(q)
    }

    /// Identities with a bucket held now (ended ones may linger until the next sweep).
    #[cfg(test)]
    fn held(&self) -> usize {
        let ids = self.by_identity.lock().unwrap_or_else(|p| p.into_inner());
        ids.buckets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use roam_proto::frame::Role;

    #[test]
    fn links_of_one_identity_share_a_bucket_and_others_have_their_own() {
        let quotas = ClientQuotas::new(MSGS);
        let a1 = quotas.for_peer(Role::Client, "robot").unwrap();
        let a2 = quotas.for_peer(Role::Client, "robot").unwrap();
        let b = quotas.for_peer(Role::Client, "laptop").unwrap();
        assert!(Arc::ptr_eq(&a1, &a2));
        assert!(!Arc::ptr_eq(&a1, &b));
        // One second of the quota between both links of "robot", then they wait.
        for i in 0..100 {
            let q = if i % 2 == 0 { &a1 } else { &a2 };
            assert_eq!(q.take(10, false), Admit::Now);
        }
        assert!(matches!(a2.take(10, false), Admit::After(_)));
        assert_eq!(b.take(10, false), Admit::Now);
        assert!(quotas.for_peer(Role::Router, "r2").is_none());
        assert!(ClientQuotas::new(QuotaLimits::NONE)
            .for_peer(Role::Client, "robot")
            .is_none());
    }

    #[test]
    fn an_identity_whose_links_ended_starts_afresh_and_is_forgotten() {
        let quotas = ClientQuotas::new(MSGS);
        let a = quotas.for_peer(Role::Client, "robot").unwrap();
        for _ in 0..100 {
            a.take(10, false);
        }
        drop(a);
        let again = quotas.for_peer(Role::Client, "robot").unwrap();
        assert_eq!(again.take(10, false), Admit::Now);
        drop(again);
        // Many short-lived identities do not pile up.
        for i in 0..1000 {
            let _ = quotas.for_peer(Role::Client, &format!("c{i}"));
        }
        assert!(quotas.held() <= 128, "{} held", quotas.held());
    }

    const MSGS: QuotaLimits = QuotaLimits {
        msgs_per_s: 100,
        bytes_per_s: 0,
    };

    #[test]
    fn a_second_of_messages_passes_at_once_and_the_rest_at_the_quota_rate() {
        let t = Instant::now();
        let mut b = TokenBucket::new(MSGS, t);
        for _ in 0..100 {
            assert_eq!(b.take(t, 10, false), Admit::Now);
        }
        // The 101st waits a hundredth of a second, the 102nd two.
        assert_eq!(
            b.take(t, 10, false),
            Admit::After(Duration::from_millis(10))
        );
        assert_eq!(
            b.take(t, 10, false),
            Admit::After(Duration::from_millis(20))
        );
        // After the waits, the debt is paid: one more hundredth, one more message.
        let later = t + Duration::from_millis(30);
        assert_eq!(b.take(later, 10, false), Admit::Now);
        assert!(matches!(b.take(later, 10, false), Admit::After(_)));
    }

    #[test]
    fn best_effort_over_the_quota_is_dropped_and_costs_nothing() {
        let t = Instant::now();
        let mut b = TokenBucket::new(MSGS, t);
        for _ in 0..100 {
            assert_eq!(b.take(t, 10, true), Admit::Now);
        }
        for _ in 0..50 {
            assert_eq!(b.take(t, 10, true), Admit::Drop);
        }
        // Dropped messages took no tokens: 10 ms later exactly one passes.
        assert_eq!(b.take(t + Duration::from_millis(10), 10, true), Admit::Now);
        assert_eq!(b.take(t + Duration::from_millis(10), 10, true), Admit::Drop);
    }

    #[test]
    fn bytes_are_limited_too_and_a_message_larger_than_a_second_still_passes_on_a_full_bucket() {
        let t = Instant::now();
        let q = QuotaLimits {
            msgs_per_s: 0,
            bytes_per_s: 1000,
        };
        let mut b = TokenBucket::new(q, t);
        assert_eq!(b.take(t, 600, false), Admit::Now);
        // 600 more: 200 short, a fifth of a second.
        assert_eq!(
            b.take(t, 600, false),
            Admit::After(Duration::from_millis(200))
        );
        // A 5,000-byte message on a full bucket passes (it empties it), not forever held.
        let mut b = TokenBucket::new(q, t);
        assert_eq!(b.take(t, 5000, false), Admit::Now);
        assert!(matches!(b.take(t, 1, false), Admit::After(_)));
    }

    #[test]
    fn a_sustained_flood_is_held_to_the_quota() {
        // 10,000 messages offered at once, each waited for as a reader would: the last one
        // passes after (10,000 - 100) / 100 s.
        let t = Instant::now();
        let mut b = TokenBucket::new(MSGS, t);
        let mut now = t;
        for _ in 0..10_000 {
            if let Admit::After(w) = b.take(now, 10, false) {
                now += w;
            }
        }
        let took = now - t;
        assert!((took.as_secs_f64() - 99.0).abs() < 0.05, "{took:?}");
    }

    #[test]
    fn no_limit_never_holds_anything() {
        let t = Instant::now();
        let mut b = TokenBucket::new(QuotaLimits::NONE, t);
        for _ in 0..100_000 {
            assert_eq!(b.take(t, 65_536, false), Admit::Now);
        }
    }

    #[test]
    fn a_clock_that_goes_back_refills_nothing() {
        let t = Instant::now() + Duration::from_secs(10);
        let mut b = TokenBucket::new(MSGS, t);
        for _ in 0..100 {
            b.take(t, 1, false);
        }
        assert!(matches!(
            b.take(t - Duration::from_secs(5), 1, false),
            Admit::After(_)
        ));
    }
}
