//! Where a process's figures come from, and the one call that gathers them.

use std::sync::Arc;

use roam_net::runtime::RouterHandle;

use super::process::Identity;
use super::{ProcessKind, Snapshot, Topic};

/// Something that counts topics: a proxy's per-topic statistics today, the edge layer's
/// endpoints tomorrow. Called on a status task, never on the data path; it should copy its
/// counters and return (no waiting).
pub trait TopicSource: Send + Sync {
    fn topics(&self) -> Vec<Topic>;
}

/// The sources of one process's metrics. Cheap to clone; [`Metrics::snapshot`] gathers
/// them into a [`Snapshot`] whenever asked (a status interval, a scrape, a test).
#[derive(Clone)]
pub struct Metrics {
    identity: Identity,
    router: Option<RouterHandle>,
    topics: Option<Arc<dyn TopicSource>>,
}

impl Metrics {
    /// A process called `id` (its identity name) of this `kind`, starting now.
    pub fn new(id: &str, kind: ProcessKind) -> Self {
        Metrics {
            identity: Identity::new(id, kind),
            router: None,
            topics: None,
        }
    }

    /// The process's router: its counters, links and admission figures.
    pub fn with_router(mut self, router: RouterHandle) -> Self {
        self.router = Some(router);
        self
    }

    /// The process's topics.
    pub fn with_topics(mut self, topics: Arc<dyn TopicSource>) -> Self {
        self.topics = Some(topics);
        self
    }

    /// What the process measured so far. The router answers between two batches of frames
    /// (it copies counters, nothing more); a router that has stopped leaves its part out.
    pub async fn snapshot(&self) -> Snapshot {
        let report = match &self.router {
            Some(r) => r.report().await,
            None => None,
        };
        let mut s = Snapshot::new(self.identity.sample());
        if let Some(r) = &report {
            s = s.with_router(r);
        }
        if let Some(t) = &self.topics {
            s = s.with_topics(t.topics());
        }
        s
    }
}
