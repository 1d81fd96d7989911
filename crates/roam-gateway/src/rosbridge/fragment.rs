//! Reassembling a client's `fragment` ops into the operation they carry. Pure and bounded by
//! what has arrived, never by what a fragment claims: a fragment's `total` reserves nothing
//! (the parts are kept in a map as they come), each part costs its bytes plus
//! [`PART_OVERHEAD`], one message may hold at most `max_bytes`, all of a client's pending
//! messages together at most `max_held`, at most `max_messages` messages are pending at once
//! (a new one pushes out the oldest), and a message whose fragments stop coming is forgotten
//! after `timeout`.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

/// The most fragments one message may be cut into.
pub const MAX_PARTS: usize = 1 << 20;

/// What holding one part costs besides its data, counted against the budgets (a map entry
/// and a string's allocation), so that a million one-byte parts cost what they hold.
pub const PART_OVERHEAD: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FragmentError {
    #[error("fragment {num} of {total}: num is 0 to total-1, and total 1 to {MAX_PARTS}")]
    OutOfRange { num: usize, total: usize },
    #[error("fragment {num}: this message was announced with {was} fragments, not {total}")]
    TotalChanged {
        num: usize,
        total: usize,
        was: usize,
    },
    #[error("the fragments of message {id:?} exceed {limit} bytes; it is dropped")]
    TooLarge { id: String, limit: usize },
    #[error("this client's pending fragments would exceed {limit} bytes (client_queue_bytes); message {id:?} is dropped")]
    OverBudget { id: String, limit: usize },
}

struct Partial {
    /// Parts by number, as they arrived.
    parts: BTreeMap<usize, String>,
    total: usize,
    /// What the parts cost (data and overhead).
    bytes: usize,
    started: Instant,
}

/// The bounds of one client's reassembly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FragmentLimits {
    /// Bytes one message's parts may cost at most.
    pub max_bytes: usize,
    /// Bytes all pending messages' parts may cost together at most.
    pub max_held: usize,
    /// Messages pending at once at most.
    pub max_messages: usize,
    /// How long an incomplete message is kept.
    pub timeout: Duration,
}

pub struct Reassembly {
    pending: HashMap<String, Partial>,
    limits: FragmentLimits,
    /// Bytes held by all pending messages (data and overhead).
    held: usize,
}

impl Reassembly {
    pub fn new(limits: FragmentLimits) -> Self {
        Self {
            pending: HashMap::new(),
            limits: FragmentLimits {
                max_messages: limits.max_messages.max(1),
                ..limits
            },
            held: 0,
        }
    }

    /// Messages pending now.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Bytes held for incomplete messages (data and overhead).
    pub fn held(&self) -> usize {
        self.held
    }

