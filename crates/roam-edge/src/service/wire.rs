//! The realm's service convention on the wire, as rmw_cyclonedds writes it: every request and
//! reply sample is
//!
//! ```text
//! [encapsulation, 4 bytes][client id, u64][sequence number, i64][the request or reply fields]
//! ```
//!
//! with both header numbers in the encapsulation's byte order. The header is 16 bytes, a
//! multiple of CDR's largest alignment (8), so the fields after it are laid out exactly as
//! they are in a message of their own: splitting and joining is cutting and pasting bytes,
//! with no knowledge of the type. Pure, no I/O; bounds checked; never panics.

use roam_msg::Endian;

/// The CDR encapsulation header's length.
pub const ENCAPSULATION_LEN: usize = roam_msg::cdr::HEADER_LEN;
/// The request header's length: client id and sequence number.
pub const REQUEST_HEADER_LEN: usize = 16;

/// Which call a request is, or a reply answers: the calling client, and its sequence number
/// for the call. Unique while the client lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId {
    /// The client's id: random per client handle (rmw_cyclonedds derives it from the GUID of
    /// the client's request writer).
    pub client: u64,
    /// The call's number within the client, from 1.
    pub seq: i64,
}

/// Why bytes are not a request or reply sample, or a body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("{len} bytes is too short: a {what} holds at least {need}")]
    TooShort {
        what: &'static str,
        len: usize,
        need: usize,
    },
    #[error(
        "encapsulation {0:02x}{1:02x} is not plain CDR (0000 big endian or 0001 little endian)"
    )]
    Encapsulation(u8, u8),
}

/// A request or reply sample, split: its id and the byte order it was written in. The body
/// (encapsulation and fields, without the request header) is [`body`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub id: RequestId,
    pub endian: Endian,
}

fn endian_of(bytes: &[u8], what: &'static str, need: usize) -> Result<Endian, WireError> {
    if bytes.len() < need {
        return Err(WireError::TooShort {
            what,
            len: bytes.len(),
            need,
        });
    }
    Endian::of(bytes).ok_or(WireError::Encapsulation(bytes[0], bytes[1]))
}

/// Reads a sample's request header.
pub fn split(sample: &[u8]) -> Result<Header, WireError> {
    let endian = endian_of(
        sample,
        "service sample",
        ENCAPSULATION_LEN + REQUEST_HEADER_LEN,
    )?;
    let word = |at: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&sample[at..at + 8]);
        match endian {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        }
    };
    Ok(Header {
        id: RequestId {
            client: word(ENCAPSULATION_LEN),
            seq: word(ENCAPSULATION_LEN + 8) as i64,
        },
        endian,
    })
}

/// Writes the body of a sample (its encapsulation header and fields: a CDR message of the
/// request or reply type) into `out`, replacing its contents; returns the sample's header.
pub fn body(sample: &[u8], out: &mut Vec<u8>) -> Result<Header, WireError> {
    let header = split(sample)?;
    out.clear();
    out.extend_from_slice(&sample[..ENCAPSULATION_LEN]);
    out.extend_from_slice(&sample[ENCAPSULATION_LEN + REQUEST_HEADER_LEN..]);
    Ok(header)
}

/// Writes the sample for `id` with `body` (a CDR message of the request or reply type,
/// encapsulation header included) into `out`, replacing its contents. The header numbers
/// take the body's byte order; the encapsulation's option bytes are kept.
pub fn join(id: RequestId, body: &[u8], out: &mut Vec<u8>) -> Result<(), WireError> {
    let endian = endian_of(body, "CDR message", ENCAPSULATION_LEN)?;
    out.clear();
    out.reserve(body.len() + REQUEST_HEADER_LEN);
    out.extend_from_slice(&body[..ENCAPSULATION_LEN]);
    for word in [id.client, id.seq as u64] {
        match endian {
            Endian::Little => out.extend_from_slice(&word.to_le_bytes()),
            Endian::Big => out.extend_from_slice(&word.to_be_bytes()),
        }
    }
    out.extend_from_slice(&body[ENCAPSULATION_LEN..]);
    Ok(())
}

/// The longest reason a failed reply carries (longer ones are cut at a character).
pub const MAX_FAILURE_REASON: usize = 4096;

/// Writes into `out` the reply that fails call `id` (whose sequence number is positive) with
/// `reason`: the header carries the sequence number negated, then the reason as one CDR
/// string, little endian. No rmw numbers a call below 1, so no DDS client takes it for an
/// answer (and proxies drop it before DDS: ROS 2 has no failed reply); an edge client
/// fails the call with the reason at once instead of letting it time out.
pub fn join_failure(id: RequestId, reason: &str, out: &mut Vec<u8>) {
    let mut cut = reason.len().min(MAX_FAILURE_REASON);
    while !reason.is_char_boundary(cut) {
        cut -= 1;
    }
    let reason = &reason[..cut];
    out.clear();
    out.extend_from_slice(&[0, 1, 0, 0]);
    out.extend_from_slice(&id.client.to_le_bytes());
    out.extend_from_slice(&id.seq.saturating_abs().saturating_neg().to_le_bytes());
    out.extend_from_slice(&(reason.len() as u32 + 1).to_le_bytes());
    out.extend_from_slice(reason.as_bytes());
    out.push(0);
}

/// Whether `sample` is a failed reply (see [`join_failure`]).
pub fn is_failure(sample: &[u8]) -> bool {
    split(sample).is_ok_and(|h| h.id.seq < 0)
}

