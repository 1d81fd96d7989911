//! The seeds' ROS 2 message types as raw CDR (XCDR1, little endian), each carrying a sequence
//! number and a send timestamp where a ROS 2 node would put them, so any receiver can measure
//! latency, loss and order without type support.
//!
//! Messages with a `std_msgs/Header` carry the timestamp in `header.stamp` and the sequence
//! number as the decimal `header.frame_id`; a `std_msgs/String` starts its text with
//! `"<seq> <unix ns> "`. The rest is filler up to the requested size.

use std::fmt;

/// A message type of the lab and its DDS type name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// std_msgs/String; size = length of the text.
    String,
    /// sensor_msgs/CompressedImage; size = bytes of `data` (seed 000: 0..8000 B).
    CompressedImage,
    /// sensor_msgs/LaserScan; size = number of ranges (seed 002: 10^0..10^6).
    LaserScan,
    /// sensor_msgs/Image, mono8, 640 wide; size = bytes of `data` (seed 004: 640x480 = 307,200;
    /// seed 000's failure case: 13 MB).
    Image,
    /// sensor_msgs/PointCloud2 of x, y, z, intensity points; size = bytes of `data` (seed 003:
    /// about 1.08 MB).
    PointCloud2,
}

impl Kind {
    /// Every kind, for `--help` and parsing.
    pub const ALL: [Kind; 5] = [
        Kind::String,
        Kind::CompressedImage,
        Kind::LaserScan,
        Kind::Image,
        Kind::PointCloud2,
    ];

    /// The name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::String => "string",
            Kind::CompressedImage => "compressed_image",
            Kind::LaserScan => "laserscan",
            Kind::Image => "image",
            Kind::PointCloud2 => "pointcloud2",
        }
    }

    /// Parses a command-line name.
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The DDS type name rmw_cyclonedds uses.
    pub fn dds_type(self) -> &'static str {
        match self {
            Kind::String => "std_msgs::msg::dds_::String_",
            Kind::CompressedImage => "sensor_msgs::msg::dds_::CompressedImage_",
            Kind::LaserScan => "sensor_msgs::msg::dds_::LaserScan_",
            Kind::Image => "sensor_msgs::msg::dds_::Image_",
            Kind::PointCloud2 => "sensor_msgs::msg::dds_::PointCloud2_",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a receiver reads back from a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// The sender's sequence number.
    pub seq: u64,
    /// The sender's clock (Unix time, ns) when it encoded the message.
    pub sent_ns: u64,
}

/// Little-endian CDR writer; alignment counts from the end of the encapsulation header.
struct Cdr(Vec<u8>);

