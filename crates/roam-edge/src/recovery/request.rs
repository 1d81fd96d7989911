//! A subscriber's request for messages it missed: the plaintext of an envelope on the data
//! name's repair name ([`super::repair_name`]), sealed like any other, so routers see only a
//! name and ciphertext.
//!
//! ```text
//! version u8 (1) | session u64 | requester u64 | count u8 | count × (first u64 | last u64)
//! ```
//!
//! `session`: the publisher session the sequences belong to; `requester`: a random id of the
//! asking subscriber, so a publisher can say how many subscribers a loss reached; ranges are
//! inclusive, non-empty, in increasing order and apart.

use roam_proto::codec::{CodecError, Reader};

pub const VERSION: u8 = 1;
/// Most ranges in one request (a subscriber asks again for the rest).
pub const MAX_RANGES: usize = 32;
/// Most sequences one request may name in all: what a publisher resends per request is
/// bounded by this, whatever the request says.
pub const MAX_SPAN: u64 = 1 << 16;

/// Messages one subscriber asks one publisher session for again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub session: u64,
    pub requester: u64,
    /// Inclusive `(first, last)` sequence ranges.
    pub ranges: Vec<(u64, u64)>,
}

/// Why a request's bytes were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("malformed repair request: {0}")]
    Codec(#[from] CodecError),
    #[error("repair request version {0} (this build reads {VERSION})")]
    Version(u8),
    #[error("repair request with {0} ranges (at most {MAX_RANGES})")]
    TooManyRanges(usize),
    #[error("repair request range {0}..={1} is empty, overlaps or is out of order")]
    BadRange(u64, u64),
    #[error("repair request names {0} sequences (at most {MAX_SPAN})")]
    TooLong(u64),
}

impl Request {
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.clear();
        out.push(VERSION);
        out.extend_from_slice(&self.session.to_be_bytes());
        out.extend_from_slice(&self.requester.to_be_bytes());
        let n = self.ranges.len().min(MAX_RANGES);
        out.push(n as u8);
        for (first, last) in &self.ranges[..n] {
            out.extend_from_slice(&first.to_be_bytes());
            out.extend_from_slice(&last.to_be_bytes());
        }
    }

    pub fn parse(bytes: &[u8]) -> Result<Self, RequestError> {
        let mut r = Reader::new(bytes);
        let version = r.u8()?;
        if version != VERSION {
            return Err(RequestError::Version(version));
        }
        let session = u64::from_be_bytes(r.array()?);
        let requester = u64::from_be_bytes(r.array()?);
        let n = r.u8()? as usize;
        if n > MAX_RANGES {
            return Err(RequestError::TooManyRanges(n));
        }
        let mut ranges = Vec::with_capacity(n);
        let mut span = 0u64;
        let mut after = 0u64;
        for _ in 0..n {
            let first = u64::from_be_bytes(r.array()?);
            let last = u64::from_be_bytes(r.array()?);
            // Sequences start at 1; each range starts after the previous one's end.
            if first == 0 || last < first || first <= after {
                return Err(RequestError::BadRange(first, last));
            }
            after = last;
            span = span.saturating_add(last - first + 1);
            if span > MAX_SPAN {
                return Err(RequestError::TooLong(span));
            }
            ranges.push((first, last));
        }
        if r.remaining() > 0 {
            return Err(CodecError::TrailingBytes(r.remaining()).into());
        }
        Ok(Self {
            session,
            requester,
            ranges,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(r: &Request) -> Vec<u8> {
        let mut out = Vec::new();
        r.encode(&mut out);
        out
    }

    #[test]
    fn a_request_round_trips() {
        let r = Request {
            session: 7,
            requester: 9,
            ranges: vec![(1, 1), (5, 10), (12, 400)],
        };
        assert_eq!(Request::parse(&bytes(&r)), Ok(r));
    }

    #[test]
    fn malformed_requests_are_refused_not_trusted() {
        let ok = Request {
            session: 1,
            requester: 2,
            ranges: vec![(3, 4)],
        };
        let b = bytes(&ok);
        for cut in 0..b.len() {
            assert!(Request::parse(&b[..cut]).is_err(), "cut at {cut}");
        }
        let mut trailing = b.clone();
        trailing.push(0);
        assert!(matches!(
            Request::parse(&trailing),
            Err(RequestError::Codec(CodecError::TrailingBytes(1)))
        ));
        let mut v2 = b.clone();
        v2[0] = 2;
        assert_eq!(Request::parse(&v2), Err(RequestError::Version(2)));
        for ranges in [
            vec![(0, 1)],
            vec![(5, 4)],
            vec![(5, 9), (9, 10)],
            vec![(9, 10), (1, 2)],
        ] {
            let r = Request {
                ranges,
                ..ok.clone()
            };
            assert!(matches!(
                Request::parse(&bytes(&r)),
                Err(RequestError::BadRange(..))
            ));
        }
        let long = Request {
            ranges: vec![(1, MAX_SPAN), (MAX_SPAN + 1, MAX_SPAN + 1)],
            ..ok.clone()
        };
        assert_eq!(
            Request::parse(&bytes(&long)),
            Err(RequestError::TooLong(MAX_SPAN + 1))
        );
        let mut many = b[..17].to_vec();
        many.push(MAX_RANGES as u8 + 1);
        assert_eq!(
            Request::parse(&many),
            Err(RequestError::TooManyRanges(MAX_RANGES + 1))
        );
    }
}
