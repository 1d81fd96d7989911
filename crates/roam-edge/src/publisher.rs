//! [`Publisher`]: one stream of a topic into its realm. It derives the data name, seals every
//! message under its own session, takes part in the topic's announcement, and reports
//! whether anyone in the realm wants the data. Dropping it withdraws the stream.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use roam_net::latency::now_us;
use roam_proto::meta::{StreamAnnouncement, StreamQos, TypeDefinition, XTypes};
use roam_proto::{Name, PayloadKind, Sealer};
use tokio::sync::watch;

use crate::announce::{Announcer, Change};
use crate::backlog::{Backlog, Offer, Pending, WhenFull, SEAL_ELSEWHERE};
use crate::edge::{Edge, EdgeError, TopicRef};
use crate::port::Port;
use crate::recovery::{serve::Serve, LossReport, Window, WindowLimits};
use crate::stats::{Direction, TopicStats};

/// What a publisher sends: its type and QoS, as the topic's announcement will list them.
#[derive(Debug, Clone)]
pub struct StreamSpec {
    /// The DDS type name (e.g. `std_msgs::msg::dds_::String_`); the data travels on the name
    /// of its ROS form, so a ROS type name (`std_msgs/msg/String`) names the same data.
    pub dds_type: String,
    pub keyed: bool,
    pub qos: StreamQos,
    /// A stable id across restarts (e.g. derived from the publisher it mirrors), so importers
    /// keep what they made for the stream; `None`: the session.
    pub id: Option<u64>,
    /// A keyed type's XTypes description.
    pub xtypes: Option<XTypes>,
    /// The ROS 2 type hash (`RIHS01_...`) of the publishers it carries, if they announce one.
    pub type_hash: Option<String>,
    /// The type's ROS 2 interface definition (ros2msg text with dependencies), announced so
    /// members without the definition can read the data.
    pub definition: Option<String>,
    /// Payloads in clear text (still authenticated): for public data.
    pub clear_text: bool,
    /// What a recoverable stream (reliable, keeping every message: see [`crate::recovery`])
    /// keeps for subscribers that missed messages to ask for again.
    pub window: WindowLimits,
}

impl StreamSpec {
    /// A stream of `dds_type` with the ROS 2 default QoS (reliable, volatile, depth 10).
    pub fn new(dds_type: impl Into<String>) -> Self {
        Self {
            dds_type: dds_type.into(),
            keyed: false,
            qos: StreamQos {
                reliable: true,
                transient_local: false,
                depth: 10,
            },
            id: None,
            xtypes: None,
            type_hash: None,
            definition: None,
            clear_text: false,
            window: WindowLimits::default(),
        }
    }
}

/// One stream of a topic. Cheap to clone; the stream is withdrawn when the last clone goes.
#[derive(Clone)]
pub struct Publisher {
    inner: Arc<Inner>,
}

struct Inner {
    port: Port,
    dds_type: String,
    qos: StreamQos,
    name: Name,
    port_id: u64,
    session: u64,
    demand: watch::Receiver<bool>,
    sealer: Mutex<Sealer>,
    /// None for a raw name (nothing is announced for it).
    announcer: Option<Arc<Announcer>>,
    stats: Arc<TopicStats>,
    /// What [`Publisher::publish_blocking`] sealed while the topic was pushed back on.
    backlog: Backlog,
    /// Where the backlog's drainer runs.
    runtime: tokio::runtime::Handle,
    /// A recoverable stream's retransmission window, and the task that answers requests.
    window: Option<Arc<Mutex<Window>>>,
    serving: Option<tokio::task::AbortHandle>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        if let Some(task) = &self.serving {
            task.abort();
        }
        self.port.release_publication(self.name, self.port_id);
        if let Some(a) = &self.announcer {
            a.change(Change::RemoveStream {
                session: self.session,
            });
        }
    }
}

