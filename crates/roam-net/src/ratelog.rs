//! Warnings that cannot flood the log: at most one line per cause per interval, then a count.
//!
//! A flood of garbage connections must not become a flood of log lines (2,000 of them used to
//! give 1,449 WARN lines): the first event of a cause is logged in full, the ones that follow
//! within [`LogLimiter::interval`] are only counted, and the count is logged once the interval
//! is over ("N more ... in the last 10s"). [`LogLimiter`] is the pure part (fed the time);
//! [`RateLimitedLog`] the thread-safe shell that writes the lines.

use std::collections::HashMap;
use std::fmt::Display;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What to write for an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Emit {
    /// The first event of its cause in a while: log it in full.
    Full,
    /// Log a count instead: `count` events of this cause (this one included) over `over`.
    Summary { count: u64, over: Duration },
}

#[derive(Debug, Clone, Copy)]
struct Window {
    start: Instant,
    suppressed: u64,
}

/// Counts events per cause and decides which ones to log (see the module documentation).
#[derive(Debug)]
pub struct LogLimiter<K> {
    interval: Duration,
    windows: HashMap<K, Window>,
}

impl<K: Copy + Eq + Hash> LogLimiter<K> {
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            windows: HashMap::new(),
        }
    }

    /// Records one event of `cause`; says what to log now, if anything.
    pub fn event(&mut self, now: Instant, cause: K) -> Option<Emit> {
        let Some(w) = self.windows.get_mut(&cause) else {
            self.windows.insert(
                cause,
                Window {
                    start: now,
                    suppressed: 0,
                },
            );
            return Some(Emit::Full);
        };
        if now.saturating_duration_since(w.start) < self.interval {
            w.suppressed += 1;
            return None;
        }
        let emit = if w.suppressed == 0 {
            Emit::Full
        } else {
            Emit::Summary {
                count: w.suppressed + 1,
                over: now.saturating_duration_since(w.start),
            }
        };
        *w = Window {
            start: now,
            suppressed: 0,
        };
        Some(emit)
    }

    /// The counts whose interval is over, to log now: `(cause, count, over)`. A cause quiet
    /// for a whole interval is forgotten, so its next event is logged in full again.
    pub fn due(&mut self, now: Instant) -> Vec<(K, u64, Duration)> {
        let mut out = Vec::new();
        let interval = self.interval;
        self.windows.retain(|cause, w| {
            let age = now.saturating_duration_since(w.start);
            if age < interval {
                return true;
            }
            if w.suppressed == 0 {
                return false;
            }
            out.push((*cause, w.suppressed, age));
            *w = Window {
                start: now,
                suppressed: 0,
            };
            true
        });
        out
    }

    /// Every count not logged yet, whatever the age of its window (at shutdown); forgets all.
    pub fn drain(&mut self, now: Instant) -> Vec<(K, u64, Duration)> {
        self.windows
            .drain()
            .filter(|(_, w)| w.suppressed > 0)
            .map(|(cause, w)| (cause, w.suppressed, now.saturating_duration_since(w.start)))
            .collect()
    }
}

/// A [`LogLimiter`] that writes WARN lines. Causes display as what happened, in the plural
/// ("TCP connections refused: ..."), which reads both after a count and alone.
#[derive(Debug)]
pub struct RateLimitedLog<K> {
    limiter: Mutex<LogLimiter<K>>,
}

impl<K: Copy + Eq + Hash + Display> RateLimitedLog<K> {
    pub fn new(interval: Duration) -> Self {
        Self {
            limiter: Mutex::new(LogLimiter::new(interval)),
        }
    }

    /// Logs `detail()` if this is the first event of `cause` in a while, a count if the
    /// interval is over, and nothing otherwise.
    pub fn warn(&self, cause: K, detail: impl FnOnce() -> String) {
        let emit = self.limiter().event(Instant::now(), cause);
        match emit {
            Some(Emit::Full) => tracing::warn!("{}", detail()),
            Some(Emit::Summary { count, over }) => summary(&cause, count, over),
            None => {}
        }
    }

