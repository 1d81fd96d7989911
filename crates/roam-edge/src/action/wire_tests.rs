//! The action wire codec checked against roam-msg's codec and the `action_msgs` definitions.

use super::*;
use proptest::prelude::*;
use roam_msg::{EncodeOptions, TypeRegistry};
use serde_json::{json, Value};

fn oracle_encode(ty: &str, v: &Value, endian: Endian) -> Vec<u8> {
    oracle_encode_with(&TypeRegistry::with_builtins(), ty, v, endian)
}

fn oracle_decode(ty: &str, cdr: &[u8]) -> Value {
    let t = TypeRegistry::with_builtins().resolve(ty).unwrap();
    roam_msg::json::cdr_to_value(&t, cdr).unwrap()
}

fn uuid_json(id: &GoalId) -> Value {
    json!({ "uuid": id.0.to_vec() })
}

fn info_json(g: &GoalInfo) -> Value {
    json!({"goal_id": uuid_json(&g.goal_id), "stamp": {"sec": g.stamp.sec, "nanosec": g.stamp.nanosec}})
}

fn info(seed: u8, sec: i32) -> GoalInfo {
    GoalInfo {
        goal_id: GoalId([seed; 16]),
        stamp: Time {
            sec,
            nanosec: 7 + u32::from(seed),
        },
    }
}

fn endians() -> [Endian; 2] {
    [Endian::Little, Endian::Big]
}

#[test]
fn status_arrays_are_what_roam_msg_writes_and_reads_back() {
    let goals = vec![
        (info(1, 5), GoalStatus::Executing),
        (info(2, -3), GoalStatus::Succeeded),
        (info(3, 0), GoalStatus::Canceling),
    ];
    for e in endians() {
        let v = json!({"status_list": goals.iter().map(|(g, s)| json!({"goal_info": info_json(g), "status": s.code()})).collect::<Vec<_>>()});
        let cdr = encode_status_array(&goals, e);
        assert_eq!(cdr, oracle_encode("action_msgs/msg/GoalStatusArray", &v, e));
        assert_eq!(decode_status_array(&cdr).unwrap(), goals);
    }
}

#[test]
fn cancel_requests_and_responses_are_what_roam_msg_writes() {
    for e in endians() {
        let g = info(9, 1234);
        let cdr = encode_cancel_request(&g, e);
        assert_eq!(
            cdr,
            oracle_encode(
                "action_msgs/srv/CancelGoal_Request",
                &json!({"goal_info": info_json(&g)}),
                e
            )
        );
        assert_eq!(decode_cancel_request(&cdr).unwrap(), g);
        let resp = CancelResponse {
            code: CancelCode::None,
            goals_canceling: vec![info(1, 1), info(2, 2)],
        };
        let cdr = encode_cancel_response(&resp, e);
        let v = json!({"return_code": 0, "goals_canceling": resp.goals_canceling.iter().map(info_json).collect::<Vec<_>>()});
        assert_eq!(
            cdr,
            oracle_encode("action_msgs/srv/CancelGoal_Response", &v, e)
        );
        assert_eq!(decode_cancel_response(&cdr).unwrap(), resp);
    }
}

#[test]
fn goal_responses_and_result_requests_read_as_roam_msg_reads_them() {
    let mut reg = TypeRegistry::with_builtins();
    reg.add_action(
        "example_interfaces/action/Fibonacci",
        "int32 order\n---\nint32[] sequence\n---\nint32[] sequence\n",
    )
    .unwrap();
    let ty = |n: &str| reg.resolve(n).unwrap();
    for e in endians() {
        let cdr = encode_send_goal_response(true, Time { sec: 3, nanosec: 4 }, e);
        let v = roam_msg::json::cdr_to_value(
            &ty("example_interfaces/action/Fibonacci_SendGoal_Response"),
            &cdr,
        )
        .unwrap();
        assert_eq!(
            v,
            json!({"accepted": true, "stamp": {"sec": 3, "nanosec": 4}})
        );
        assert_eq!(
            decode_send_goal_response(&cdr).unwrap(),
            (true, Time { sec: 3, nanosec: 4 })
        );
        let id = GoalId::random();
        let cdr = encode_get_result_request(id, e);
        assert_eq!(
            cdr,
            oracle_encode_with(
                &reg,
                "example_interfaces/action/Fibonacci_GetResult_Request",
                &json!({"goal_id": uuid_json(&id)}),
                e
            )
        );
        assert_eq!(decode_get_result_request(&cdr).unwrap(), id);
        // A goal spliced behind its id is the SendGoal request roam-msg writes.
        let goal = oracle_encode_with(
            &reg,
            "example_interfaces/action/Fibonacci_Goal",
            &json!({"order": 5}),
            e,
        );
        let spliced = prefix_goal_id(id, &goal).unwrap();
        let whole = oracle_encode_with(
            &reg,
            "example_interfaces/action/Fibonacci_SendGoal_Request",
            &json!({"goal_id": uuid_json(&id), "goal": {"order": 5}}),
            e,
        );
        assert_eq!(spliced, whole);
        let mut back = Vec::new();
        assert_eq!(split_goal_id(&whole, &mut back).unwrap(), id);
        assert_eq!(back, goal);
        // A result's status is its first byte, whatever follows.
        let mut result = oracle_encode_with(
            &reg,
            "example_interfaces/action/Fibonacci_GetResult_Response",
            &json!({"status": 4, "result": {"sequence": [0, 1, 1]}}),
            e,
        );
        assert_eq!(result_status(&result).unwrap(), GoalStatus::Succeeded);
        set_result_status(&mut result, GoalStatus::Aborted).unwrap();
        let v = roam_msg::json::cdr_to_value(
            &ty("example_interfaces/action/Fibonacci_GetResult_Response"),
            &result,
        )
        .unwrap();
        assert_eq!(v, json!({"status": 6, "result": {"sequence": [0, 1, 1]}}));
    }
    assert_eq!(
        oracle_decode(
            "action_msgs/msg/GoalStatusArray",
            &encode_status_array(&[], Endian::Little)
        ),
        json!({"status_list": []})
    );
}

