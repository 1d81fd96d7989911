//! The codec's conventions and errors, on hand-written types (the oracle test covers every
//! standard type against rosbags).

mod common;

use common::registry;
use roam_msg::{
    DecodeErrorKind, EncodeErrorKind, EncodeOptions, Endian, MessageType, TypeRegistry,
};
use serde_json::{json, Value};

fn ty(name: &str) -> MessageType {
    registry().resolve(name).unwrap()
}

fn to_cdr(t: &MessageType, v: &Value, endian: Endian) -> Vec<u8> {
    let mut out = Vec::new();
    t.json_to_cdr(
        v.to_string().as_bytes(),
        &EncodeOptions { endian, now: None },
        &mut out,
    )
    .unwrap();
    out
}

fn to_json(t: &MessageType, cdr: &[u8]) -> Value {
    let mut out = Vec::new();
    t.cdr_to_json(cdr, &mut out).unwrap();
    serde_json::from_slice(&out).unwrap()
}

fn all_value() -> Value {
    json!({
        "b": true, "y": 255, "c": 65, "i8": -128, "u8": 255, "i16": -32768, "u16": 65535,
        "i32": -2147483648i64, "u32": 4294967295u64, "i64": i64::MIN, "u64": u64::MAX,
        "f32": 0.10000000149011612, "f64": -0.0, "s": "ünï\"cödé\n😀", "w": "wide ✓ 😀", "bs": "abc",
        "data": "AAEC/w==", "fixed_data": "AQIDBA==", "bounded_data": [1, 2], "octets": [0, 255],
        "chars": "aGk=", "v": [1.5, null, 2.0], "bi": [1, -1], "names": ["", "x"],
        "d": {"sec": -1, "nanosec": 999999999}, "times": [{"sec": 1, "nanosec": 2}], "e": {},
        "flags": [true, false]
    })
}

#[test]
fn json_round_trips_in_both_byte_orders() {
    let t = ty("test_msgs/msg/All");
    let v = all_value();
    let le = to_cdr(&t, &v, Endian::Little);
    let be = to_cdr(&t, &v, Endian::Big);
    assert_eq!(&le[..4], &[0, 1, 0, 0]);
    assert_eq!(&be[..4], &[0, 0, 0, 0]);
    assert_ne!(le, be);
    assert_eq!(to_json(&t, &le), v);
    assert_eq!(to_json(&t, &be), v);
    // CBOR keeps everything, so CDR -> CBOR -> CDR gives the same bytes.
    for cdr in [&le, &be] {
        let mut cbor = Vec::new();
        t.cdr_to_cbor(cdr, &mut cbor).unwrap();
        let mut back = Vec::new();
        t.cbor_to_cdr(
            &cbor,
            &EncodeOptions {
                endian: Endian::of(cdr).unwrap(),
                now: None,
            },
            &mut back,
        )
        .unwrap();
        assert_eq!(&back, cdr);
    }
}

#[test]
fn nan_and_infinity_become_null() {
    let t = ty("sensor_msgs/msg/LaserScan");
    let v = json!({"angle_min": null, "ranges": [1.0, null, -0.0, 1e-45]});
    let cdr = to_cdr(&t, &v, Endian::Little);
    let out = to_json(&t, &cdr);
    assert_eq!(out["angle_min"], Value::Null);
    assert_eq!(
        out["ranges"],
        json!([1.0, null, -0.0, 1.401298464324817e-45])
    );
    assert_eq!(
        out["header"],
        json!({"stamp": {"sec": 0, "nanosec": 0}, "frame_id": ""})
    );
}

#[test]
fn missing_fields_take_defaults_and_order_does_not_matter() {
    let t = ty("test_msgs/msg/Defaults");
    let out = to_json(&t, &to_cdr(&t, &json!({}), Endian::Little));
    assert_eq!(
        out,
        json!({"a": 7, "s": "hi", "v": [1.5, -2.0], "q": [1, 2], "inner": {"x": 3, "t": ["a"]}})
    );
    let shuffled = json!({"inner": {"t": [], "x": 9}, "q": [], "a": 1});
    let in_order = json!({"a": 1, "q": [], "inner": {"x": 9, "t": []}});
    let t2 = ty("test_msgs/msg/Defaults");
    assert_eq!(
        to_cdr(&t2, &shuffled, Endian::Big),
        to_cdr(&t2, &in_order, Endian::Big)
    );
}

