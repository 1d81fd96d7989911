//! The `link:` section that the router's and the proxy's files share: QUIC and TCP link
//! settings, checked and turned into a [`LinkConfig`].

use std::time::Duration;

use roam_net::link::LinkConfig;
use serde::Deserialize;

use crate::doc::{ConfigError, Doc, FieldPath};

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkFile {
    pub idle_timeout_ms: Option<u64>,
    pub keepalive_ms: Option<u64>,
    pub max_message_bytes: Option<usize>,
    pub reliable_queue_messages: Option<usize>,
    pub reliable_queue_bytes: Option<usize>,
    pub max_backoff_ms: Option<u64>,
    pub stall_timeout_ms: Option<u64>,
    pub congestion: Option<String>,
    pub udp_buffer_bytes: Option<usize>,
    pub window_bytes: Option<usize>,
    pub max_udp_payload_bytes: Option<u16>,
    pub ack_every_packets: Option<u32>,
    pub max_ack_delay_ms: Option<u64>,
    pub initial_window_bytes: Option<u64>,
    pub fec: Option<bool>,
    pub handshake_timeout_ms: Option<u64>,
    /// A QUIC peer silent this long after being sent something is taken for dead (0: only
    /// the idle timeout).
    pub silence_timeout_ms: Option<u64>,
    pub max_unauthenticated: Option<usize>,
    pub max_unauthenticated_per_source: Option<usize>,
    /// What one client link may bring into this router per second (0: no limit): data
    /// messages and their bytes. Over it, reliable data is held back (the client slows down)
    /// and best-effort data dropped, counted per link.
    pub client_max_messages_per_s: Option<u64>,
    pub client_max_bytes_per_s: Option<u64>,
    /// Names (subscriptions and publications) one client link may hold (0: no limit); over
    /// it, further ones are refused and counted per link.
    pub client_max_names: Option<usize>,
}

impl LinkFile {
    /// How long a reliable topic waits for a full subscriber link (default 5 s).
    pub fn stall_timeout(&self) -> Duration {
        Duration::from_millis(self.stall_timeout_ms.unwrap_or(5000))
    }

