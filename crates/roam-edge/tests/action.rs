//! Action handles on a real router in process and over a real client link: a Fibonacci goal
//! sent, its feedback and result received, a long goal canceled, a goal rejected. Goals,
//! feedback and results are encoded and decoded by roam-msg from the action's definition.

mod support;

use std::time::Duration;

use roam_edge::action::{ActionEvent, CancelCode, GoalStatus, ServerGoal};
use roam_edge::{ActionError, ActionRef, ActionServer, Edge, Port};
use roam_msg::{MessageType, TypeRegistry};
use serde_json::{json, Value};
use support::{client_edge, pki_dir, realm, router, T};

const FIBONACCI: &str = "example_interfaces/action/Fibonacci";

fn ty(suffix: &str) -> MessageType {
    let mut reg = TypeRegistry::with_builtins();
    reg.add_action(
        FIBONACCI,
        "int32 order\n---\nint32[] sequence\n---\nint32[] sequence\n",
    )
    .unwrap();
    reg.resolve(&format!("{FIBONACCI}_{suffix}")).unwrap()
}

fn encode(suffix: &str, v: Value) -> Vec<u8> {
    let mut out = Vec::new();
    roam_msg::json::json_to_cdr(
        &ty(suffix),
        v.to_string().as_bytes(),
        &Default::default(),
        &mut out,
    )
    .unwrap();
    out
}

fn decode(suffix: &str, cdr: &[u8]) -> Value {
    roam_msg::json::cdr_to_value(&ty(suffix), cdr).unwrap()
}

fn fib(n: usize) -> Vec<i64> {
    let mut s = vec![0, 1];
    while s.len() < n + 1 {
        s.push(s[s.len() - 1] + s[s.len() - 2]);
    }
    s.truncate(n + 1);
    s
}

/// Runs goals until canceled or done: order < 0 is rejected; order >= 50 runs until canceled,
/// publishing feedback meanwhile.
async fn fibonacci_server(mut server: ActionServer) {
    let mut running: std::collections::HashMap<_, tokio::sync::oneshot::Sender<()>> =
        Default::default();
    while let Some(ev) = server.recv().await {
        match ev {
            ActionEvent::Goal(req) => {
                let order = decode("Goal", &req.goal)["order"].as_i64().unwrap();
                if order < 0 {
                    req.reject().await.unwrap();
                    continue;
                }
                let goal = req.accept().await.unwrap();
                let (tx, rx) = tokio::sync::oneshot::channel();
                running.insert(goal.id(), tx);
                tokio::spawn(execute(goal, order as usize, rx));
            }
            ActionEvent::Cancel(id) => {
                if let Some(tx) = running.remove(&id) {
                    let _ = tx.send(());
                }
            }
        }
    }
}

async fn execute(goal: ServerGoal, order: usize, mut cancel: tokio::sync::oneshot::Receiver<()>) {
    goal.execute().await.unwrap();
    let mut seq = vec![0i64, 1];
    loop {
        goal.publish_feedback(&encode("Feedback", json!({ "sequence": seq })))
            .await
            .unwrap();
        if order < 50 && seq.len() > order {
            break;
        }
        if order >= 50 {
            // Runs until canceled, a step every 20 ms.
            tokio::select! {
                _ = &mut cancel => {
                    assert!(goal.is_canceling());
                    let r = encode("GetResult_Response", json!({"result": {"sequence": seq}}));
                    goal.finish(GoalStatus::Canceled, &r).await.unwrap();
                    return;
                }
                _ = tokio::time::sleep(Duration::from_millis(20)) => {}
            }
        }
        seq.push(seq[seq.len() - 1] + seq[seq.len() - 2]);
    }
    let r = encode("GetResult_Response", json!({"result": {"sequence": seq}}));
    goal.finish(GoalStatus::Succeeded, &r).await.unwrap();
}

