//! The Fast DDS service nodes (tests/fastdds/node.cpp) on their own, in one domain: what
//! rmw_fastrtps does, and what the proxy's service tests (tests/rustdds_vendors/services.rs) rely on.
//! The domain pairs are those of tests/fastdds_suites/topics.rs (tests/support/fastdds_common.rs).

use crate::common::*;
use crate::fastdds_common::*;
use crate::fastdds_support::*;

// ---------------------------------------------------------------------------------------------
// The service nodes, natively (the proxy's service tests are tests/rustdds_vendors/services.rs)

/// `answer a=A b=B sum=S` lines of a client, checked: each is a + b, for this client's a's.
fn answers(client: &Proc, a0: i64, b: i64, calls: i64) -> Vec<String> {
    let got = lines(client, "answer", calls as usize, T);
    let expected: Vec<String> = (0..calls)
        .map(|i| format!("answer a={} b={b} sum={}", a0 + i, a0 + i + b))
        .collect();
    assert_eq!(got, expected, "{}", client.logs());
    got
}

#[test]
fn fastdds_service_clients_get_their_own_answers_from_a_fastdds_server() {
    // rmw_fastrtps's convention inside one domain: three clients at once, 10 calls each; every
    // client matches exactly its own 10 replies by related sample identity and ignores the
    // others' (they all reach every client's reply reader).
    let p = pair(2);
    let mut server = fastdds("server", "server", p.a, &[]);
    let mut clients: Vec<(Proc, i64)> = [0i64, 100, 200]
        .iter()
        .map(|&a0| {
            let c = fastdds(
                &format!("client{a0}"),
                "client",
                p.a,
                &["--calls", "10", "--a", &a0.to_string(), "--b", "7"],
            );
            (c, a0)
        })
        .collect();
    for (c, a0) in &clients {
        assert_eq!(
            wait_line(c, "service available", T).as_deref(),
            Some("service available"),
            "{}",
            c.logs()
        );
        answers(c, *a0, 7, 10);
        let done = wait_line(c, "done", T).expect("client finished");
        assert!(
            done.starts_with("done answered=10 of 10 "),
            "{done}: {}",
            c.logs()
        );
    }
    let served = lines(&server, "request", 30, T);
    assert_eq!(served.len(), 30, "{served:?}");
    for (c, _) in clients.iter_mut() {
        c.wait_exit(T);
    }
    stop(&mut [&mut server]);
}
