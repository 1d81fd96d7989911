//! What the bench publishes and how a receiver finds, in what arrives, which message it is and
//! when it was sent. Pure: frames in, samples out.
//!
//! - An image (`sensor_msgs/msg/Image`, 640x480 rgb8) carries its send time in `header.stamp`
//!   and its sequence number in `header.frame_id`, as a camera driver fills a header.
//! - A 1 KB text (`std_msgs/msg/String`) starts with `"SEQ SEC NANOSEC "` and is padded to
//!   1000 bytes.
//!
//! Both are published as rosbridge CBOR `publish` ops (binary frames), which the gateway reads
//! as it reads JSON ones; the image data goes as a CBOR byte string, not base64 text.

use minicbor::data::Type;
use minicbor::{Decoder, Encoder};
use serde_json::Value;

pub const IMAGE_WIDTH: u32 = 640;
pub const IMAGE_HEIGHT: u32 = 480;
/// rgb8: three bytes per pixel.
pub const IMAGE_BYTES: usize = (IMAGE_WIDTH * IMAGE_HEIGHT * 3) as usize;
pub const TEXT_BYTES: usize = 1000;

/// The interface definitions the gateway needs (written to a `msg_paths` folder).
pub const DEFINITIONS: &[(&str, &str)] = &[
    ("std_msgs/msg/String.msg", "string data\n"),
    (
        "std_msgs/msg/Header.msg",
        "builtin_interfaces/Time stamp\nstring frame_id\n",
    ),
    (
        "builtin_interfaces/msg/Time.msg",
        "int32 sec\nuint32 nanosec\n",
    ),
    (
        "sensor_msgs/msg/Image.msg",
        "std_msgs/Header header\nuint32 height\nuint32 width\nstring encoding\n\
         uint8 is_bigendian\nuint32 step\nuint8[] data\n",
    ),
];

/// Which message a scenario sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Image,
    Text,
}

/// One message as a receiver saw it: its sequence number and its send time (ns since the
/// Unix epoch, the publisher's wall clock: the same machine's).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sample {
    pub seq: u64,
    pub stamp_ns: i64,
}

fn stamp_ns(sec: i64, nanosec: i64) -> i64 {
    sec * 1_000_000_000 + nanosec
}

impl Kind {
    pub fn type_name(self) -> &'static str {
        match self {
            Kind::Image => "sensor_msgs/msg/Image",
            Kind::Text => "std_msgs/msg/String",
        }
    }

    /// A sample from the `msg` of a JSON publish op, read as a client would use it: the
    /// image's base64 data is decoded (and its size checked).
    pub fn read_json(self, msg: &Value) -> Result<Sample, String> {
        match self {
            Kind::Image => {
                let data = msg["data"].as_str().ok_or("no data text")?;
                let pixels = base64_simd::STANDARD
                    .decode_to_vec(data)
                    .map_err(|e| format!("data: {e}"))?;
                check_image(pixels.len())?;
                let stamp = &msg["header"]["stamp"];
                let field = |k: &str| stamp[k].as_i64().ok_or(format!("no stamp.{k}"));
                Ok(Sample {
                    seq: seq_of(msg["header"]["frame_id"].as_str().ok_or("no frame_id")?)?,
                    stamp_ns: stamp_ns(field("sec")?, field("nanosec")?),
                })
            }
            Kind::Text => text_sample(msg["data"].as_str().ok_or("no data text")?),
        }
    }

    /// A sample from the `msg` of a CBOR publish op (`d` at the message's map), decoded
    /// whole, the image's pixels copied out as a client keeping the image would.
    pub fn read_cbor(self, d: &mut Decoder) -> Result<Sample, String> {
        let (mut seq, mut stamp, mut pixels) = (None, None, None);
        for_map(d, |key, d| {
            match (self, key) {
                (_, "header") => for_map(d, |key, d| {
                    match key {
                        "stamp" => {
                            let (mut s, mut n) = (0, 0);
                            for_map(d, |key, d| {
                                match key {
                                    "sec" => s = d.i64().map_err(err)?,
                                    "nanosec" => n = d.i64().map_err(err)?,
                                    _ => d.skip().map_err(err)?,
                                }
                                Ok(())
                            })?;
                            stamp = Some(stamp_ns(s, n));
                        }
                        "frame_id" => seq = Some(seq_of(d.str().map_err(err)?)?),
                        _ => d.skip().map_err(err)?,
                    }
                    Ok(())
                })?,
                (Kind::Image, "data") => {
                    // A byte string, possibly under the uint8 typed-array tag (RFC 8746).
                    if d.datatype().map_err(err)? == Type::Tag {
                        d.tag().map_err(err)?;
                    }
                    pixels = Some(d.bytes().map_err(err)?.to_vec());
                }
                (Kind::Text, "data") => {
                    let s = text_sample(d.str().map_err(err)?)?;
                    (seq, stamp) = (Some(s.seq), Some(s.stamp_ns));
                }
                _ => d.skip().map_err(err)?,
            }
            Ok(())
        })?;
        if self == Kind::Image {
            check_image(pixels.ok_or("no data")?.len())?;
        }
        Ok(Sample {
            seq: seq.ok_or("no sequence number")?,
            stamp_ns: stamp.ok_or("no stamp")?,
        })
    }

    /// A sample from a message's CDR bytes (with their 4-byte encapsulation header), reading
    /// only the fields it needs: what a cbor-raw client that forwards or stores the bytes does.
    pub fn read_cdr(self, cdr: &[u8]) -> Result<Sample, String> {
        let r = Cdr::new(cdr)?;
        match self {
            Kind::Image => {
                let (sec, nanosec) = (r.u32(4)? as i32, r.u32(8)?);
                let frame_id = r.string(12)?;
                Ok(Sample {
                    seq: seq_of(frame_id)?,
                    stamp_ns: stamp_ns(sec as i64, nanosec as i64),
                })
            }
            Kind::Text => text_sample(r.string(4)?),
        }
    }
}

