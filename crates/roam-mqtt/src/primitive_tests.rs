use super::*;
use crate::cdr::Writer;

fn cdr(f: impl FnOnce(&mut Writer)) -> Vec<u8> {
    let mut w = Writer::new();
    f(&mut w);
    w.finish()
}

#[test]
fn out_as_cpp_prints_it() {
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        (
            "std_msgs/msg/String",
            cdr(|w| w.string("hi there")),
            "hi there",
        ),
        ("std_msgs/Bool", cdr(|w| w.u8(1)), "true"),
        ("std_msgs/msg/Bool", cdr(|w| w.u8(0)), "false"),
        ("std_msgs/msg/Char", cdr(|w| w.u8(65)), "65"),
        ("std_msgs/msg/Int8", cdr(|w| w.u8(0xff)), "-1"),
        ("std_msgs/msg/UInt16", cdr(|w| w.u16(65535)), "65535"),
        ("std_msgs/msg/Int32", cdr(|w| w.i32(-42)), "-42"),
        (
            "std_msgs/msg/UInt64",
            cdr(|w| w.u64(u64::MAX)),
            "18446744073709551615",
        ),
        ("std_msgs/msg/Int64", cdr(|w| w.u64(-5i64 as u64)), "-5"),
        ("std_msgs/msg/Float32", cdr(|w| w.f32(2.25)), "2.250000"),
        ("std_msgs/msg/Float64", cdr(|w| w.f64(-0.5)), "-0.500000"),
        ("std_msgs/msg/Float64", cdr(|w| w.f64(f64::NAN)), "nan"),
        (
            "std_msgs/msg/UInt8MultiArray",
            cdr(|w| {
                w.u32(1);
                w.string("x");
                w.u32(3);
                w.u32(3);
                w.u32(0);
                w.bytes(b"abc");
            }),
            "abc",
        ),
    ];
    for (ty, bytes, want) in cases {
        let got = to_text(ty, &bytes).unwrap().unwrap();
        assert_eq!(String::from_utf8(got).unwrap(), want, "{ty}");
    }
    assert!(to_text("sensor_msgs/msg/Imu", &[0, 1, 0, 0]).is_none());
    assert!(to_text("std_msgs/msg/Int64", &[0, 1, 0, 0, 1])
        .unwrap()
        .is_err());
}

#[test]
fn in_probes_bool_int_float_then_string() {
    let cases: &[(&str, &str)] = &[
        ("TRUE", "std_msgs/msg/Bool"),
        ("false", "std_msgs/msg/Bool"),
        ("42", "std_msgs/msg/Int32"),
        (" -7", "std_msgs/msg/Int32"),
        ("3000000000", "std_msgs/msg/Float32"),
        ("2.5", "std_msgs/msg/Float32"),
        ("1e3", "std_msgs/msg/Float32"),
        ("inf", "std_msgs/msg/Float32"),
        ("nan", "std_msgs/msg/Float32"),
        ("-NaN", "std_msgs/msg/Float32"),
        ("1e50", "std_msgs/msg/String"),
        ("42 ", "std_msgs/msg/String"),
        ("hello", "std_msgs/msg/String"),
        ("", "std_msgs/msg/String"),
    ];
    for (text, ty) in cases {
        assert_eq!(probe(text.as_bytes()).0, *ty, "{text:?}");
    }
    assert_eq!(probe(b"42").1, cdr(|w| w.i32(42)));
    let nan = probe(b"nan").1;
    assert!(f32::from_le_bytes(nan[4..8].try_into().unwrap()).is_nan());
    assert_eq!(probe(b"hello").1, cdr(|w| w.string("hello")));
    // Not UTF-8: the text is taken lossily, never a panic.
    assert_eq!(probe(&[0xff, 0xfe]).0, "std_msgs/msg/String");
}

#[test]
fn in_with_a_fixed_type_parses_or_refuses() {
    assert_eq!(
        parse_fixed("std_msgs/msg/Bool", b"1").unwrap(),
        cdr(|w| w.u8(1))
    );
    assert_eq!(
        parse_fixed("std_msgs/msg/UInt16", b"65535").unwrap(),
        cdr(|w| w.u16(65535))
    );
    assert_eq!(
        parse_fixed("std_msgs/msg/Float64", b"1e300").unwrap(),
        cdr(|w| w.f64(1e300))
    );
    assert!(parse_fixed("std_msgs/msg/UInt8", b"256").is_err());
    assert!(parse_fixed("std_msgs/msg/Bool", b"yes").is_err());
    assert!(parse_fixed("std_msgs/msg/Float32", b"1e300").is_err());
    assert!(parse_fixed("geometry_msgs/msg/Twist", b"1").is_err());
    let arr = parse_fixed("std_msgs/msg/UInt8MultiArray", b"\x00\xffraw").unwrap();
    assert_eq!(
        to_text("std_msgs/msg/UInt8MultiArray", &arr)
            .unwrap()
            .unwrap(),
        b"\x00\xffraw"
    );
}
