//! Frames exchanged on a link (router-router or client-router).
//!
//! ```text
//! frame = length u32 BE (type byte + body) | type u8 | body
//! ```
//!
//! | type | frame       | body                                                                  |
//! |------|-------------|-----------------------------------------------------------------------|
//! | 0x01 | Hello       | version u8, role u8, id u64, name str16                               |
//! | 0x02 | Lsa         | origin u64, seq u64, lifetime_s u32, count u16, neighbour u64 * count |
//! | 0x03 | Advertise   | count u32, (name 32, origin u64, seq u64, lifetime_s u32, withdrawn u8) * count |
//! | 0x04 | Subscribe   | count u32, name 32 * count                                            |
//! | 0x05 | Unsubscribe | count u32, name 32 * count                                            |
//! | 0x06 | Publish     | count u32, name 32 * count (client -> its router)                     |
//! | 0x07 | Unpublish   | count u32, name 32 * count                                            |
//! | 0x08 | Query       | id u64, ttl u8, name 32                                               |
//! | 0x09 | Data        | origin u64, envelope (rest of the frame)                              |
//! | 0x0a | Revocations | the CA's revocation list as DER (rest of the frame, at most 512 KiB)   |
//!
//! Decoding never panics and never allocates more than the frame's own length allows.

use bytes::{BufMut, Bytes, BytesMut};

use crate::codec::{put_str16, CodecError, Reader};
use crate::name::Name;

/// A router's 64-bit identifier (derived from its certificate name, see `docs/protocol.md`).
pub type RouterId = u64;

/// The link protocol version spoken in `Hello`.
pub const LINK_VERSION: u8 = 1;
/// Length prefix size.
pub const LEN_PREFIX: usize = 4;
/// Type byte plus origin: the bytes between the length prefix and the envelope of `Data`.
pub const DATA_HEADER_LEN: usize = LEN_PREFIX + 1 + 8;
/// A router never sends more neighbours than this in one `Lsa`.
pub const MAX_NEIGHBOURS: usize = 4096;
const MAX_NAME_STR: usize = 255;
/// Longest revocation list a `Revocations` frame carries (the list's own limit).
pub const MAX_REVOCATIONS: usize = 512 * 1024;

/// What the peer at the other end of a link is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    Router = 1,
    Client = 2,
}

/// A name advertisement: `origin` (a router) can deliver data for `name`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Advert {
    pub name: Name,
    pub origin: RouterId,
    /// Per (name, origin), newer wins.
    pub seq: u64,
    /// Seconds until the receiver forgets it unless refreshed.
    pub lifetime_s: u32,
    pub withdrawn: bool,
}

/// A link-state advertisement: a router and its current router neighbours.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lsa {
    pub origin: RouterId,
    pub seq: u64,
    pub lifetime_s: u32,
    pub neighbours: Vec<RouterId>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Hello {
        version: u8,
        role: Role,
        id: RouterId,
        name: String,
    },
    Lsa(Lsa),
    Advertise(Vec<Advert>),
    Subscribe(Vec<Name>),
    Unsubscribe(Vec<Name>),
    Publish(Vec<Name>),
    Unpublish(Vec<Name>),
    Query {
        id: u64,
        ttl: u8,
        name: Name,
    },
    Data {
        origin: RouterId,
        envelope: Bytes,
    },
    /// The newest revocation list the sender holds, signed by the CA: what a receiver takes
    /// if it verifies and is newer than its own (routers pass it on; see `docs/protocol.md`).
    Revocations(Bytes),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("malformed frame: {0}")]
    Codec(#[from] CodecError),
    #[error("unknown frame type {0:#04x}")]
    UnknownType(u8),
    #[error("unknown role {0}")]
    UnknownRole(u8),
    #[error("frame of {len} bytes exceeds the limit of {limit}")]
    TooLarge { len: usize, limit: usize },
    #[error("empty frame")]
    Empty,
}

mod ty {
    pub const HELLO: u8 = 1;
    pub const LSA: u8 = 2;
    pub const ADVERTISE: u8 = 3;
    pub const SUBSCRIBE: u8 = 4;
    pub const UNSUBSCRIBE: u8 = 5;
    pub const PUBLISH: u8 = 6;
    pub const UNPUBLISH: u8 = 7;
    pub const QUERY: u8 = 8;
    pub const DATA: u8 = 9;
    pub const REVOCATIONS: u8 = 10;
}