async fn round_trip(client_side: &Edge, server_side: &Edge, name: &str) {
    let action = ActionRef::new(realm(), name, FIBONACCI).unwrap();
    let server = server_side.action_server(&action).await.unwrap();
    let serving = tokio::spawn(fibonacci_server(server));
    let client = client_side
        .action_client(&action, Default::default())
        .await
        .unwrap();
    assert!(client.wait_for_server(T).await);

    // A goal: feedback, then the result.
    let mut goal = client
        .send_goal(&encode("Goal", json!({"order": 6})), T)
        .await
        .unwrap();
    let mut feedback = Vec::new();
    while let Some(f) = tokio::time::timeout(T, goal.feedback()).await.unwrap() {
        let v = decode("Feedback", &f);
        feedback.push(serde_json::from_value::<Vec<i64>>(v["sequence"].clone()).unwrap());
    }
    assert!(!feedback.is_empty(), "no feedback");
    for (i, f) in feedback.iter().enumerate() {
        assert_eq!(
            f,
            &fib(i + 1),
            "feedback {i} in order, each a longer prefix"
        );
    }
    let result = goal.result(T).await.unwrap();
    assert_eq!(result.status, GoalStatus::Succeeded);
    let v = decode("GetResult_Response", &result.response);
    assert_eq!(v["status"], 4);
    assert_eq!(
        serde_json::from_value::<Vec<i64>>(v["result"]["sequence"].clone()).unwrap(),
        fib(6)
    );
    assert_eq!(goal.status(), GoalStatus::Succeeded);
    // Asked again, the result is still there.
    assert_eq!(goal.result(T).await.unwrap(), result);

    // A long goal, canceled after its first feedback.
    let mut long = client
        .send_goal(&encode("Goal", json!({"order": 100})), T)
        .await
        .unwrap();
    tokio::time::timeout(T, long.feedback())
        .await
        .unwrap()
        .unwrap();
    let canceling = long.cancel(T).await.unwrap();
    assert_eq!(canceling.code, CancelCode::None);
    assert_eq!(canceling.goals_canceling[0].goal_id, long.id());
    let result = long.result(T).await.unwrap();
    assert_eq!(result.status, GoalStatus::Canceled);
    let partial = decode("GetResult_Response", &result.response)["result"]["sequence"].clone();
    assert!(partial.as_array().unwrap().len() >= 2);
    // Canceling it again: it is finished.
    assert_eq!(
        long.cancel(T).await.unwrap().code,
        CancelCode::GoalTerminated
    );

    // A goal the server rejects.
    let e = client
        .send_goal(&encode("Goal", json!({"order": -1})), T)
        .await
        .err()
        .expect("rejected");
    assert!(matches!(e, ActionError::Rejected { .. }), "{e}");
    serving.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_router_a_goal_gets_feedback_and_a_result_and_a_long_one_is_canceled() {
    let dir = pki_dir("action");
    let r = router(&dir, "r").await;
    let edge = Edge::new(Port::Router(r.clone()), "proc");
    round_trip(&edge, &edge, "/fibonacci").await;
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_a_client_link_a_goal_gets_feedback_and_a_result_both_ways() {
    let dir = pki_dir("action-link");
    let r = router(&dir, "r").await;
    let laptop = client_edge(&dir, "laptop", &r);
    let robot = Edge::new(Port::Router(r.clone()), "robot");
    round_trip(&laptop, &robot, "/fibonacci").await;
    round_trip(&robot, &laptop, "/fibonacci_back").await;
    r.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_sees_no_server_and_two_clients_see_only_their_goals_feedback() {
    let dir = pki_dir("action-two");
    let r = router(&dir, "r").await;
    let edge = Edge::new(Port::Router(r.clone()), "proc");
    let action = ActionRef::new(realm(), "/fib", FIBONACCI).unwrap();
    let options = roam_edge::ServiceClientOptions {
        server_wait: Duration::from_millis(200),
        ..Default::default()
    };
    let a = edge.action_client(&action, options.clone()).await.unwrap();
    let e = a
        .send_goal(&encode("Goal", json!({"order": 3})), T)
        .await
        .err()
        .expect("no server");
    assert!(
        matches!(
            e,
            ActionError::Service(roam_edge::ServiceError::NoServer { .. })
        ),
        "{e}"
    );
    let serving = tokio::spawn(fibonacci_server(edge.action_server(&action).await.unwrap()));
    let b = edge.action_client(&action, options).await.unwrap();
    assert!(a.wait_for_server(T).await && b.wait_for_server(T).await);
    let mut ga = a
        .send_goal(&encode("Goal", json!({"order": 3})), T)
        .await
        .unwrap();
    let mut gb = b
        .send_goal(&encode("Goal", json!({"order": 9})), T)
        .await
        .unwrap();
    for (g, order) in [(&mut ga, 3), (&mut gb, 9)] {
        while let Some(f) = tokio::time::timeout(T, g.feedback()).await.unwrap() {
            let s: Vec<i64> =
                serde_json::from_value(decode("Feedback", &f)["sequence"].clone()).unwrap();
            assert!(s.len() <= order + 1, "feedback of another goal: {s:?}");
        }
        let v = decode("GetResult_Response", &g.result(T).await.unwrap().response);
        assert_eq!(v["result"]["sequence"].as_array().unwrap().len(), order + 1);
    }
    serving.abort();
    r.shutdown().await;
}