impl Cdr {
    fn new(capacity: usize) -> Cdr {
        let mut v = Vec::with_capacity(capacity + 64);
        v.extend_from_slice(&[0x00, 0x01, 0x00, 0x00]);
        Cdr(v)
    }
    fn align(&mut self, n: usize) {
        let pad = (n - (self.0.len() - 4) % n) % n;
        self.0.resize(self.0.len() + pad, 0);
    }
    fn u8(&mut self, v: u8) {
        self.0.push(v);
    }
    fn u32(&mut self, v: u32) {
        self.align(4);
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn f32(&mut self, v: f32) {
        self.align(4);
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn string(&mut self, s: &str) {
        self.u32(s.len() as u32 + 1);
        self.0.extend_from_slice(s.as_bytes());
        self.0.push(0);
    }
    fn bytes(&mut self, n: usize, fill: u8) {
        self.u32(n as u32);
        self.0.resize(self.0.len() + n, fill);
    }
    fn header(&mut self, st: Stamp) {
        self.u32((st.sent_ns / 1_000_000_000) as u32); // int32 sec (fits until 2106 as u32)
        self.u32((st.sent_ns % 1_000_000_000) as u32);
        self.string(&st.seq.to_string());
    }
}

/// Serializes a message of `kind` and `size` (see [`Kind`]) carrying `stamp`.
pub fn encode(kind: Kind, size: usize, stamp: Stamp) -> Vec<u8> {
    let size32 = size.min(u32::MAX as usize / 16);
    match kind {
        Kind::String => {
            let mut text = format!("{} {} ", stamp.seq, stamp.sent_ns);
            if text.len() < size32 {
                text.push_str(&"x".repeat(size32 - text.len()));
            }
            let mut c = Cdr::new(text.len() + 8);
            c.string(&text);
            c.0
        }
        Kind::CompressedImage => {
            let mut c = Cdr::new(size32 + 48);
            c.header(stamp);
            c.string("jpeg");
            c.bytes(size32, 0xd8);
            c.0
        }
        Kind::LaserScan => {
            let mut c = Cdr::new(size32 * 4 + 64);
            c.header(stamp);
            let step = std::f32::consts::TAU / size32.max(1) as f32;
            for v in [
                -std::f32::consts::PI,
                std::f32::consts::PI,
                step,
                0.0,
                0.1,
                0.05,
                30.0,
            ] {
                c.f32(v);
            }
            c.u32(size32 as u32);
            for i in 0..size32 {
                c.0.extend_from_slice(&(1.0 + (i % 100) as f32 * 0.01).to_le_bytes());
            }
            c.u32(0); // no intensities
            c.0
        }
        Kind::Image => {
            let width = 640usize;
            let mut c = Cdr::new(size32 + 64);
            c.header(stamp);
            c.u32(size32.div_ceil(width) as u32); // height
            c.u32(width as u32);
            c.string("mono8");
            c.u8(0); // is_bigendian
            c.u32(width as u32); // step
            c.bytes(size32, 0x80);
            c.0
        }
        Kind::PointCloud2 => {
            const POINT: usize = 16;
            let mut c = Cdr::new(size32 + 160);
            c.header(stamp);
            c.u32(1); // height
            c.u32((size32 / POINT) as u32); // width
            c.u32(4);
            for (i, name) in ["x", "y", "z", "intensity"].into_iter().enumerate() {
                c.string(name);
                c.u32(i as u32 * 4); // offset
                c.u8(7); // FLOAT32
                c.u32(1); // count
            }
            c.u8(0); // is_bigendian
            c.u32(POINT as u32);
            c.u32((size32 / POINT * POINT) as u32); // row_step
            c.bytes(size32, 0x3f);
            c.u8(1); // is_dense
            c.0
        }
    }
}

/// Reads the stamp back from a serialized message of `kind`; `None` when the bytes are not
/// such a message (short, or foreign).
pub fn stamp(kind: Kind, cdr: &[u8]) -> Option<Stamp> {
    let body = cdr.get(4..)?;
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(body.get(at..at + 4)?.try_into().ok()?))
    };
    match kind {
        Kind::String => {
            let len = u32_at(0)? as usize;
            let text = body.get(4..4 + len.min(48).min(body.len().saturating_sub(4)))?;
            let mut parts = text.split(|b| *b == b' ');
            let seq = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
            let sent_ns = std::str::from_utf8(parts.next()?).ok()?.parse().ok()?;
            Some(Stamp { seq, sent_ns })
        }
        _ => {
            let sec = u32_at(0)? as u64;
            let nsec = u32_at(4)? as u64;
            let len = u32_at(8)? as usize;
            let id = body.get(12..12 + len.saturating_sub(1))?;
            let seq = std::str::from_utf8(id).ok()?.parse().ok()?;
            Some(Stamp {
                seq,
                sent_ns: sec * 1_000_000_000 + nsec,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_round_trips_its_stamp_and_has_the_size_asked() {
        let st = Stamp {
            seq: 123_456,
            sent_ns: 1_790_000_000_123_456_789,
        };
        for kind in Kind::ALL {
            for size in [0, 1, 8, 1000, 8000, 100_000] {
                let b = encode(kind, size, st);
                assert_eq!(stamp(kind, &b), Some(st), "{kind} {size}");
                let payload = if kind == Kind::LaserScan {
                    size * 4
                } else {
                    size
                };
                assert!(b.len() >= payload, "{kind} {size}: {}", b.len());
                assert!(
                    b.len() <= payload.max(40) + 200,
                    "{kind} {size}: {}",
                    b.len()
                );
            }
        }
    }

    #[test]
    fn string_layout_is_std_msgs_string() {
        let b = encode(Kind::String, 16, Stamp { seq: 7, sent_ns: 9 });
        assert_eq!(&b[..4], &[0, 1, 0, 0]);
        assert_eq!(u32::from_le_bytes(b[4..8].try_into().unwrap()), 17);
        assert_eq!(&b[8..12], b"7 9 ");
        assert_eq!(*b.last().unwrap(), 0);
    }

    #[test]
    fn laserscan_header_then_seven_floats_then_ranges() {
        let b = encode(
            Kind::LaserScan,
            3,
            Stamp {
                seq: 1,
                sent_ns: 2_000_000_005,
            },
        );
        // sec, nsec, frame_id "1\0" (len 2) padded to 4, 7 floats, len 3, 3 floats, len 0
        assert_eq!(b.len(), 4 + 4 + 4 + 4 + 4 + 28 + 4 + 12 + 4);
        assert_eq!(u32::from_le_bytes(b[4..8].try_into().unwrap()), 2);
        assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 5);
        assert_eq!(u32::from_le_bytes(b[48..52].try_into().unwrap()), 3);
    }

    #[test]
    fn garbage_has_no_stamp() {
        for kind in Kind::ALL {
            assert_eq!(stamp(kind, &[]), None);
            assert_eq!(stamp(kind, &[0, 1, 0, 0, 255, 255, 255, 255]), None);
        }
    }
}
