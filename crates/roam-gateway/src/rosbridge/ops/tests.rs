use super::*;

fn json(s: &str) -> Op {
    parse_json(s.as_bytes()).unwrap_or_else(|r| panic!("{s}: {}", r.error))
}

fn refused(s: &[u8]) -> Refusal {
    match parse_json(s) {
        Ok(op) => panic!("accepted {op:?}"),
        Err(r) => r,
    }
}

#[test]
fn roslibpy_ops_parse_into_typed_ops() {
    match json(
        r#"{"op":"subscribe","id":"subscribe:/chatter:1","type":"std_msgs/String","topic":"/chatter","compression":"none","throttle_rate":0,"queue_length":0}"#,
    ) {
        Op::Subscribe(s) => {
            assert_eq!(s.id.as_deref(), Some("subscribe:/chatter:1"));
            assert_eq!(s.topic, "/chatter");
            assert_eq!(s.type_name.as_deref(), Some("std_msgs/String"));
            assert_eq!(
                (s.throttle_rate, s.queue_length, s.compression),
                (0, 0, Compression::None)
            );
            assert_eq!(s.fragment_size, None);
        }
        op => panic!("{op:?}"),
    }
    match json(
        r#"{"op":"publish","id":"publish:/chatter:2","topic":"/chatter","msg":{"data":"hi"},"latch":false}"#,
    ) {
        Op::Publish {
            msg: Body::Json(m), ..
        } => assert_eq!(m.get(), r#"{"data":"hi"}"#),
        op => panic!("{op:?}"),
    }
    match json(r#"{"op":"call_service","id":7,"service":"/add","args":[1,2],"timeout":2.5}"#) {
        Op::CallService {
            id,
            args: Some(Body::Json(a)),
            timeout,
            ..
        } => {
            assert_eq!(id.as_deref(), Some("7"));
            assert_eq!(a.get(), "[1,2]");
            assert_eq!(timeout, Some(2.5));
        }
        op => panic!("{op:?}"),
    }
    match json(
        r#"{"op":"auth","mac":"tok","client":"","dest":"","rand":"","t":0,"level":"user","end":0}"#,
    ) {
        Op::Auth { token } => assert_eq!(token, "tok"),
        op => panic!("{op:?}"),
    }
    assert!(matches!(
        json(r#"{"op":"set_level","level":"warning"}"#),
        Op::SetLevel { .. }
    ));
}

#[test]
fn bad_frames_are_refused_with_what_is_wrong_and_the_op_id() {
    let r = refused(b"{\"op\":\"publish\",");
    assert!(
        r.error.to_string().starts_with("malformed JSON: EOF"),
        "{}",
        r.error
    );
    assert!(matches!(refused(b"[1,2]").error, OpError::NoOp));
    assert!(matches!(refused(b"{\"id\":\"x\"}").error, OpError::NoOp));
    let r = refused(br#"{"op":"launch_missiles","id":"a1"}"#);
    assert_eq!(r.id.as_deref(), Some("a1"));
    assert_eq!(r.error.to_string(), "unknown op \"launch_missiles\"");
    let r = refused(br#"{"op":"publish","id":"p","topic":"/x"}"#);
    assert_eq!(r.error.to_string(), "op publish: missing field \"msg\"");
    assert_eq!(r.id.as_deref(), Some("p"));
    let r = refused(br#"{"op":"subscribe","topic":"/x","compression":"png"}"#);
    assert!(
        r.error.to_string().contains("png is not offered"),
        "{}",
        r.error
    );
    let r = refused(br#"{"op":"subscribe","topic":"/x","queue_length":-1}"#);
    assert!(r.error.to_string().contains("queue_length"), "{}", r.error);
    let r = refused(br#"{"op":"subscribe","topic":7}"#);
    assert!(r.error.to_string().contains("invalid type"), "{}", r.error);
    assert!(matches!(
        refused(br#"{"op":"send_action_goal","id":"g"}"#).error,
        OpError::Missing {
            field: "action",
            ..
        }
    ));
    assert!(matches!(
        refused(br#"{"op":"action_result","action":"/f","status":9}"#).error,
        OpError::Invalid {
            field: "status",
            ..
        }
    ));
}

fn cbor(build: impl FnOnce(&mut minicbor::Encoder<&mut Vec<u8>>)) -> Vec<u8> {
    let mut v = Vec::new();
    build(&mut minicbor::Encoder::new(&mut v));
    v
}

#[test]
fn cbor_frames_parse_like_json_and_keep_the_body_bytes() {
    let msg = cbor(|e| {
        e.map(1).unwrap().str("data").unwrap().str("hi").unwrap();
    });
    let frame = cbor(|e| {
        e.map(4).unwrap();
        e.str("op").unwrap().str("publish").unwrap();
        e.str("id").unwrap().u32(9).unwrap();
        e.str("topic").unwrap().str("/chatter").unwrap();
        e.str("msg").unwrap();
    });
    let frame = [frame, msg.clone()].concat();
    match parse_cbor(&frame).unwrap() {
        Op::Publish {
            id,
            topic,
            msg: Body::Cbor(m),
        } => {
            assert_eq!(id.as_deref(), Some("9"));
            assert_eq!(topic, "/chatter");
            assert_eq!(m, msg);
        }
        op => panic!("{op:?}"),
    }
    // Indefinite-length maps too.
    let frame = cbor(|e| {
        e.begin_map().unwrap();
        e.str("op").unwrap().str("subscribe").unwrap();
        e.str("topic").unwrap().str("/a").unwrap();
        e.str("throttle_rate").unwrap().f64(100.0).unwrap();
        e.end().unwrap();
    });
    assert!(matches!(parse_cbor(&frame).unwrap(), Op::Subscribe(s) if s.throttle_rate == 100));
    for bad in [&[0xa1u8, 0x62, b'o'][..], &[0x82, 1, 2], &[0xff], &[]] {
        let r = parse_cbor(bad).unwrap_err();
        assert!(
            r.error.to_string().starts_with("malformed CBOR"),
            "{:?}: {}",
            bad,
            r.error
        );
    }
    let r = parse_cbor(&cbor(|e| {
        e.map(1).unwrap().str("op").unwrap().u8(3).unwrap();
    }))
    .unwrap_err();
    assert!(
        r.error.to_string().contains("expected a string"),
        "{}",
        r.error
    );
}
