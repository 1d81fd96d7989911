//! How long an exported topic's sent messages are kept for subscribers that missed them
//! (end-to-end recovery of reliable KEEP_ALL topics: docs/architecture.md). One default for
//! the proxy (`resend_window_s:` at the top of its file, 10 s if unset) and an override per
//! `exports:` entry, on a topic, a raw DDS topic or allow/deny patterns of publishers:
//!
//! ```yaml
//! resend_window_s: 10
//! exports:
//!   - topic: /map_updates
//!     realm: warehouse
//!     resend_window_s: 60     # a slow topic whose every message matters
//!   - allow: ['^/telemetry/']
//!     realm: warehouse
//!     resend_window_s: 2
//! ```
//!
//! Keep-last and best-effort topics are never resent, whatever the window says: their
//! readers want the newest sample, not old ones.

use std::time::Duration;

use roam_config::doc::{ConfigError, Doc, FieldPath};
use roam_edge::recovery::WindowLimits;

use super::patterns::{Kind, Pattern};

/// The longest window a file may ask for: beyond it, the window's byte and message bounds
/// (8 MiB, 4,096 messages per stream) are what holds, and a longer time only misleads.
const MAX_SECONDS: f64 = 3600.0;

/// What an override applies to.
#[derive(Debug)]
enum Target {
    /// A `topic:` (its local ROS name) or `dds_topic:` (its DDS name) entry.
    Named(String),
    /// The publisher patterns of one allow/deny entry.
    Patterns(Vec<Pattern>),
}

/// Every export's resend window.
#[derive(Debug)]
pub struct ResendWindows {
    default: Duration,
    overrides: Vec<(Target, Duration)>,
}

impl Default for ResendWindows {
    fn default() -> Self {
        Self {
            default: WindowLimits::default().max_age,
            overrides: Vec::new(),
        }
    }
}

impl ResendWindows {
    /// The proxy-wide window, from `resend_window_s:` (at `at`), if given.
    pub fn new(doc: &Doc, at: &FieldPath, seconds: Option<f64>) -> Result<Self, ConfigError> {
        let mut w = Self::default();
        if let Some(d) = check(doc, at, seconds)? {
            w.default = d;
        }
        Ok(w)
    }

    /// An entry's own window for the topic it names (`local`: a topic's ROS name, a raw
    /// topic's DDS name).
    pub fn named(&mut self, local: &str, window: Duration) {
        self.overrides
            .push((Target::Named(local.to_string()), window));
    }

    /// An entry's own window for every publisher its patterns export.
    pub fn patterns(&mut self, patterns: &[Pattern], window: Duration) {
        let publishers: Vec<Pattern> = patterns
            .iter()
            .filter(|p| p.kind == Kind::Publishers)
            .cloned()
            .collect();
        self.overrides.push((Target::Patterns(publishers), window));
    }

    /// The window limits of an exported topic: `ros_name` its local ROS name (None for a
    /// raw DDS topic), `dds_topic` its DDS name. A named entry wins over patterns; the first
    /// matching entry of each kind counts, like the exports themselves.
    pub fn limits(&self, ros_name: Option<&str>, dds_topic: &str) -> WindowLimits {
        let named = self.overrides.iter().find(|(t, _)| {
            matches!(t, Target::Named(n) if Some(n.as_str()) == ros_name || n == dds_topic)
        });
        let pattern = || {
            self.overrides.iter().find(|(t, _)| match (t, ros_name) {
                (Target::Patterns(ps), Some(name)) => ps.iter().any(|p| p.matches(name)),
                _ => false,
            })
        };
        let max_age = named.or_else(pattern).map_or(self.default, |(_, d)| *d);
        WindowLimits {
            max_age,
            ..WindowLimits::default()
        }
    }
}

/// A `resend_window_s` value: seconds, at least 0 (0: nothing is kept), at most an hour.
pub fn check(
    doc: &Doc,
    at: &FieldPath,
    seconds: Option<f64>,
) -> Result<Option<Duration>, ConfigError> {
    let Some(s) = seconds else { return Ok(None) };
    if !(s.is_finite() && (0.0..=MAX_SECONDS).contains(&s)) {
        return Err(doc.err(
            at,
            format!("{s} is not a resend window: give seconds from 0 to {MAX_SECONDS}"),
        ));
    }
    Ok(Some(Duration::from_secs_f64(s)))
}

#[cfg(test)]
#[path = "resend_window_tests.rs"]
mod tests;