impl Edge {
    /// Starts a stream of `topic` and announces it.
    pub async fn publisher(
        &self,
        topic: &TopicRef,
        spec: StreamSpec,
    ) -> Result<Publisher, EdgeError> {
        let name = topic.data_name(&spec.dds_type);
        let qos = spec.qos;
        // A full backlog may drop what the topic's own DDS history would (see crate::backlog).
        let when_full = if !spec.keyed && (qos.depth > 0 || !qos.reliable) {
            WhenFull::DropOldest {
                depth: qos.depth as usize,
            }
        } else {
            WhenFull::Wait
        };
        // A reliable stream whose backlog replaces old samples tells routers so: they hold it
        // back as soon as a lane fills, and the sample that waits is the newest one, here.
        let keep_latest = qos.reliable && matches!(when_full, WhenFull::DropOldest { .. });
        let sealer = Sealer::with_keys(
            &topic.realm.keys,
            name,
            !qos.reliable,
            self.inner.signer.clone(),
        )?
        .clear_text(spec.clear_text)
        .keep_latest(keep_latest);
        let session = sealer.session();
        let dds_type = spec.dds_type.clone();
        let announcer = topic.raw.is_none().then(|| self.announcer(topic));
        if let Some(announcer) = &announcer {
            if let Some(text) = &spec.definition {
                announcer.change(Change::Definition(TypeDefinition {
                    dds_type: spec.dds_type.clone(),
                    text: text.clone(),
                }));
            }
            announcer.change(Change::AddStream(Box::new(StreamAnnouncement {
                id: spec.id.unwrap_or(session),
                session,
                dds_type: spec.dds_type,
                keyed: spec.keyed,
                qos: spec.qos,
                xtypes: spec.xtypes,
                type_hash: spec.type_hash,
            })));
        }
        let port = self.inner.port.clone();
        let stats = self.inner.stats.topic(Direction::Export, &topic.topic);
        // A stream that keeps every message answers for what its subscribers missed.
        let window =
            (qos.reliable && !keep_latest).then(|| Arc::new(Mutex::new(Window::new(spec.window))));
        let serving = window.as_ref().map(|window| {
            let serve = Serve {
                port: port.clone(),
                keys: topic.realm.keys.clone(),
                secret: topic.realm.secret.clone(),
                opener: topic.realm.opener_config(),
                data: name,
                session,
                window: window.clone(),
                stats: stats.clone(),
            };
            tokio::spawn(serve.run()).abort_handle()
        });
        let publication = port.publish(name).await;
        Ok(Publisher {
            inner: Arc::new(Inner {
                port,
                dds_type,
                qos,
                name,
                port_id: publication.id,
                session,
                demand: publication.demand,
                sealer: Mutex::new(sealer),
                announcer,
                stats,
                backlog: Backlog::new(when_full),
                runtime: tokio::runtime::Handle::current(),
                window,
                serving,
            }),
        })
    }
}

impl Publisher {
    /// The data name this stream travels on.
    pub fn name(&self) -> Name {
        self.inner.name
    }

    /// The DDS type name this stream announces.
    pub fn dds_type(&self) -> &str {
        &self.inner.dds_type
    }

    /// The QoS this stream announces.
    pub fn qos(&self) -> StreamQos {
        self.inner.qos
    }

    /// The sender session of this stream's envelopes.
    pub fn session(&self) -> u64 {
        self.inner.session
    }

    /// Whether anyone in the realm subscribes to the data, and its changes.
    pub fn demand(&self) -> watch::Receiver<bool> {
        self.inner.demand.clone()
    }

    pub fn stats(&self) -> &Arc<TopicStats> {
        &self.inner.stats
    }

    /// Seals one payload into this stream's next envelope (counted as sent or failed).
    pub fn seal(&self, kind: PayloadKind, payload: &[u8]) -> Result<Bytes, EdgeError> {
        self.seal_at(kind, payload, None)
    }

    /// Like [`Self::seal`], with the source's own time of the message (a DDS sample's source
    /// timestamp, nanoseconds since the Unix epoch) sealed with it, for importers to write
    /// the sample with ([`crate::Received::source_time_ns`]).
    pub fn seal_at(
        &self,
        kind: PayloadKind,
        payload: &[u8],
        source_time_ns: Option<u64>,
    ) -> Result<Bytes, EdgeError> {
        let mut out = Vec::new();
        let (seq, sealed) = {
            let mut s = self.inner.sealer.lock().unwrap_or_else(|p| p.into_inner());
            let seq = s.next_seq();
            (
                seq,
                s.seal_at(kind, payload, now_us(), source_time_ns, &mut out),
            )
        };
        match sealed {
            Ok(()) => {
                self.inner.stats.carried(payload.len());
                let env = Bytes::from(out);
                if let Some(w) = &self.inner.window {
                    let mut w = w.lock().unwrap_or_else(|p| p.into_inner());
                    w.push(seq, env.clone(), Instant::now());
                }
                Ok(env)
            }
            Err(e) => {
                TopicStats::count(&self.inner.stats.failed);
                Err(e.into())
            }
        }
    }