fn err(e: minicbor::decode::Error) -> String {
    e.to_string()
}

/// Calls `f` with each key of the map at `d` (definite or indefinite length), `d` at its value;
/// `f` must consume the value.
pub fn for_map<'b>(
    d: &mut Decoder<'b>,
    mut f: impl FnMut(&str, &mut Decoder<'b>) -> Result<(), String>,
) -> Result<(), String> {
    let len = d.map().map_err(err)?;
    let mut seen = 0;
    loop {
        match len {
            Some(n) if seen >= n => return Ok(()),
            None if d.datatype().map_err(err)? == Type::Break => {
                d.skip().map_err(err)?;
                return Ok(());
            }
            _ => {}
        }
        seen += 1;
        let key = d.str().map_err(err)?.to_string();
        f(&key, d)?;
    }
}

fn check_image(len: usize) -> Result<(), String> {
    if len == IMAGE_BYTES {
        Ok(())
    } else {
        Err(format!("{len} bytes of image data, not {IMAGE_BYTES}"))
    }
}

fn seq_of(s: &str) -> Result<u64, String> {
    s.parse()
        .map_err(|_| format!("{s:?} is no sequence number"))
}

fn text_sample(s: &str) -> Result<Sample, String> {
    let mut it = s.split(' ');
    let mut next = |what: &str| -> Result<i64, String> {
        it.next()
            .and_then(|v| v.parse().ok())
            .ok_or(format!("text without {what}"))
    };
    let seq = next("sequence number")? as u64;
    let (sec, nanosec) = (next("seconds")?, next("nanoseconds")?);
    Ok(Sample {
        seq,
        stamp_ns: stamp_ns(sec, nanosec),
    })
}

/// CDR bytes after their encapsulation header (offsets count from the header's end, as CDR
/// alignment does), in the byte order the header names.
struct Cdr<'a> {
    body: &'a [u8],
    little: bool,
}

impl<'a> Cdr<'a> {
    fn new(cdr: &'a [u8]) -> Result<Self, String> {
        if cdr.len() < 4 {
            return Err(format!("{} bytes: no CDR encapsulation header", cdr.len()));
        }
        // Representation ids: 0x0000 CDR_BE, 0x0001 CDR_LE, and so on: odd is little-endian.
        Ok(Cdr {
            body: &cdr[4..],
            little: cdr[1] & 1 == 1,
        })
    }

    /// The uint32 at `at` (counted from the start of the whole message, header included).
    fn u32(&self, at: usize) -> Result<u32, String> {
        let b: [u8; 4] = self
            .body
            .get(at - 4..at)
            .and_then(|b| b.try_into().ok())
            .ok_or("CDR too short")?;
        Ok(if self.little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        })
    }

    /// The CDR string whose length is at `at`: a uint32 counting the terminating NUL.
    fn string(&self, at: usize) -> Result<&'a str, String> {
        let n = self.u32(at)? as usize;
        let start = at; // body offset of the characters: (at + 4) - 4
        let bytes = self
            .body
            .get(start..start + n.saturating_sub(1))
            .ok_or("CDR string runs past the end")?;
        std::str::from_utf8(bytes).map_err(|e| format!("CDR string: {e}"))
    }
}

/// Builds the CBOR `publish` frames of one topic. The parts that never change (an image's
/// size, encoding and pixels) are encoded once; each frame adds its header.
pub struct Frames {
    kind: Kind,
    head: Vec<u8>,
    tail: Vec<u8>,
}

impl Frames {
    pub fn new(kind: Kind, topic: &str) -> Frames {
        let mut head = Vec::new();
        let mut e = Encoder::new(&mut head);
        // Writing into a Vec cannot fail.
        let _ = e
            .map(3)
            .and_then(|e| e.str("op"))
            .and_then(|e| e.str("publish"))
            .and_then(|e| e.str("topic"))
            .and_then(|e| e.str(topic))
            .and_then(|e| e.str("msg"));
        let mut tail = Vec::new();
        if kind == Kind::Image {
            let pixels: Vec<u8> = (0..IMAGE_BYTES).map(|i| (i % 251) as u8).collect();
            let _ = Encoder::new(&mut tail)
                .str("height")
                .and_then(|e| e.u32(IMAGE_HEIGHT))
                .and_then(|e| e.str("width"))
                .and_then(|e| e.u32(IMAGE_WIDTH))
                .and_then(|e| e.str("encoding"))
                .and_then(|e| e.str("rgb8"))
                .and_then(|e| e.str("is_bigendian"))
                .and_then(|e| e.u8(0))
                .and_then(|e| e.str("step"))
                .and_then(|e| e.u32(IMAGE_WIDTH * 3))
                .and_then(|e| e.str("data"))
                .and_then(|e| e.bytes(&pixels));
        }
        Frames { kind, head, tail }
    }