/// The call a failed reply fails (its sequence number positive again) and the reason; `None`
/// when `sample` is not a failed reply. A reason that is cut short or not UTF-8 is given as
/// far as it reads.
pub fn failure(sample: &[u8]) -> Option<(RequestId, String)> {
    let h = split(sample).ok()?;
    if h.id.seq >= 0 {
        return None;
    }
    let id = RequestId {
        client: h.id.client,
        seq: h.id.seq.checked_neg()?,
    };
    let rest = &sample[ENCAPSULATION_LEN + REQUEST_HEADER_LEN..];
    let text = rest
        .get(..4)
        .and_then(|n| {
            let n = <[u8; 4]>::try_from(n).ok()?;
            let n = match h.endian {
                Endian::Little => u32::from_le_bytes(n),
                Endian::Big => u32::from_be_bytes(n),
            } as usize;
            let bytes = rest.get(4..)?;
            Some(&bytes[..n.min(bytes.len())])
        })
        .unwrap_or_default();
    let text = text.strip_suffix(&[0]).unwrap_or(text);
    Some((id, String::from_utf8_lossy(text).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_failed_reply_names_its_call_and_carries_the_reason() {
        let id = RequestId { client: 77, seq: 5 };
        let mut s = Vec::new();
        join_failure(id, "battery too low", &mut s);
        assert!(is_failure(&s));
        assert_eq!(split(&s).unwrap().id.seq, -5);
        assert_eq!(failure(&s), Some((id, "battery too low".to_string())));
        // Replies and requests are not failures.
        assert!(!is_failure(&REQUEST_LE));
        assert_eq!(failure(&REQUEST_LE), None);
        // A long reason is cut at a character, a truncated sample read as far as it goes.
        join_failure(id, &"é".repeat(3000), &mut s);
        let (_, r) = failure(&s).unwrap();
        assert_eq!(r, "é".repeat(MAX_FAILURE_REASON / 2));
        s.truncate(30);
        assert_eq!(failure(&s).unwrap().1, "é".repeat(3));
        assert_eq!(failure(&s[..22]).unwrap().1, "");
    }

    /// An AddTwoInts request as rmw_cyclonedds writes it (client 1000, call 3, a = 1000,
    /// b = 3), the bytes PyPI cyclonedds puts on the wire for `service.py`'s request type.
    const REQUEST_LE: [u8; 36] = [
        0, 1, 0, 0, //
        0xe8, 3, 0, 0, 0, 0, 0, 0, //
        3, 0, 0, 0, 0, 0, 0, 0, //
        0xe8, 3, 0, 0, 0, 0, 0, 0, //
        3, 0, 0, 0, 0, 0, 0, 0,
    ];

    #[test]
    fn an_rmw_cyclonedds_request_splits_into_its_id_and_a_message_of_its_own() {
        let mut b = Vec::new();
        let h = body(&REQUEST_LE, &mut b).unwrap();
        assert_eq!(
            h.id,
            RequestId {
                client: 1000,
                seq: 3
            }
        );
        assert_eq!(h.endian, Endian::Little);
        assert_eq!(b[..4], [0, 1, 0, 0]);
        assert_eq!(b[4..], REQUEST_LE[20..]);
        let mut again = Vec::new();
        join(h.id, &b, &mut again).unwrap();
        assert_eq!(again, REQUEST_LE);
    }

    #[test]
    fn big_endian_headers_are_read_and_written_big_endian() {
        let id = RequestId {
            client: 0x0102_0304_0506_0708,
            seq: -2,
        };
        let mut s = Vec::new();
        join(id, &[0, 0, 0, 0, 9], &mut s).unwrap();
        assert_eq!(s[4..12], [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(s[12..20], (-2i64).to_be_bytes());
        assert_eq!(split(&s).unwrap().id, id);
        assert_eq!(split(&s).unwrap().endian, Endian::Big);
    }

    #[test]
    fn short_or_foreign_bytes_are_refused_with_what_was_wrong() {
        assert_eq!(
            split(&REQUEST_LE[..19]),
            Err(WireError::TooShort {
                what: "service sample",
                len: 19,
                need: 20
            })
        );
        let mut xcdr2 = REQUEST_LE;
        xcdr2[1] = 7;
        assert_eq!(split(&xcdr2), Err(WireError::Encapsulation(0, 7)));
        let mut out = vec![1, 2, 3];
        assert!(join(RequestId { client: 1, seq: 1 }, &[0, 1], &mut out).is_err());
        assert!(body(&[], &mut out)
            .unwrap_err()
            .to_string()
            .contains("at least 20"));
    }

    proptest! {
        #[test]
        fn join_then_split_gives_back_id_and_body(
            client: u64,
            seq: i64,
            big: bool,
            options: [u8; 2],
            fields in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let mut b = vec![0, u8::from(!big), options[0], options[1]];
            b.extend_from_slice(&fields);
            let id = RequestId { client, seq };
            let mut sample = Vec::new();
            join(id, &b, &mut sample).unwrap();
            prop_assert_eq!(sample.len(), b.len() + REQUEST_HEADER_LEN);
            let mut back = Vec::new();
            let h = body(&sample, &mut back).unwrap();
            prop_assert_eq!(h.id, id);
            prop_assert_eq!(h.endian, if big { Endian::Big } else { Endian::Little });
            prop_assert_eq!(back, b);
        }

        #[test]
        fn any_bytes_split_or_are_refused_and_what_splits_joins_back(
            bytes in proptest::collection::vec(any::<u8>(), 0..48),
        ) {
            let mut b = Vec::new();
            if let Ok(h) = body(&bytes, &mut b) {
                let mut again = Vec::new();
                join(h.id, &b, &mut again).unwrap();
                prop_assert_eq!(again, bytes);
            }
        }
    }
}