const ADVERT_LEN: usize = 32 + 8 + 8 + 4 + 1;

impl Frame {
    /// Whether this frame carries user data (routed by name) rather than control state.
    pub fn is_data(&self) -> bool {
        matches!(self, Frame::Data { .. })
    }

    /// Encodes with the length prefix. `Data` copies its envelope; the hot path uses
    /// [`data_header`] and sends the envelope bytes beside it instead.
    pub fn encode(&self) -> BytesMut {
        let mut body = Vec::new();
        let t = match self {
            Frame::Hello {
                version,
                role,
                id,
                name,
            } => {
                body.push(*version);
                body.push(*role as u8);
                body.extend_from_slice(&id.to_be_bytes());
                put_str16(&mut body, &name[..name.len().min(MAX_NAME_STR)]);
                ty::HELLO
            }
            Frame::Lsa(l) => {
                body.extend_from_slice(&l.origin.to_be_bytes());
                body.extend_from_slice(&l.seq.to_be_bytes());
                body.extend_from_slice(&l.lifetime_s.to_be_bytes());
                let n = l.neighbours.len().min(MAX_NEIGHBOURS);
                body.extend_from_slice(&(n as u16).to_be_bytes());
                for id in &l.neighbours[..n] {
                    body.extend_from_slice(&id.to_be_bytes());
                }
                ty::LSA
            }
            Frame::Advertise(ads) => {
                body.extend_from_slice(&(ads.len() as u32).to_be_bytes());
                for a in ads {
                    body.extend_from_slice(a.name.as_bytes());
                    body.extend_from_slice(&a.origin.to_be_bytes());
                    body.extend_from_slice(&a.seq.to_be_bytes());
                    body.extend_from_slice(&a.lifetime_s.to_be_bytes());
                    body.push(a.withdrawn as u8);
                }
                ty::ADVERTISE
            }
            Frame::Subscribe(n) => put_names(&mut body, n, ty::SUBSCRIBE),
            Frame::Unsubscribe(n) => put_names(&mut body, n, ty::UNSUBSCRIBE),
            Frame::Publish(n) => put_names(&mut body, n, ty::PUBLISH),
            Frame::Unpublish(n) => put_names(&mut body, n, ty::UNPUBLISH),
            Frame::Query { id, ttl, name } => {
                body.extend_from_slice(&id.to_be_bytes());
                body.push(*ttl);
                body.extend_from_slice(name.as_bytes());
                ty::QUERY
            }
            Frame::Revocations(list) => {
                body.extend_from_slice(&list[..list.len().min(MAX_REVOCATIONS)]);
                ty::REVOCATIONS
            }
            Frame::Data { origin, envelope } => {
                let mut out = BytesMut::with_capacity(DATA_HEADER_LEN + envelope.len());
                out.put_slice(&data_header(*origin, envelope.len()));
                out.put_slice(envelope);
                return out;
            }
        };
        let mut out = BytesMut::with_capacity(LEN_PREFIX + 1 + body.len());
        out.put_u32((body.len() + 1) as u32);
        out.put_u8(t);
        out.put_slice(&body);
        out
    }