    /// Logs the counts whose interval is over. Call it about once a second.
    pub fn flush(&self) {
        for (cause, count, over) in self.limiter().due(Instant::now()) {
            summary(&cause, count, over);
        }
    }

    /// Logs every count not logged yet (when the process stops).
    pub fn flush_all(&self) {
        for (cause, count, over) in self.limiter().drain(Instant::now()) {
            summary(&cause, count, over);
        }
    }

    fn limiter(&self) -> std::sync::MutexGuard<'_, LogLimiter<K>> {
        // Every method leaves the limiter sound: a poisoned lock is still usable.
        self.limiter.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn summary(cause: &dyn Display, count: u64, over: Duration) {
    tracing::warn!(
        "{cause}: {count} more in the last {}s (one line per cause per interval)",
        over.as_secs().max(1)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    #[test]
    fn the_first_event_of_each_cause_is_logged_and_the_rest_counted() {
        let t0 = Instant::now();
        let mut l = LogLimiter::new(10 * S);
        assert_eq!(l.event(t0, "a"), Some(Emit::Full));
        assert_eq!(l.event(t0, "b"), Some(Emit::Full), "causes are independent");
        for i in 0..999 {
            assert_eq!(l.event(t0 + Duration::from_millis(i), "a"), None);
        }
        assert!(l.due(t0 + 9 * S).is_empty(), "the interval is not over");
        assert_eq!(l.due(t0 + 10 * S), vec![("a", 999, 10 * S)]);
        // "b" had nothing more: forgotten, so its next event is logged in full again.
        assert_eq!(l.event(t0 + 11 * S, "b"), Some(Emit::Full));
    }

    #[test]
    fn at_shutdown_every_count_is_given_whatever_its_age() {
        let t0 = Instant::now();
        let mut l = LogLimiter::new(10 * S);
        l.event(t0, "a");
        l.event(t0 + S, "a");
        l.event(t0 + S, "a");
        l.event(t0 + S, "quiet");
        l.event(t0 + S, "quiet-too");
        // The causes seen once were logged in full already: nothing is left to say for them.
        assert_eq!(l.drain(t0 + 2 * S), vec![("a", 2, 2 * S)]);
        assert_eq!(l.event(t0 + 3 * S, "a"), Some(Emit::Full), "forgotten");
    }

    #[test]
    fn a_continuing_flood_gives_one_count_per_interval() {
        let t0 = Instant::now();
        let mut l = LogLimiter::new(10 * S);
        let mut lines = 0;
        let mut counted = 0;
        // 100 events a second for a minute.
        for ms in (0..60_000).step_by(10) {
            match l.event(t0 + Duration::from_millis(ms), "flood") {
                Some(Emit::Full) => lines += 1,
                Some(Emit::Summary { count, .. }) => {
                    lines += 1;
                    counted += count;
                }
                None => {}
            }
        }
        for (_, count, _) in l.due(t0 + 60 * S + 10 * S) {
            lines += 1;
            counted += count;
        }
        assert_eq!(lines, 7, "one full line, then one count per 10 s");
        assert_eq!(counted + 1, 6000, "every event is accounted for");
    }

    #[test]
    fn an_event_after_a_quiet_interval_is_logged_in_full() {
        let t0 = Instant::now();
        let mut l = LogLimiter::new(10 * S);
        assert_eq!(l.event(t0, 1u8), Some(Emit::Full));
        assert_eq!(l.event(t0 + 10 * S, 1u8), Some(Emit::Full));
        assert_eq!(l.event(t0 + 12 * S, 1u8), None);
        assert_eq!(
            l.event(t0 + 25 * S, 1u8),
            Some(Emit::Summary {
                count: 2,
                over: 15 * S
            })
        );
    }
}