    /// Refuses values that cannot work, naming the field (under `link.`) and what is valid.
    pub fn check(&self) -> Result<(), LinkFieldError> {
        let bad = |field: &'static str, message: String| Err(LinkFieldError { field, message });
        let range = |field: &'static str, v: u64, min: u64, max: u64, unit: &str, why: &str| {
            if (min..=max).contains(&v) {
                Ok(())
            } else {
                bad(field, format!("{v} {why}; give {min} to {max} {unit}"))
            }
        };
        const DAY_MS: u64 = 24 * 3600 * 1000;
        if let Some(ms) = self.idle_timeout_ms {
            range(
                "idle_timeout_ms",
                ms,
                100,
                DAY_MS,
                "milliseconds (default 3000)",
                "is not a usable idle timeout: a peer silent this long is declared dead",
            )?;
        }
        if let Some(ms) = self.keepalive_ms {
            range(
                "keepalive_ms",
                ms,
                10,
                DAY_MS,
                "milliseconds (default 500), shorter than link.idle_timeout_ms",
                "is not a usable keepalive interval",
            )?;
        }
        if let Some(b) = self.max_message_bytes {
            // A frame's length is 32 bits and carries up to 1 KiB beside the message.
            let max = u64::from(u32::MAX) - 1024;
            range(
                "max_message_bytes",
                b as u64,
                1024,
                max,
                "bytes (default 134217728)",
                "cannot carry a message",
            )?;
        }
        if self.reliable_queue_messages == Some(0) {
            return bad(
                "reliable_queue_messages",
                "0 holds no message; give at least 1 (default 8192)".into(),
            );
        }
        if self.reliable_queue_bytes == Some(0) {
            return bad(
                "reliable_queue_bytes",
                "0 holds no message; give at least 1 (default 8388608)".into(),
            );
        }
        if let Some(ms) = self.max_backoff_ms {
            range(
                "max_backoff_ms",
                ms,
                10,
                DAY_MS,
                "milliseconds (default 1000)",
                "is not a usable reconnection delay",
            )?;
        }
        if let Some(b) = self.udp_buffer_bytes {
            range(
                "udp_buffer_bytes",
                b as u64,
                65536,
                1 << 31,
                "bytes (default 8388608; the kernel caps it)",
                "is not a usable socket buffer",
            )?;
        }
        if let Some(b) = self.window_bytes {
            range(
                "window_bytes",
                b as u64,
                65536,
                1 << 30,
                "bytes (default 8388608)",
                "is not a usable QUIC window",
            )?;
        }
        if let Some(b) = self.max_udp_payload_bytes {
            range(
                "max_udp_payload_bytes",
                b.into(),
                1200,
                65527,
                "bytes (default 9000, a jumbo frame)",
                "is not a usable QUIC packet size",
            )?;
        }
        if let Some(n) = self.ack_every_packets {
            range(
                "ack_every_packets",
                n.into(),
                0,
                1000,
                "packets (default 0: QUIC's own, every second packet)",
                "is not a usable acknowledgement frequency",
            )?;
        }
        if let Some(ms) = self.max_ack_delay_ms {
            range(
                "max_ack_delay_ms",
                ms,
                1,
                25,
                "milliseconds (default 1; the peer caps it at 25 or the round trip)",
                "is not a usable acknowledgement delay",
            )?;
        }
        if let Some(b) = self.initial_window_bytes {
            range(
                "initial_window_bytes",
                b,
                2400,
                64 << 20,
                "bytes (default 262144; QUIC's Cubic: 12000)",
                "is not a usable initial congestion window",
            )?;
        }
        if let Some(name) = &self.congestion {
            if let Err(e) = name.parse::<roam_net::link::Congestion>() {
                return bad("congestion", e);
            }
        }
        if let Some(ms) = self.handshake_timeout_ms {
            range(
                "handshake_timeout_ms",
                ms,
                100,
                DAY_MS,
                "milliseconds (default 10000)",
                "is not a usable handshake deadline: a connection not authenticated by then is closed",
            )?;
        }
        if let Some(ms) = self.silence_timeout_ms.filter(|&ms| ms != 0) {
            range(
                "silence_timeout_ms",
                ms,
                100,
                DAY_MS,
                "milliseconds, or 0 for none (default 1000)",
                "is not a usable silence limit: a peer that answers nothing this long is taken for dead",
            )?;
        }
        for (field, value, default) in [
            ("max_unauthenticated", self.max_unauthenticated, 256),
            (
                "max_unauthenticated_per_source",
                self.max_unauthenticated_per_source,
                16,
            ),
        ] {
            if value == Some(0) {
                return bad(
                    field,
                    format!("0 admits no connection at all; give at least 1 (default {default})"),
                );
            }
        }
        Ok(())
    }

    pub fn apply(&self, mut c: LinkConfig) -> Result<LinkConfig, LinkFieldError> {
        self.check()?;
        if let Some(ms) = self.idle_timeout_ms {
            c.idle_timeout = Duration::from_millis(ms);
            // Keep the default keepalive unless it would not fit in a shorter timeout.
            c.keepalive = c.keepalive.min(c.idle_timeout / 4);
        }
        if let Some(ms) = self.keepalive_ms {
            c.keepalive = Duration::from_millis(ms);
        }
        if c.keepalive >= c.idle_timeout {
            return Err(LinkFieldError {
                field: "keepalive_ms",
                message: format!(
                    "{} ms must be shorter than link.idle_timeout_ms ({} ms), or the peer is declared dead between two keepalives",
                    c.keepalive.as_millis(),
                    c.idle_timeout.as_millis()
                ),
            });
        }
        if let Some(b) = self.max_message_bytes {
            c.max_frame = b.saturating_add(1024);
        }
        if let Some(n) = self.reliable_queue_messages {
            c.reliable.max_messages = n;
        }
        if let Some(b) = self.reliable_queue_bytes {
            c.reliable.max_bytes = b;
        }
        if let Some(b) = self.udp_buffer_bytes {
            c.udp_buffer_bytes = b;
        }
        if let Some(b) = self.window_bytes {
            c.window_bytes = b;
        }
        if let Some(b) = self.max_udp_payload_bytes {
            c.max_udp_payload = b;
        }
        if let Some(n) = self.ack_every_packets {
            c.ack_every = n;
        }
        if let Some(ms) = self.max_ack_delay_ms {
            c.max_ack_delay = Duration::from_millis(ms);
        }
        if let Some(b) = self.initial_window_bytes {
            c.initial_window_bytes = b;
        }
        if let Some(on) = self.fec {
            c.fec = on;
        }
        if let Some(name) = &self.congestion {
            c.congestion = name.parse().map_err(|message| LinkFieldError {
                field: "congestion",
                message,
            })?;
        }
        if let Some(ms) = self.handshake_timeout_ms {
            c.handshake_timeout = Duration::from_millis(ms);
        }
        if let Some(ms) = self.silence_timeout_ms {
            c.silence_timeout = Duration::from_millis(ms);
        }
        if let Some(n) = self.max_unauthenticated {
            c.max_unauthenticated = n;
        }
        if let Some(n) = self.max_unauthenticated_per_source {
            c.max_unauthenticated_per_source = n;
        }
        if let Some(n) = self.client_max_messages_per_s {
            c.client_quota.msgs_per_s = n;
        }
        if let Some(n) = self.client_max_bytes_per_s {
            c.client_quota.bytes_per_s = n;
        }
        if let Some(n) = self.client_max_names {
            c.client_max_names = n;
        }
        Ok(c)
    }
}

/// A `link:` value that cannot work: the field (without `link.`) and why, with what is valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("link.{field}: {message}")]
pub struct LinkFieldError {
    pub field: &'static str,
    pub message: String,
}

impl LinkFieldError {
    /// The same mistake located in a configuration file.
    pub fn located(&self, doc: &Doc) -> ConfigError {
        doc.err(
            &FieldPath::new("link").key(self.field),
            self.message.clone(),
        )
    }
}

impl From<LinkFieldError> for String {
    fn from(e: LinkFieldError) -> String {
        e.to_string()
    }
}
