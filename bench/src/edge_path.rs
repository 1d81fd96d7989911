//! What a message costs through the edge layer (sealing, the in-process router, opening, the
//! subscriber's bookkeeping), per stream kind: a keep-last stream (the ROS 2 default, depth
//! 10) against a keep-all one, whose publisher keeps a resend window and whose subscriber
//! follows the session's sequence for end-to-end recovery. One process, one router, no
//! sockets: what is measured is the edge's own work, which recovery adds to.
//!
//! The kinds alternate run by run, so drift of the machine touches both alike.

use std::sync::Arc;
use std::time::{Duration, Instant};

use roam_edge::{Edge, Event, Port, Realm, StreamSpec, SubscriberOptions, TopicRef};
use roam_net::link::LinkConfig;
use roam_net::runtime::{self, RouterConfig, RoutingTimers};
use roam_proto::frame::Role;
use roam_proto::RealmSecret;
use serde::Serialize;

use crate::pki::TempPki;

const STRING: &str = "std_msgs::msg::dds_::String_";
/// The longest any wait here may take (demand, the last message).
const DEADLINE: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// "keep-last 10" or "keep-all (recoverable)".
    pub stream: String,
    pub messages: u64,
    pub payload: usize,
    /// Median of the runs: messages delivered per second, publish to the reader.
    pub msgs_per_s: f64,
    /// Median of the runs: the process's CPU time (user + system) per message.
    pub cpu_ns_per_msg: f64,
    pub runs_msgs_per_s: Vec<f64>,
}

/// The process's CPU time so far (utime + stime of /proc/self/stat), in seconds.
fn cpu_seconds() -> Result<f64, String> {
    let stat = std::fs::read_to_string("/proc/self/stat").map_err(|e| format!("/proc: {e}"))?;
    // Fields after the command name (which may hold spaces) start after the last ')'.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    Ok((tick(11) + tick(12)) / 100.0)
}

fn spec(keep_all: bool) -> StreamSpec {
    let mut s = StreamSpec::new(STRING);
    s.qos.depth = if keep_all { 0 } else { 10 };
    s
}

/// One run: `messages` published as fast as the reliable topic lets them, all read.
async fn one(
    edge: &Edge,
    topic: &TopicRef,
    keep_all: bool,
    messages: u64,
    payload: usize,
) -> Result<(f64, f64), String> {
    let mut sub = edge.subscriber(topic, SubscriberOptions::default()).await;
    let publisher = edge
        .publisher(topic, spec(keep_all))
        .await
        .map_err(|e| format!("publisher: {e}"))?;
    let reader = tokio::spawn(async move {
        let mut buf = Vec::new();
        let mut got = 0u64;
        while got < messages {
            match tokio::time::timeout(DEADLINE, sub.recv(&mut buf)).await {
                Ok(Some(Event::Message(_))) => got += 1,
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            }
        }
        got
    });
    // The reader reads the announcement that makes its subscriber ask for the data.
    let mut demand = publisher.demand();
    tokio::time::timeout(DEADLINE, demand.wait_for(|d| *d))
        .await
        .map_err(|_| "no demand for the bench topic".to_string())?
        .map_err(|_| "the edge closed".to_string())?;
    let body = vec![0x5a; payload];
    let (t0, c0) = (Instant::now(), cpu_seconds()?);
    for _ in 0..messages {
        publisher
            .publish(&body)
            .await
            .map_err(|e| format!("publish: {e}"))?;
    }
    let got = reader.await.map_err(|e| format!("reader: {e}"))?;
    let (secs, cpu) = (t0.elapsed().as_secs_f64(), cpu_seconds()? - c0);
    if got != messages {
        return Err(format!("the reader got {got} of {messages} messages"));
    }
    Ok((messages as f64 / secs, cpu * 1e9 / messages as f64))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

pub async fn run(messages: u64, payload: usize, repeat: usize) -> Result<Vec<Outcome>, String> {
    let pki = TempPki::new("edge-path")?;
    let (router, task) = runtime::start(RouterConfig {
        listen_mqtt: Vec::new(),
        identity: pki.identity("r", Role::Router)?,
        listen: None,
        listen_tcp: None,
        connect: vec![],
        link: LinkConfig::default(),
        timers: RoutingTimers::default(),
        max_backoff: Duration::from_millis(500),
        stall_timeout: Duration::from_secs(5),
    })
    .await
    .map_err(|e| format!("starting the router: {e}"))?;
    let edge = Edge::new(Port::Router(router.clone()), "bench");
    let realm = Arc::new(Realm::from_secret(
        "bench",
        RealmSecret::from_bytes([7; 32]),
    ));
    let mut runs: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
    for r in 0..repeat {
        for (i, keep_all) in [false, true].into_iter().enumerate() {
            // A topic per run: nothing of an earlier run's streams is left to read.
            let topic = TopicRef::new(realm.clone(), format!("/bench/edge/{r}/{i}"));
            runs[i].push(one(&edge, &topic, keep_all, messages, payload).await?);
        }
    }
    drop(edge);
    router.shutdown().await;
    let _ = task.await;
    Ok([false, true]
        .into_iter()
        .zip(runs)
        .map(|(keep_all, r)| Outcome {
            stream: if keep_all {
                "keep-all (recoverable)"
            } else {
                "keep-last 10"
            }
            .into(),
            messages,
            payload,
            msgs_per_s: median(r.iter().map(|x| x.0).collect()),
            cpu_ns_per_msg: median(r.iter().map(|x| x.1).collect()),
            runs_msgs_per_s: r.iter().map(|x| x.0).collect(),
        })
        .collect())
}

pub fn describe(o: &Outcome) -> String {
    format!(
        "{}: {:.0} msg/s, {:.0} ns CPU per message ({} × {} B; runs {:?})",
        o.stream,
        o.msgs_per_s,
        o.cpu_ns_per_msg,
        o.messages,
        o.payload,
        o.runs_msgs_per_s
            .iter()
            .map(|v| v.round())
            .collect::<Vec<_>>()
    )
}