    /// Seals and sends one message; waits while the topic is pushed back on (reliable).
    pub async fn publish(&self, payload: &[u8]) -> Result<(), EdgeError> {
        self.publish_kind(PayloadKind::Data, payload).await
    }

    /// Like [`Self::publish`], for data or an instance lifecycle change.
    pub async fn publish_kind(&self, kind: PayloadKind, payload: &[u8]) -> Result<(), EdgeError> {
        let env = self.seal(kind, payload)?;
        self.send(env).await
    }

    /// Sends an envelope sealed by [`Self::seal`].
    pub async fn send(&self, envelope: Bytes) -> Result<(), EdgeError> {
        self.inner
            .port
            .send(self.inner.name, envelope)
            .await
            .map_err(|e| {
                TopicStats::count(&self.inner.stats.failed);
                e.into()
            })
    }

    /// Like [`Self::publish_kind`], for threads outside the async runtime (DDS listener
    /// callbacks). While the topic is pushed back on, payloads wait in this publisher's
    /// backlog ([`crate::backlog`]) and are sealed and sent in order by a task of their own,
    /// so the calling thread, which may serve every other topic too, goes on; it blocks only
    /// while the backlog is full. Large payloads ([`SEAL_ELSEWHERE`] and up) always go that
    /// way: their sealing is not done on the caller's thread. Errors of payloads sent later
    /// are counted in the topic's stats (`failed`), not returned. The pending payload's
    /// source time, when it has one, is sealed with it ([`Self::seal_at`]).
    pub fn publish_blocking(&self, pending: Pending) -> Result<(), EdgeError> {
        let paused = self.inner.port.would_wait(&self.inner.name);
        let overwritten = &self.inner.stats.overwritten;
        match self.inner.backlog.offer(pending, paused, overwritten) {
            Offer::SendNow(p) => {
                let env = self.seal_at(p.kind, &p.payload, p.source_time_ns)?;
                self.inner
                    .port
                    .send_blocking(self.inner.name, env)
                    .map_err(|e| {
                        TopicStats::count(&self.inner.stats.failed);
                        e.into()
                    })
            }
            Offer::StartDrainer => {
                let publisher = self.clone();
                self.inner.runtime.spawn(async move {
                    let inner = &publisher.inner;
                    loop {
                        // A keep-last sample is taken only once the topic can take it: until
                        // then a newer one may still replace it in the backlog. A keep-all
                        // one is taken (and sealed) at once, ready when the topic resumes.
                        if inner.qos.reliable && inner.backlog.replaces() {
                            inner.port.wait_unpaused(&inner.name).await;
                        }
                        let Some(pending) = publisher.inner.backlog.next() else {
                            break;
                        };
                        // Failures are counted by `seal` and `send`.
                        if let Some(env) = publisher.seal_off_runtime(pending).await {
                            let _ = publisher.send(env).await;
                        }
                    }
                });
                Ok(())
            }
            Offer::Queued => Ok(()),
        }
    }

    /// Seals for the drainer: a large payload on a blocking thread, so the runtime's workers
    /// (which carry every other topic's sends) are not held for milliseconds.
    async fn seal_off_runtime(&self, p: Pending) -> Option<Bytes> {
        if p.payload.len() < SEAL_ELSEWHERE {
            return self.seal_at(p.kind, &p.payload, p.source_time_ns).ok();
        }
        let publisher = self.clone();
        tokio::task::spawn_blocking(move || {
            publisher.seal_at(p.kind, &p.payload, p.source_time_ns).ok()
        })
        .await
        .ok()
        .flatten()
    }

    /// What subscribers asked for again and what this stream no longer held when they did
    /// (`None`: not a recoverable stream).
    pub fn losses(&self) -> Option<LossReport> {
        let w = self.inner.window.as_ref()?;
        Some(w.lock().unwrap_or_else(|p| p.into_inner()).report())
    }

    /// Payloads and bytes waiting in this publisher's backlog.
    pub fn backlog(&self) -> (usize, usize) {
        self.inner.backlog.depth()
    }
}
