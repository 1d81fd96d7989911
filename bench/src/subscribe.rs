//! Subscribe latency across a chain of routers (seed 000 reports 2 ms to subscribe a name in
//! a RIB of 10,000): how long after a subscriber asks for a name, published three routers
//! away, the publisher learns someone wants it, and how long until the first message
//! arrives when the publisher starts sending on that news (as a proxy's export does: it
//! opens its DDS reader when demand appears).
//!
//! One network for all rounds: a publisher client on the first router declares `rounds`
//! names up front; each round the subscriber client on the last router subscribes to a
//! name nobody wanted before, so every round starts from "no route" without waiting for
//! a withdrawal.

use roam_net::latency::now_us;
use std::time::{Duration, Instant};

use bytes::Bytes;
use roam_net::client::ClientEvent;
use roam_proto::{Name, RealmSecret, Sealer, TopicDescriptor};
use serde::Serialize;

use crate::pki::TempPki;
use crate::throughput::{build, shutdown};
use crate::timer::quantile;

#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub routers: usize,
    pub rounds: usize,
    /// From `subscribe` at the last router to the publisher's demand signal (the
    /// subscription crossed every router), microseconds.
    pub demand_p50_us: f64,
    pub demand_p90_us: f64,
    pub demand_max_us: f64,
    /// From `subscribe` to the first message delivered, the publisher sending as soon as it
    /// saw the demand, microseconds.
    pub first_message_p50_us: f64,
    pub first_message_p90_us: f64,
    pub first_message_max_us: f64,
}

/// Waits for `pick` to accept an event of `events`, for at most `limit`.
async fn wait_for(
    events: &mut tokio::sync::mpsc::Receiver<ClientEvent>,
    limit: Duration,
    mut pick: impl FnMut(&ClientEvent) -> bool,
) -> Result<Instant, String> {
    tokio::time::timeout(limit, async {
        while let Some(ev) = events.recv().await {
            if pick(&ev) {
                return Ok(Instant::now());
            }
        }
        Err("the client session ended".to_string())
    })
    .await
    .map_err(|_| format!("nothing within {limit:?}"))?
}

pub async fn run(routers: usize, rounds: usize) -> Result<Outcome, String> {
    let pki = TempPki::new("sub")?;
    let mut net = build(&pki, routers).await?;
    let realm = RealmSecret::from_bytes([7; 32]);
    let names: Vec<Name> = (0..rounds)
        .map(|i| {
            TopicDescriptor::topic(&format!("/bench/sub{i}"), "std_msgs/msg/String").name(&realm)
        })
        .collect();
    let mut pub_events = net
        .publisher
        .take_events()
        .ok_or("the publisher's events were taken")?;
    let mut sub_events = net
        .subscriber
        .take_events()
        .ok_or("the subscriber's events were taken")?;
    let mut publications = Vec::new();
    let limit = Duration::from_secs(10);
    let result = async {
        wait_for(&mut sub_events, limit, |e| {
            matches!(e, ClientEvent::Connected { .. })
        })
        .await?;
        wait_for(&mut pub_events, limit, |e| {
            matches!(e, ClientEvent::Connected { .. })
        })
        .await?;
        for &n in &names {
            publications.push(net.publisher.publish(n).await);
        }
        // Let the adverts flood every router before the first round.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (mut demand, mut first) = (Vec::new(), Vec::new());
        for (&n, publication) in names.iter().zip(publications.iter_mut()) {
            let mut sealer = Sealer::new(&realm, n, false, None).map_err(|e| e.to_string())?;
            let t0 = Instant::now();
            let mut subscription = net.subscriber.subscribe(n, 16).await;
            tokio::time::timeout(limit, publication.demand.wait_for(|w| *w))
                .await
                .map_err(|_| format!("demand: none within {limit:?}"))?
                .map_err(|_| "demand: the session ended".to_string())?;
            let seen = Instant::now();
            let mut buf = Vec::new();
            sealer
                .seal(b"first", now_us(), &mut buf)
                .map_err(|e| e.to_string())?;
            net.publisher
                .send(Bytes::from(buf))
                .await
                .map_err(|e| e.to_string())?;
            tokio::time::timeout(limit, subscription.rx.recv())
                .await
                .map_err(|_| format!("first message: none within {limit:?}"))?
                .ok_or("first message: the session ended")?;
            let got = Instant::now();
            demand.push(seen.duration_since(t0).as_secs_f64() * 1e6);
            first.push(got.duration_since(t0).as_secs_f64() * 1e6);
        }
        Ok::<_, String>(Outcome {
            routers,
            rounds,
            demand_p50_us: quantile(&mut demand, 0.5),
            demand_p90_us: quantile(&mut demand, 0.9),
            demand_max_us: quantile(&mut demand, 1.0),
            first_message_p50_us: quantile(&mut first, 0.5),
            first_message_p90_us: quantile(&mut first, 0.9),
            first_message_max_us: quantile(&mut first, 1.0),
        })
    }
    .await;
    shutdown(net).await;
    result
}

pub fn describe(o: &Outcome) -> String {
    format!(
        "subscribe across {} routers ({} rounds): demand at the publisher p50 {:.0} us, first message p50 {:.0} us (p90 {:.0} us)",
        o.routers, o.rounds, o.demand_p50_us, o.first_message_p50_us, o.first_message_p90_us
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn subscriptions_cross_three_routers() {
        let o = run(3, 3).await.expect("harness runs");
        eprintln!("{}", describe(&o));
        assert_eq!(o.rounds, 3);
        assert!(
            o.demand_p50_us > 0.0 && o.first_message_p50_us >= o.demand_p50_us,
            "{o:?}"
        );
    }
}