    /// Decodes one frame body (type byte and body, without the length prefix).
    /// `Data` envelopes share `buf`'s memory; nothing is copied.
    pub fn decode(buf: Bytes) -> Result<Frame, FrameError> {
        let (&t, _) = buf.split_first().ok_or(FrameError::Empty)?;
        let mut r = Reader::new(&buf[1..]);
        let frame = match t {
            ty::HELLO => {
                let version = r.u8()?;
                let role = match r.u8()? {
                    1 => Role::Router,
                    2 => Role::Client,
                    other => return Err(FrameError::UnknownRole(other)),
                };
                let id = r.u64()?;
                let name = r.str16(MAX_NAME_STR)?.to_owned();
                Frame::Hello {
                    version,
                    role,
                    id,
                    name,
                }
            }
            ty::LSA => {
                let origin = r.u64()?;
                let seq = r.u64()?;
                let lifetime_s = r.u32()?;
                let n = r.u16()? as usize;
                if n > MAX_NEIGHBOURS {
                    return Err(CodecError::TooLong {
                        len: n,
                        limit: MAX_NEIGHBOURS,
                    }
                    .into());
                }
                check_count(&r, n, 8)?;
                let mut neighbours = Vec::with_capacity(n);
                for _ in 0..n {
                    neighbours.push(r.u64()?);
                }
                Frame::Lsa(Lsa {
                    origin,
                    seq,
                    lifetime_s,
                    neighbours,
                })
            }
            ty::ADVERTISE => {
                let n = r.u32()? as usize;
                check_count(&r, n, ADVERT_LEN)?;
                let mut ads = Vec::with_capacity(n);
                for _ in 0..n {
                    ads.push(Advert {
                        name: Name(r.array()?),
                        origin: r.u64()?,
                        seq: r.u64()?,
                        lifetime_s: r.u32()?,
                        withdrawn: r.u8()? != 0,
                    });
                }
                Frame::Advertise(ads)
            }
            ty::SUBSCRIBE => Frame::Subscribe(get_names(&mut r)?),
            ty::UNSUBSCRIBE => Frame::Unsubscribe(get_names(&mut r)?),
            ty::PUBLISH => Frame::Publish(get_names(&mut r)?),
            ty::UNPUBLISH => Frame::Unpublish(get_names(&mut r)?),
            ty::QUERY => Frame::Query {
                id: r.u64()?,
                ttl: r.u8()?,
                name: Name(r.array()?),
            },
            ty::DATA => {
                let origin = r.u64()?;
                return Ok(Frame::Data {
                    origin,
                    envelope: buf.slice(9..),
                });
            }
            ty::REVOCATIONS => {
                let list = buf.slice(1..);
                if list.len() > MAX_REVOCATIONS {
                    return Err(CodecError::TooLong {
                        len: list.len(),
                        limit: MAX_REVOCATIONS,
                    }
                    .into());
                }
                return Ok(Frame::Revocations(list));
            }
            other => return Err(FrameError::UnknownType(other)),
        };
        r.finish()?;
        Ok(frame)
    }
}

/// The bytes that precede an envelope in a `Data` frame: length, type and origin.
pub fn data_header(origin: RouterId, envelope_len: usize) -> [u8; DATA_HEADER_LEN] {
    let mut h = [0u8; DATA_HEADER_LEN];
    h[..4].copy_from_slice(&((envelope_len + 9) as u32).to_be_bytes());
    h[4] = ty::DATA;
    h[5..].copy_from_slice(&origin.to_be_bytes());
    h
}

/// Reads a length prefix and checks it against `limit` before anything is allocated.
pub fn frame_len(prefix: [u8; LEN_PREFIX], limit: usize) -> Result<usize, FrameError> {
    let len = u32::from_be_bytes(prefix) as usize;
    if len == 0 {
        return Err(FrameError::Empty);
    }
    if len > limit {
        return Err(FrameError::TooLarge { len, limit });
    }
    Ok(len)
}

/// Splits whole frames off the front of a byte buffer (for datagrams, tests and fuzzing).
pub fn decode_all(mut buf: Bytes, limit: usize) -> Result<Vec<Frame>, FrameError> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        let prefix: [u8; 4] = Reader::new(&buf).array()?;
        let len = frame_len(prefix, limit)?;
        if buf.len() < LEN_PREFIX + len {
            return Err(CodecError::UnexpectedEnd {
                needed: LEN_PREFIX + len - buf.len(),
            }
            .into());
        }
        let body = buf.slice(LEN_PREFIX..LEN_PREFIX + len);
        buf = buf.slice(LEN_PREFIX + len..);
        out.push(Frame::decode(body)?);
    }
    Ok(out)
}

fn check_count(r: &Reader<'_>, n: usize, each: usize) -> Result<(), CodecError> {
    // Refuse counts the remaining bytes cannot hold before allocating for them.
    let need = n.saturating_mul(each);
    if need > r.remaining() {
        return Err(CodecError::UnexpectedEnd {
            needed: need - r.remaining(),
        });
    }
    Ok(())
}

fn put_names(body: &mut Vec<u8>, names: &[Name], t: u8) -> u8 {
    body.extend_from_slice(&(names.len() as u32).to_be_bytes());
    for n in names {
        body.extend_from_slice(n.as_bytes());
    }
    t
}

fn get_names(r: &mut Reader<'_>) -> Result<Vec<Name>, CodecError> {
    let n = r.u32()? as usize;
    check_count(r, n, 32)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(Name(r.array()?));
    }
    Ok(v)
}