fn oracle_encode_with(reg: &TypeRegistry, ty: &str, v: &Value, endian: Endian) -> Vec<u8> {
    let t = reg.resolve(ty).unwrap();
    let mut out = Vec::new();
    let opts = EncodeOptions {
        endian,
        ..Default::default()
    };
    roam_msg::json::json_to_cdr(&t, v.to_string().as_bytes(), &opts, &mut out).unwrap();
    out
}

#[test]
fn bad_bytes_get_errors_that_say_what_was_wrong() {
    let ok = encode_status_array(&[(info(1, 1), GoalStatus::Accepted)], Endian::Little);
    let e = decode_status_array(&ok[..ok.len() - 2]).unwrap_err();
    assert!(e.to_string().contains("GoalStatusArray"), "{e}");
    let mut bad = ok.clone();
    bad[4] = 0xff; // a count that cannot fit
    assert!(matches!(
        decode_status_array(&bad),
        Err(ActionWireError::Count { .. })
    ));
    let mut bad = ok.clone();
    bad[4 + 4 + 24] = 9;
    assert_eq!(decode_status_array(&bad), Err(ActionWireError::Status(9)));
    assert!(decode_cancel_request(&[0, 1, 0, 0, 1]).is_err());
    assert!(decode_send_goal_response(&[7, 7, 0, 0]).is_err());
    let mut long = encode_cancel_request(&info(1, 1), Endian::Little);
    long.extend_from_slice(&[0; 8]);
    assert!(matches!(
        decode_cancel_request(&long),
        Err(ActionWireError::Trailing { .. })
    ));
    assert_eq!(
        GoalId([0x12; 16]).to_string(),
        "12121212-1212-1212-1212-121212121212"
    );
}

/// The fuzz target's committed seeds stay what they say they are.
#[test]
fn the_fuzz_seeds_decode() {
    let seed = |n: &str| {
        let p = format!(
            "{}/../../fuzz/seeds/service_wire/{n}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    };
    let list = decode_status_array(&seed("status_array_le")).unwrap();
    assert_eq!(list.len(), 2);
    assert_eq!(
        list[1].0.stamp,
        Time {
            sec: 11,
            nanosec: 6
        }
    );
    assert_eq!(list[1].1, GoalStatus::Succeeded);
    let c = decode_cancel_response(&seed("cancel_response_be")).unwrap();
    assert_eq!(c.goals_canceling[0].goal_id, GoalId([3; 16]));
    let h = crate::service::wire::split(&seed("add_request_le")).unwrap();
    assert_eq!((h.id.client, h.id.seq), (1000, 3));
    let h = crate::service::wire::split(&seed("add_reply_be")).unwrap();
    assert_eq!((h.id.client, h.id.seq, h.endian), (77, -1, Endian::Big));
}

proptest! {
    #[test]
    fn no_bytes_make_the_readers_panic(bytes in proptest::collection::vec(any::<u8>(), 0..96)) {
        let _ = decode_status_array(&bytes);
        let _ = decode_cancel_response(&bytes);
        let _ = decode_cancel_request(&bytes);
        let _ = decode_send_goal_response(&bytes);
        let _ = decode_get_result_request(&bytes);
        let _ = result_status(&bytes);
        let _ = split_goal_id(&bytes, &mut Vec::new());
    }

    #[test]
    fn status_arrays_round_trip(
        goals in proptest::collection::vec((any::<[u8; 16]>(), any::<i32>(), any::<u32>(), 0i8..7), 0..8),
        big: bool,
    ) {
        let goals: Vec<_> = goals.into_iter().map(|(id, sec, nanosec, s)| (
            GoalInfo { goal_id: GoalId(id), stamp: Time { sec, nanosec } },
            GoalStatus::from_code(s).unwrap(),
        )).collect();
        let e = if big { Endian::Big } else { Endian::Little };
        prop_assert_eq!(decode_status_array(&encode_status_array(&goals, e)).unwrap(), goals);
    }
}
