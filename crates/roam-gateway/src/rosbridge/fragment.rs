//! Reassembling a client's `fragment` ops into the operation they carry. Pure and bounded: a
//! message's fragments may hold at most `max_bytes` in total, at most `max_messages` messages
//! are pending at once (a new one pushes out the oldest), and a message whose fragments stop
//! coming is forgotten after `timeout`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// The most fragments one message may be cut into.
pub const MAX_PARTS: usize = 1 << 20;

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
}

struct Partial {
    parts: Vec<Option<String>>,
    received: usize,
    bytes: usize,
    started: Instant,
}

pub struct Reassembly {
    pending: HashMap<String, Partial>,
    max_bytes: usize,
    max_messages: usize,
    timeout: Duration,
    /// Bytes held by all pending messages.
    held: usize,
}

impl Reassembly {
    pub fn new(max_bytes: usize, max_messages: usize, timeout: Duration) -> Self {
        Self {
            pending: HashMap::new(),
            max_bytes,
            max_messages: max_messages.max(1),
            timeout,
            held: 0,
        }
    }

    /// Bytes held for incomplete messages.
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
        if !self.pending.contains_key(id) && self.pending.len() >= self.max_messages {
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
                parts: vec![None; total],
                received: 0,
                bytes: 0,
                started: now,
            });
        if p.parts.len() != total {
            let was = p.parts.len();
            return Err(FragmentError::TotalChanged { num, total, was });
        }
        let size = data.len();
        if p.bytes + size > self.max_bytes {
            self.remove(id);
            return Err(FragmentError::TooLarge {
                id: id.to_string(),
                limit: self.max_bytes,
            });
        }
        if let Some(old) = p.parts[num].replace(data) {
            // A repeated fragment replaces the earlier copy.
            p.bytes -= old.len();
            self.held -= old.len();
        } else {
            p.received += 1;
        }
        p.bytes += size;
        self.held += size;
        if p.received < total {
            return Ok(None);
        }
        let Some(p) = self.pending.remove(id) else {
            return Ok(None);
        };
        self.held -= p.bytes;
        Ok(Some(p.parts.into_iter().flatten().collect()))
    }

    fn remove(&mut self, id: &str) {
        if let Some(p) = self.pending.remove(id) {
            self.held -= p.bytes;
        }
    }

    fn expire(&mut self, now: Instant) {
        let timeout = self.timeout;
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

    #[test]
    fn fragments_in_any_order_give_the_whole_text_once() {
        let mut r = Reassembly::new(100, 4, Duration::from_secs(10));
        let t = Instant::now();
        assert_eq!(r.add("m", "c".into(), 2, 3, t), Ok(None));
        assert_eq!(r.add("m", "a".into(), 0, 3, t), Ok(None));
        assert_eq!(r.add("m", "a".into(), 0, 3, t), Ok(None));
        assert_eq!(r.add("m", "b".into(), 1, 3, t), Ok(Some("abc".into())));
        assert_eq!(r.held(), 0);
    }

    #[test]
    fn bounds_hold_and_mistakes_are_named() {
        let mut r = Reassembly::new(10, 2, Duration::from_secs(1));
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
        assert_eq!(r.held(), 2);
        assert_eq!(
            r.add("a", "2".into(), 1, 2, t + Duration::from_millis(3)),
            Ok(None)
        );
        // Silent messages are forgotten.
        r.add("z", "1".into(), 0, 2, t + Duration::from_secs(5))
            .unwrap();
        assert_eq!(r.held(), 1);
    }
}
