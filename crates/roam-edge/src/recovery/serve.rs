//! The publisher's side of recovery, as a task: it reads the requests on its data name's
//! repair name, opens them like any envelope (a forged or replayed request is dropped) and
//! sends what its window holds again on the data name.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use roam_net::latency::now_us;
use roam_proto::epoch::Keys;
use roam_proto::seal::OpenerConfig;
use roam_proto::{Name, Opener, RealmSecret};
use tracing::debug;

use super::request::Request;
use super::window::Window;
use crate::port::Port;
use crate::stats::TopicStats;

/// Requests queued before more are dropped (subscribers ask again).
const REQUEST_DEPTH: usize = 256;
const REQUEST_BYTES: usize = 1 << 20;

/// What a serving task needs of its publisher.
pub(crate) struct Serve {
    pub port: Port,
    pub keys: Arc<Keys>,
    pub secret: RealmSecret,
    pub opener: OpenerConfig,
    pub data: Name,
    pub session: u64,
    pub window: Arc<Mutex<Window>>,
    pub stats: Arc<TopicStats>,
}

/// Releases the repair name's subscription when the task ends or is aborted.
struct Subscribed {
    port: Port,
    name: Name,
    id: u64,
}

impl Drop for Subscribed {
    fn drop(&mut self) {
        self.port.release_subscription(self.name, self.id);
    }
}

impl Serve {
    /// Answers requests until the port closes; the publisher aborts it when it goes.
    pub(crate) async fn run(self) {
        let name = super::repair_name(&self.secret, &self.data);
        let mut sub = self
            .port
            .subscribe(name, REQUEST_DEPTH, REQUEST_BYTES)
            .await;
        let _subscribed = Subscribed {
            port: self.port.clone(),
            name,
            id: sub.id,
        };
        let mut opener = Opener::with_keys(&self.keys, self.opener.clone());
        let mut plain = Vec::new();
        while let Some(env) = sub.rx.recv().await {
            let request = opener
                .open(&env, now_us(), &mut plain)
                .map_err(|e| e.to_string())
                .and_then(|_| Request::parse(&plain).map_err(|e| e.to_string()));
            let request = match request {
                Ok(r) if r.session == self.session => r,
                Ok(_) => continue,
                Err(e) => {
                    debug!("dropped a repair request: {e}");
                    continue;
                }
            };
            let (answer, lost) = {
                let mut w = self.window.lock().unwrap_or_else(|p| p.into_inner());
                let before = w.report().lost;
                let answer = w.answer(&request, Instant::now());
                (answer, w.report().lost - before)
            };
            TopicStats::add(&self.stats.lost, lost);
            for env in answer.resend {
                // Failures are counted like any send's.
                if self.port.send(self.data, env).await.is_err() {
                    TopicStats::count(&self.stats.failed);
                } else {
                    TopicStats::count(&self.stats.recovered);
                }
            }
        }
    }
}