    /// Adds a fragment; the whole text once its last fragment is in.
    pub fn add(
        &mut self,
        id: &str,
        data: String,
        num: usize,
        total: usize,
        now: Instant,
    ) -> Result<Option<String>, FragmentError> {
        if total == 0 || total > MAX_PARTS || num >= total {
            return Err(FragmentError::OutOfRange { num, total });
        }
        self.expire(now);
        if !self.pending.contains_key(id) && self.pending.len() >= self.limits.max_messages {
            let oldest = self
                .pending
                .iter()
                .min_by_key(|(_, p)| p.started)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.remove(&k);
            }
        }
        let p = self
            .pending
            .entry(id.to_string())
            .or_insert_with(|| Partial {
                parts: BTreeMap::new(),
                total,
                bytes: 0,
                started: now,
            });
        if p.total != total {
            let was = p.total;
            return Err(FragmentError::TotalChanged { num, total, was });
        }
        let cost = data.len() + PART_OVERHEAD;
        // A repeated fragment replaces the earlier copy.
        let replaced = p.parts.get(&num).map_or(0, |old| old.len() + PART_OVERHEAD);
        if p.bytes - replaced + cost > self.limits.max_bytes {
            self.remove(id);
            return Err(FragmentError::TooLarge {
                id: id.to_string(),
                limit: self.limits.max_bytes,
            });
        }
        if self.held - replaced + cost > self.limits.max_held {
            self.remove(id);
            return Err(FragmentError::OverBudget {
                id: id.to_string(),
                limit: self.limits.max_held,
            });
        }
        p.parts.insert(num, data);
        p.bytes = p.bytes - replaced + cost;
        self.held = self.held - replaced + cost;
        if p.parts.len() < total {
            return Ok(None);
        }
        let Some(p) = self.pending.remove(id) else {
            return Ok(None);
        };
        self.held -= p.bytes;
        Ok(Some(p.parts.into_values().collect()))
    }

    fn remove(&mut self, id: &str) {
        if let Some(p) = self.pending.remove(id) {
            self.held -= p.bytes;
        }
    }

    fn expire(&mut self, now: Instant) {
        let timeout = self.limits.timeout;
        let old: Vec<String> = self
            .pending
            .iter()
            .filter(|(_, p)| now.saturating_duration_since(p.started) > timeout)
            .map(|(k, _)| k.clone())
            .collect();
        for k in old {
            self.remove(&k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(max_bytes: usize, max_held: usize, max_messages: usize, secs: u64) -> FragmentLimits {
        FragmentLimits {
            max_bytes,
            max_held,
            max_messages,
            timeout: Duration::from_secs(secs),
        }
    }

    /// The cost of parts holding `data` bytes in all.
    fn cost(parts: usize, data: usize) -> usize {
        parts * PART_OVERHEAD + data
    }

    #[test]
    fn fragments_in_any_order_give_the_whole_text_once() {
        let mut r = Reassembly::new(limits(1000, 1000, 4, 10));
        let t = Instant::now();
        assert_eq!(r.add("m", "c".into(), 2, 3, t), Ok(None));
        assert_eq!(r.add("m", "a".into(), 0, 3, t), Ok(None));
        assert_eq!(r.add("m", "a".into(), 0, 3, t), Ok(None));
        assert_eq!(r.add("m", "b".into(), 1, 3, t), Ok(Some("abc".into())));
        assert_eq!(r.held(), 0);
    }

    #[test]
    fn bounds_hold_and_mistakes_are_named() {
        let mut r = Reassembly::new(limits(cost(2, 10), 1 << 20, 2, 1));
        let t = Instant::now();
        assert!(matches!(
            r.add("m", "x".into(), 3, 3, t),
            Err(FragmentError::OutOfRange { .. })
        ));
        assert!(matches!(
            r.add("m", "x".into(), 0, 0, t),
            Err(FragmentError::OutOfRange { .. })
        ));
        r.add("m", "12345".into(), 0, 3, t).unwrap();
        assert!(matches!(
            r.add("m", "x".into(), 1, 4, t),
            Err(FragmentError::TotalChanged { was: 3, .. })
        ));
        assert!(matches!(
            r.add("m", "123456".into(), 1, 3, t),
            Err(FragmentError::TooLarge { .. })
        ));
        assert_eq!(r.held(), 0);
        // A third pending message pushes out the oldest.
        r.add("a", "1".into(), 0, 2, t).unwrap();
        r.add("b", "1".into(), 0, 2, t + Duration::from_millis(1))
            .unwrap();
        r.add("c", "1".into(), 0, 2, t + Duration::from_millis(2))
            .unwrap();
        assert_eq!(r.held(), cost(2, 2));
        assert_eq!(
            r.add("a", "2".into(), 1, 2, t + Duration::from_millis(3)),
            Ok(None)
        );
        // Silent messages are forgotten.
        r.add("z", "1".into(), 0, 2, t + Duration::from_secs(5))
            .unwrap();
        assert_eq!(r.held(), cost(1, 1));
    }

    #[test]
    fn a_claimed_total_reserves_nothing_and_the_client_budget_holds() {
        // The attack: the last of a million fragments, sixteen times; each costs only what
        // it brought.
        let mut r = Reassembly::new(limits(1 << 20, 4096, 16, 30));
        let t = Instant::now();
        for n in 0..16 {
            let got = r.add(&format!("f{n}"), "A".into(), MAX_PARTS - 1, MAX_PARTS, t);
            assert_eq!(got, Ok(None));
        }
        assert_eq!(r.pending(), 16);
        assert_eq!(r.held(), cost(16, 16));
        // All pending messages together stay under the client's budget.
        let big = "B".repeat(4096);
        assert!(matches!(
            r.add("g", big, 0, 2, t),
            Err(FragmentError::OverBudget { .. })
        ));
        assert!(r.held() <= 4096);
        let mut refused = 0;
        for i in 0..1000 {
            if r.add("h", "C".repeat(10), i, 2000, t).is_err() {
                refused += 1;
                break;
            }
        }
        assert_eq!(refused, 1);
        assert!(r.held() <= 4096, "{}", r.held());
    }
}
