//! Test payloads for `roam pub --size` and how `roam sub` prints what it receives.

use ring::digest;

/// A deterministic payload of `size` bytes for message `seq`, so a receiver (or a test) can
/// check every byte arrived without the sender shipping a copy.
pub fn pattern(seq: u64, size: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(size);
    let mut x = seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    while out.len() < size {
        // xorshift64: cheap, and it fills 8 bytes per step.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let take = (size - out.len()).min(8);
        out.extend_from_slice(&x.to_le_bytes()[..take]);
    }
    out
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex::encode(digest::digest(&digest::SHA256, data))
}

/// One line per received message: sequence, latency, size, then the text or a digest.
pub fn describe(seq: u64, latency_us: i64, payload: &[u8], signer: Option<&str>) -> String {
    let mut line = format!("seq={seq} latency_us={latency_us} size={}", payload.len());
    if let Some(s) = signer {
        line.push_str(&format!(" signer={s}"));
    }
    match std::str::from_utf8(payload) {
        Ok(text) if payload.len() <= 4096 && !text.chars().any(|c| c.is_control() && c != '\t') => {
            line.push_str(&format!(" text={text:?}"));
        }
        _ => line.push_str(&format!(" sha256={}", sha256_hex(payload))),
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pattern_is_deterministic_and_distinct() {
        assert_eq!(pattern(3, 100), pattern(3, 100));
        assert_ne!(pattern(3, 100), pattern(4, 100));
        assert_eq!(pattern(1, 13).len(), 13);
        assert!(describe(1, 5, b"hello", None).ends_with("text=\"hello\""));
        assert!(describe(1, 5, &pattern(1, 64), None).contains("sha256="));
    }
}