#[test]
fn time_accepts_ros1_names() {
    let t = ty("std_msgs/msg/Header");
    let out = to_json(
        &t,
        &to_cdr(
            &t,
            &json!({"stamp": {"secs": 5, "nsecs": 6}}),
            Endian::Little,
        ),
    );
    assert_eq!(out["stamp"], json!({"sec": 5, "nanosec": 6}));
    let mut cdr = Vec::new();
    let opts = EncodeOptions {
        endian: Endian::Little,
        now: Some((42, 7)),
    };
    t.json_to_cdr(br#"{"stamp": "now"}"#, &opts, &mut cdr)
        .unwrap();
    assert_eq!(to_json(&t, &cdr)["stamp"], json!({"sec": 42, "nanosec": 7}));
    assert!(t
        .json_to_cdr(
            br#"{"stamp": "now"}"#,
            &EncodeOptions::default(),
            &mut Vec::new()
        )
        .is_err());
}

fn encode_err(t: &MessageType, json: &str) -> roam_msg::EncodeError {
    let mut out = vec![9u8];
    let e = t
        .json_to_cdr(json.as_bytes(), &EncodeOptions::default(), &mut out)
        .unwrap_err();
    assert_eq!(out, [9u8], "the output is left as it was");
    e
}

#[test]
fn bad_json_is_refused_with_the_path() {
    let t = ty("sensor_msgs/msg/LaserScan");
    let e = encode_err(&t, r#"{"header": {"stamp": {"sec": 1.5}}}"#);
    assert_eq!(e.path.to_string(), "header.stamp.sec");
    assert!(matches!(e.kind, EncodeErrorKind::Mismatch { .. }), "{e}");
    let e = encode_err(&t, r#"{"ranges": [1, 2, "x"]}"#);
    assert_eq!(e.to_string(), "ranges[2]: expected float32, found a string");
    let e = encode_err(&t, r#"{"header": {"frame": "x"}}"#);
    assert_eq!(e.to_string(), "header: the type has no field \"frame\"");
    let e = encode_err(&t, r#"{"ranges": [1, 2"#);
    assert!(matches!(e.kind, EncodeErrorKind::Syntax(_)), "{e}");
    assert!(encode_err(&t, r#"{"range_max": 1e39}"#)
        .to_string()
        .contains("out of range"));
    let a = ty("test_msgs/msg/All");
    assert_eq!(
        encode_err(&a, r#"{"i8": 128}"#).to_string(),
        "i8: 128 is out of range for int8"
    );
    assert_eq!(
        encode_err(&a, r#"{"u64": -1}"#).to_string(),
        "u64: -1 is out of range for uint64"
    );
    assert_eq!(
        encode_err(&a, r#"{"bs": "abcd"}"#).to_string(),
        "bs: string of 4 characters exceeds the bound 3"
    );
    assert_eq!(
        encode_err(&a, r#"{"v": [1, 2]}"#).to_string(),
        "v: expected exactly 3 elements, found 2"
    );
    assert_eq!(
        encode_err(&a, r#"{"bi": [1, 2, 3]}"#).to_string(),
        "bi: 3 elements exceed the bound 2"
    );
    assert!(matches!(
        encode_err(&a, r#"{"data": "!!"}"#).kind,
        EncodeErrorKind::Base64(_)
    ));
    assert_eq!(
        encode_err(&a, r#"{"b": 1}"#).to_string(),
        "b: expected bool, found a number"
    );
    assert_eq!(
        encode_err(&a, r#"{"i32": 1.0}"#).to_string(),
        "i32: expected int32, found the float 1"
    );
    assert_eq!(
        encode_err(&a, r#"{"e": {"x": 1}}"#).to_string(),
        "e: the type has no field \"x\""
    );
    assert_eq!(
        encode_err(&a, r#"{"b": true, "b": false}"#).to_string(),
        "b: field given twice"
    );
    assert_eq!(
        encode_err(&a, r#"{"times": [{"sec": 1}, {"sec": "x"}]}"#).to_string(),
        "times[1].sec: expected int32, found a string"
    );
    // Deep nesting in a value the type does not descend into is refused, not a stack overflow.
    let deep = format!(
        "{{\"ranges\": {}{}, \"header\": {{}}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    assert_eq!(
        encode_err(&t, &deep).kind,
        EncodeErrorKind::TooDeep(roam_msg::json::MAX_JSON_DEPTH)
    );
    let deep = format!(
        "{{\"names\": {}{}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    assert_eq!(
        encode_err(&a, &deep).to_string(),
        "<message>: nesting deeper than 128 levels"
    );
    // Where the type does descend, the first element of the wrong kind stops it.
    let deep = format!(
        "{{\"headers\": {}{}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    assert_eq!(
        encode_err(&ty("test_msgs/msg/Nested"), &deep).to_string(),
        "headers[0]: expected an object for std_msgs/msg/Header, found an array"
    );
}

fn syntax_err(t: &MessageType, json: &str) -> String {
    match encode_err(t, json).kind {
        EncodeErrorKind::Syntax(m) => m,
        other => panic!("{json}: expected a syntax error, got {other:?}"),
    }
}

#[test]
fn malformed_json_is_refused_with_its_line_and_column() {
    let t = ty("sensor_msgs/msg/LaserScan");
    assert_eq!(
        syntax_err(&t, "{\"ranges\": [1, 2"),
        "EOF while parsing a list at line 1 column 17"
    );
    assert_eq!(
        syntax_err(&t, "{\n  \"ranges\": [1,\n 2 3]}"),
        "expected `,` or `]` at line 3 column 4"
    );
    assert_eq!(
        syntax_err(&t, "{} x"),
        "trailing characters at line 1 column 4"
    );
    assert!(syntax_err(&t, "").starts_with("EOF while parsing a value"));
    assert!(syntax_err(&t, "{\"ranges\": [1,]}").contains("line 1 column 15"));
    assert!(syntax_err(&t, "{\"ranges\" [1]}").starts_with("expected `:`"));
    assert!(syntax_err(&t, "{ranges: []}").starts_with("key must be a string"));
    // Numbers follow JSON's grammar, and must fit a float64.
    for bad in [
        "01",
        "1.",
        ".5",
        "+1",
        "-",
        "1e",
        "NaN",
        "Infinity",
        "-Infinity",
        "0x10",
        "1.e3",
    ] {
        syntax_err(&t, &format!("{{\"ranges\": [{bad}]}}"));
        syntax_err(&t, &format!("{{\"range_min\": {bad}}}"));
        syntax_err(
            &t,
            &format!("{{\"header\": {{\"stamp\": {{\"sec\": {bad}}}}}}}"),
        );
    }
    assert!(syntax_err(&t, r#"{"ranges": [1e400]}"#).starts_with("number out of range"));
    // Held back for later (given before `header`), and still checked.
    assert!(
        syntax_err(&t, r#"{"ranges": [-1e400], "header": {}}"#).starts_with("number out of range")
    );
    // Strings: no raw control characters, valid escapes and surrogate pairs, UTF-8.
    let h = ty("std_msgs/msg/Header");
    assert!(syntax_err(&h, "{\"frame_id\": \"a\u{1}b\"}").starts_with("control character"));
    assert!(syntax_err(&h, r#"{"frame_id": "a\qb"}"#).starts_with("invalid escape"));
    assert!(syntax_err(&h, r#"{"frame_id": "\ud800"}"#).starts_with("lone leading surrogate"));
    assert!(syntax_err(&h, r#"{"frame_id": "\ud800\u0041"}"#).starts_with("lone leading surrogate"));
    assert!(syntax_err(&h, r#"{"frame_id": "\u12"}"#).starts_with("invalid escape"));
    assert!(syntax_err(&h, r#"{"frame_id": "abc"#).starts_with("EOF while parsing a string"));
    let mut bad_utf8 = br#"{"frame_id": "a"#.to_vec();
    bad_utf8.extend_from_slice(&[0xff, b'"', b'}']);
    let e = h
        .json_to_cdr(&bad_utf8, &EncodeOptions::default(), &mut Vec::new())
        .unwrap_err();
    assert!(matches!(e.kind, EncodeErrorKind::Syntax(_)), "{e}");
}

#[test]
fn json_values_of_the_wrong_kind_name_the_field() {
    let t = ty("sensor_msgs/msg/LaserScan");
    assert_eq!(
        encode_err(&t, r#"{"header": 5}"#).to_string(),
        "header: expected an object for std_msgs/msg/Header, found a number"
    );
    assert_eq!(
        encode_err(&t, "[]").to_string(),
        "<message>: expected an object for sensor_msgs/msg/LaserScan, found an array"
    );
    assert_eq!(
        encode_err(&t, r#"{"header": {"frame_id": ["x"]}}"#).to_string(),
        "header.frame_id: expected a string, found an array"
    );
    assert_eq!(
        encode_err(&t, r#"{"ranges": {}}"#).to_string(),
        "ranges: expected an array, found an object"
    );
    assert_eq!(
        encode_err(&t, r#"{"ranges": "AAAA"}"#).to_string(),
        "ranges: expected an array, found a string"
    );
    // A field given early is read when its turn comes, and its errors keep their path.
    assert_eq!(
        encode_err(&t, r#"{"intensities": [1, "x"], "ranges": [2]}"#).to_string(),
        "intensities[1]: expected float32, found a string"
    );
    assert_eq!(
        encode_err(&t, r#"{"ranges": [3.5e38], "header": {}}"#).to_string(),
        "ranges[0]: 350000000000000000000000000000000000000 is out of range for float32"
    );
}

#[test]
fn json_numbers_and_strings_read_exactly() {
    let t = ty("test_msgs/msg/All");
    let read = |json: &[u8]| {
        let mut cdr = Vec::new();
        t.json_to_cdr(json, &EncodeOptions::default(), &mut cdr)
            .unwrap();
        to_json(&t, &cdr)
    };
    // Whole numbers with and without `.0`, long ones, exponents, -0 and subnormals keep
    // their values; float32 fields take the float64 nearest the text, then round.
    let v =
        read(br#"{"v": [-0, 12.0, 123456789012345678], "f32": 0.10000000149011612, "f64": 1E-2}"#);
    assert_eq!(v["v"], json!([-0.0, 12.0, 123456789012345680.0]));
    assert_eq!(v["f32"], json!(0.10000000149011612));
    assert_eq!(v["f64"], json!(0.01));
    let v = read(br#"{"v": [-0.0, 1.00, 5e-324], "f32": 1e-46}"#);
    assert_eq!(v["v"], json!([-0.0, 1.0, 5e-324]));
    assert_eq!(v["f32"], json!(0.0));
    let v = read(br#"{"s": "\u00e9\ud83d\ude00\n\"\\\/", "w": "\u2713 \ud83d\ude00"}"#);
    assert_eq!(v["s"], json!("é😀\n\"\\/"));
    assert_eq!(v["w"], json!("✓ 😀"));
    // An integer field refuses what is a float in JSON, however whole.
    for (json, found) in [
        (r#"{"i64": -0}"#, "the float -0"),
        (r#"{"i64": 1e3}"#, "the float 1000"),
        (r#"{"i64": 1.0}"#, "the float 1"),
        (
            r#"{"u64": 18446744073709551616}"#,
            "the float 18446744073709552000",
        ),
    ] {
        let e = encode_err(&t, json);
        assert!(e.to_string().ends_with(found), "{json}: {e}");
    }
}

#[test]
fn bad_cdr_is_refused_with_the_path() {
    let t = ty("sensor_msgs/msg/LaserScan");
    let good = to_cdr(
        &t,
        &json!({"header": {"frame_id": "abc"}, "ranges": vec![1.0; 20]}),
        Endian::Little,
    );
    let mut out = vec![7u8];
    for cut in 0..good.len() {
        assert!(
            t.cdr_to_json(&good[..cut], &mut out).is_err(),
            "cut at {cut}"
        );
        assert_eq!(out, [7u8]);
    }
    let e = t.cdr_to_json(&good[..10], &mut out).unwrap_err();
    assert_eq!(e.to_string(), "header.stamp.nanosec: needs 4 bytes, 2 left");
    // A sequence length larger than the bytes left is refused before anything is sized by it.
    let mut huge = good.clone();
    let at = 4 + 8 + 4 + 4 + 7 * 4; // header(stamp 8, frame_id len+"abc\0"), 7 floats
    huge[at..at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    let e = t.cdr_to_json(&huge, &mut out).unwrap_err();
    assert_eq!(e.path.to_string(), "ranges");
    assert!(
        matches!(
            e.kind,
            DecodeErrorKind::SequenceTooLong { len: u32::MAX, .. }
        ),
        "{e}"
    );
    let mut bad = good.clone();
    bad[0] = 7;
    assert!(matches!(
        t.cdr_to_json(&bad, &mut out).unwrap_err().kind,
        DecodeErrorKind::Encapsulation(0x0701)
    ));
    let mut long = good.clone();
    long.extend_from_slice(&[0; 4]);
    assert!(matches!(
        t.cdr_to_json(&long, &mut out).unwrap_err().kind,
        DecodeErrorKind::TrailingBytes(4)
    ));
    long.truncate(good.len() + 3);
    assert!(
        t.cdr_to_json(&long, &mut out).is_ok(),
        "up to 3 bytes of end padding are allowed"
    );
    let s = ty("std_msgs/msg/Header");
    let e = s
        .cdr_to_json(
            &[0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0xff, 0],
            &mut Vec::new(),
        )
        .unwrap_err();
    assert_eq!(e.to_string(), "frame_id: string is not valid UTF-8");
}

#[test]
fn cbor_follows_rosbridge() {
    let t = ty("test_msgs/msg/All");
    let cdr = to_cdr(&t, &all_value(), Endian::Big);
    let mut cbor = Vec::new();
    t.cdr_to_cbor(&cdr, &mut cbor).unwrap();
    let mut d = minicbor_probe::Probe::new(&cbor);
    // uint8[] as a byte string; float64[3] as a little-endian float64 typed array (tag 86).
    assert_eq!(d.field_bytes("data"), Some((None, vec![0, 1, 2, 255])));
    let (tag, raw) = d.field_bytes("v").unwrap();
    assert_eq!(tag, Some(86));
    assert_eq!(f64::from_le_bytes(raw[0..8].try_into().unwrap()), 1.5);
    assert!(f64::from_le_bytes(raw[8..16].try_into().unwrap()).is_nan());
    assert_eq!(
        d.field_bytes("bi"),
        Some((
            Some(78),
            [1i32.to_le_bytes(), (-1i32).to_le_bytes()].concat()
        ))
    );
}

/// A tiny CBOR reader for the test: finds a top-level key and returns (tag, bytes).
mod minicbor_probe {
    pub struct Probe<'a>(&'a [u8]);
    impl<'a> Probe<'a> {
        pub fn new(b: &'a [u8]) -> Self {
            Probe(b)
        }
        pub fn field_bytes(&mut self, key: &str) -> Option<(Option<u64>, Vec<u8>)> {
            let mut needle = vec![0x60 | key.len() as u8];
            needle.extend_from_slice(key.as_bytes());
            let at = self
                .0
                .windows(needle.len())
                .position(|w| w == needle.as_slice())?
                + needle.len();
            let mut d = minicbor::Decoder::new(&self.0[at..]);
            let tag = if d.datatype().ok()? == minicbor::data::Type::Tag {
                Some(d.tag().ok()?.as_u64())
            } else {
                None
            };
            Some((tag, d.bytes().ok()?.to_vec()))
        }
    }
}

#[test]
fn bounded_strings_are_checked_when_decoding() {
    let mut reg = TypeRegistry::new();
    reg.add_msg("p/msg/B", "string<=3 s\n").unwrap();
    let t = reg.resolve("p/msg/B").unwrap();
    let ok = to_cdr(&t, &json!({"s": "äöü"}), Endian::Little);
    assert_eq!(
        to_json(&t, &ok),
        json!({"s": "äöü"}),
        "the bound counts characters, not bytes"
    );
    let long = [0, 1, 0, 0, 5, 0, 0, 0, b'a', b'b', b'c', b'd', 0];
    let e = t.cdr_to_json(&long, &mut Vec::new()).unwrap_err();
    assert_eq!(
        e.to_string(),
        "s: string of 4 characters exceeds its bound 3"
    );
}

#[test]
fn binary_fields_take_base64_lists_and_lenient_padding() {
    let t = ty("test_msgs/msg/All");
    for (input, want) in [
        (r#"[1, 2, 255]"#, "AQL/"),
        (r#""AQL/""#, "AQL/"),
        (r#""AQI""#, "AQI="),
        (r#""AQ L/\n""#, "AQL/"),
    ] {
        let cdr = to_cdr(
            &t,
            &serde_json::from_str(&format!(r#"{{"data": {input}}}"#)).unwrap(),
            Endian::Little,
        );
        assert_eq!(to_json(&t, &cdr)["data"], json!(want), "{input}");
    }
    // A raw line break inside the base64 text is skipped too (as before; JSON strings may
    // not hold one, but base64 encoders wrap lines).
    let mut cdr = Vec::new();
    t.json_to_cdr(
        b"{\"data\": \"AQ\nL/\"}",
        &EncodeOptions::default(),
        &mut cdr,
    )
    .unwrap();
    assert_eq!(to_json(&t, &cdr)["data"], json!("AQL/"));
    assert!(encode_err(&t, r#"{"data": null}"#)
        .to_string()
        .starts_with("data: "));
    assert_eq!(
        encode_err(&t, r#"{"data": [256]}"#).to_string(),
        "data[0]: 256 is out of range for uint8"
    );
    assert_eq!(
        encode_err(&t, r#"{"fixed_data": "AQID"}"#).to_string(),
        "fixed_data: expected exactly 4 elements, found 3"
    );
}