    /// Message `seq`, stamped `sec`/`nanosec`.
    pub fn frame(&self, seq: u64, sec: i32, nanosec: u32) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.head.len() + self.tail.len() + 64);
        out.extend_from_slice(&self.head);
        let mut e = Encoder::new(&mut out);
        match self.kind {
            Kind::Image => {
                let _ = e
                    .map(7)
                    .and_then(|e| e.str("header"))
                    .and_then(|e| e.map(2))
                    .and_then(|e| e.str("stamp"))
                    .and_then(|e| e.map(2))
                    .and_then(|e| e.str("sec"))
                    .and_then(|e| e.i32(sec))
                    .and_then(|e| e.str("nanosec"))
                    .and_then(|e| e.u32(nanosec))
                    .and_then(|e| e.str("frame_id"))
                    .and_then(|e| e.str(&seq.to_string()));
                out.extend_from_slice(&self.tail);
            }
            Kind::Text => {
                let mut text = format!("{seq} {sec} {nanosec} ");
                text.extend(std::iter::repeat_n(
                    'x',
                    TEXT_BYTES.saturating_sub(text.len()),
                ));
                let _ = e
                    .map(1)
                    .and_then(|e| e.str("data"))
                    .and_then(|e| e.str(&text));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `msg` map of a publish frame.
    fn msg_of(frame: &[u8]) -> Decoder<'_> {
        let mut d = Decoder::new(frame);
        d.map().unwrap();
        for _ in 0..2 {
            d.str().unwrap();
            d.str().unwrap();
        }
        assert_eq!(d.str().unwrap(), "msg");
        d
    }

    #[test]
    fn a_published_frame_reads_back_through_cbor() {
        for kind in [Kind::Image, Kind::Text] {
            let frames = Frames::new(kind, "/t");
            let f = frames.frame(42, 1_700_000_000, 123_456_789);
            let s = kind.read_cbor(&mut msg_of(&f)).unwrap();
            assert_eq!(s.seq, 42);
            assert_eq!(s.stamp_ns, 1_700_000_000_123_456_789);
        }
    }

    #[test]
    fn the_stamp_and_sequence_number_read_from_cdr_in_either_byte_order() {
        // An Image's CDR as the codec writes it: header (stamp, frame_id "7"), then the rest.
        let mut le = vec![0, 1, 0, 0];
        le.extend(5i32.to_le_bytes());
        le.extend(6u32.to_le_bytes());
        le.extend(2u32.to_le_bytes());
        le.extend(b"7\0");
        let s = Kind::Image.read_cdr(&le).unwrap();
        assert_eq!((s.seq, s.stamp_ns), (7, 5_000_000_006));
        let mut be = vec![0, 0, 0, 0];
        be.extend(5i32.to_be_bytes());
        be.extend(6u32.to_be_bytes());
        be.extend(2u32.to_be_bytes());
        be.extend(b"7\0");
        assert_eq!(Kind::Image.read_cdr(&be).unwrap(), s);
        // A String: its length, then the text.
        let text = b"9 1 2 xxxx\0";
        let mut cdr = vec![0, 1, 0, 0];
        cdr.extend((text.len() as u32).to_le_bytes());
        cdr.extend(text);
        let s = Kind::Text.read_cdr(&cdr).unwrap();
        assert_eq!((s.seq, s.stamp_ns), (9, 1_000_000_002));
        // Short or lying bytes are errors, never panics.
        for bad in [&le[..3], &le[..10], &le[..16]] {
            assert!(Kind::Image.read_cdr(bad).is_err());
        }
    }

    #[test]
    fn json_images_are_decoded_and_checked() {
        let data = base64_simd::STANDARD.encode_to_string(vec![1u8; IMAGE_BYTES]);
        let msg = serde_json::json!({"header": {"stamp": {"sec": 3, "nanosec": 4}, "frame_id": "11"},
            "height": 480, "width": 640, "data": data});
        let s = Kind::Image.read_json(&msg).unwrap();
        assert_eq!((s.seq, s.stamp_ns), (11, 3_000_000_004));
        let short = serde_json::json!({"header": {"stamp": {"sec": 3, "nanosec": 4}, "frame_id": "11"}, "data": "AAAA"});
        assert!(Kind::Image.read_json(&short).is_err());
        let text = serde_json::json!({"data": "5 6 7 xx"});
        assert_eq!(Kind::Text.read_json(&text).unwrap().stamp_ns, 6_000_000_007);
    }
}
