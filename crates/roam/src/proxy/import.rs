//! Importing one realm topic into the local DDS domain: the async shell around [`ImportPlan`].
//!
//! The task listens to the topic's metadata name. Every stream an exporter announces gets a
//! local DDS writer with the stream's type and QoS; the topic's data names (one per announced
//! type) each get a task that opens every envelope and writes it with the writer of its
//! stream (found by the sender session in the envelope's header). An envelope whose stream
//! is not announced yet waits briefly for its announcement (metadata and data travel on
//! different names, so a new stream's first samples can overtake it).

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use roam_dds::{History, Participant, Qos, TopicInfo, TypeDescriptor, Writer, WriterOptions};
use roam_net::latency::now_us;
use roam_net::runtime::RouterHandle;
use roam_proto::meta::TopicAnnouncement;
use roam_proto::{Name, Opener, PayloadKind};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tracing::{info, warn};

use super::import_plan::{ImportPlan, WriterKey};
use super::meta::{data_descriptor, meta_descriptor};
use super::write::{write_import, IMPORT_BATCH};
use crate::realm_file::Realm;
use crate::stats::TopicStats;

/// USER_DATA on every DDS writer a proxy creates for an import, so that another proxy on the
/// same domain recognises it and never exports it back into a realm (which would loop it).
pub const PROXY_MARK: &[u8] = b"roam-proxy/1";

/// Envelopes held per data name while their stream is not announced: bounded, oldest dropped.
const MAX_PENDING: usize = 1024;
/// How long such an envelope waits for its announcement before it is dropped (and counted).
const PENDING_WAIT: Duration = Duration::from_secs(2);

/// What one import brings in: a realm topic, and its local DDS topic.
pub struct ImportLeg {
    pub dds_topic: String,
    pub remote: String,
    pub realm: Arc<Realm>,
    pub stats: Arc<TopicStats>,
}

/// Which writer each data session's envelopes go to, shared with the data tasks.
type Sessions = Arc<RwLock<HashMap<u64, Arc<Writer>>>>;

struct Importer {
    leg: ImportLeg,
    router: RouterHandle,
    participant: Participant,
    plan: ImportPlan,
    opener: Arc<Mutex<Opener>>,
    writers: HashMap<WriterKey, Arc<Writer>>,
    sessions: Sessions,
    /// Bumped whenever `sessions` changes: wakes data tasks holding unannounced envelopes.
    generation: watch::Sender<u64>,
    data: HashMap<String, (Name, JoinHandle<()>)>,
}

/// Runs the import of one topic until the router closes its metadata subscription.
pub async fn import(router: RouterHandle, participant: Participant, leg: ImportLeg) {
    let meta_name = meta_descriptor(&leg.remote).name(&leg.realm.secret);
    let mut meta_rx = router.subscribe(meta_name, 16).await;
    // One opener for metadata and data: its replay windows outlive a writer's replacement.
    let opener = Arc::new(Mutex::new(Opener::new(
        &leg.realm.secret,
        leg.realm.opener_config(),
    )));
    let mut x = Importer {
        leg,
        router,
        participant,
        plan: ImportPlan::default(),
        opener,
        writers: HashMap::new(),
        sessions: Arc::new(RwLock::new(HashMap::new())),
        generation: watch::channel(0).0,
        data: HashMap::new(),
    };
    let mut plain = Vec::new();
    loop {
        let timeout = x.plan.poll_timeout();
        tokio::select! {
            env = meta_rx.recv() => {
                let Some(env) = env else { break };
                let opened = x
                    .opener
                    .lock()
                    .map_err(|_| "opener poisoned".to_string())
                    .and_then(|mut o| o.open(&env, now_us(), &mut plain).map_err(|e| e.to_string()));
                let announcement = opened.and_then(|_| TopicAnnouncement::decode(&plain).map_err(|e| e.to_string()));
                match announcement {
                    Ok(a) => {
                        if x.plan.handle_announcement(Instant::now(), a) {
                            x.reconcile().await;
                        }
                    }
                    Err(e) => warn!(topic = %x.leg.remote, "dropped a topic announcement: {e}"),
                }
            }
            _ = sleep_until(timeout) => {
                if x.plan.handle_timeout(Instant::now()) {
                    info!(topic = %x.leg.remote, "an exporter fell silent: its streams are gone");
                    x.reconcile().await;
                }
            }
        }
    }
    for (_, (name, task)) in x.data.drain() {
        x.router.unsubscribe(name).await;
        task.abort();
    }
}

async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t.into()).await,
        None => std::future::pending().await,
    }
}

impl Importer {
    /// Brings writers, the session table and the data subscriptions in line with the plan.
    async fn reconcile(&mut self) {
        let wanted = self.plan.writers();
        self.writers.retain(|k, _| wanted.contains(k));
        for key in wanted {
            if self.writers.contains_key(&key) {
                continue;
            }
            match self.new_writer(&key) {
                Ok(w) => {
                    info!(topic = %self.leg.dds_topic, ty = %key.dds_type, reliable = key.qos.reliable, transient_local = key.qos.transient_local, depth = key.qos.depth, from = %key.exporter, "remote topic announced: writing locally");
                    self.writers.insert(key, Arc::new(w));
                }
                Err(e) => warn!(topic = %self.leg.dds_topic, "cannot create a DDS writer: {e}"),
            }
        }
        let table: HashMap<u64, Arc<Writer>> = self
            .plan
            .sessions()
            .into_iter()
            .filter_map(|(session, key)| self.writers.get(&key).map(|w| (session, w.clone())))
            .collect();
        *self.sessions.write().unwrap_or_else(|p| p.into_inner()) = table;
        self.generation.send_modify(|g| *g += 1);

        let types = self.plan.data_types();
        let gone: Vec<String> = self
            .data
            .keys()
            .filter(|t| !types.contains(*t))
            .cloned()
            .collect();
        for ty in gone {
            if let Some((name, _task)) = self.data.remove(&ty) {
                // The task ends when the router closes its channel.
                self.router.unsubscribe(name).await;
            }
        }
        for ty in types {
            if self.data.contains_key(&ty) {
                continue;
            }
            let name = data_descriptor(&self.leg.remote, &ty).name(&self.leg.realm.secret);
            let rx = self.router.subscribe(name, 4096).await;
            let task = tokio::spawn(write_imports(
                rx,
                self.opener.clone(),
                self.sessions.clone(),
                self.generation.subscribe(),
                self.leg.dds_topic.clone(),
                self.leg.stats.clone(),
            ));
            self.data.insert(ty, (name, task));
        }
    }

    fn new_writer(&self, key: &WriterKey) -> Result<Writer, roam_dds::DdsError> {
        let topic = match (&key.xtypes, key.keyed) {
            (Some(x), true) => match TypeDescriptor::from_xtypes(
                &self.participant,
                &key.dds_type,
                &x.type_information,
                &x.type_mapping,
            ) {
                Ok(d) => TopicInfo::described(&self.leg.dds_topic, Arc::new(d)),
                Err(e) => {
                    warn!(topic = %self.leg.dds_topic, "the announced keyed type is unusable ({e}): writing it as a blob, history is not kept per instance");
                    TopicInfo::keyed_blob(&self.leg.dds_topic, &key.dds_type)
                }
            },
            (None, true) => TopicInfo::keyed_blob(&self.leg.dds_topic, &key.dds_type),
            (_, false) => TopicInfo::keyless(&self.leg.dds_topic, &key.dds_type),
        };
        let qos = Qos {
            reliable: key.qos.reliable,
            transient_local: key.qos.transient_local,
            history: match key.qos.depth {
                0 => History::KeepAll,
                n => History::KeepLast(n),
            },
        };
        let options = WriterOptions {
            user_data: PROXY_MARK,
            batching: true,
            non_blocking: true,
            // The publisher's own disposals arrive as such; an unregister stays one.
            explicit_dispose: true,
        };
        Writer::with_options(&self.participant, &topic, &qos, options)
    }
}

/// An opened envelope waiting for its stream's announcement.
struct Held {
    at: Instant,
    session: u64,
    kind: PayloadKind,
    send_time_us: u64,
    plain: Vec<u8>,
}

/// Opens every envelope of one data name and writes it with its stream's writer. What is
/// queued is written as one batch (samples share packets) and flushed before waiting again,
/// so a lone message is never held back. When the local readers push back, this task waits,
/// its queue fills and the router pushes back on the topic. Ends when the router closes the
/// channel (unsubscribed).
async fn write_imports(
    mut data_rx: mpsc::Receiver<Bytes>,
    opener: Arc<Mutex<Opener>>,
    sessions: Sessions,
    mut generation: watch::Receiver<u64>,
    local: String,
    stats: Arc<TopicStats>,
) {
    let mut plain = Vec::new();
    let mut held: VecDeque<Held> = VecDeque::new();
    let mut dirty: HashSet<usize> = HashSet::new();
    let mut to_flush: Vec<Arc<Writer>> = Vec::new();
    loop {
        let deadline = held.front().map(|h| h.at + PENDING_WAIT);
        let first = tokio::select! {
            env = data_rx.recv() => match env { Some(e) => Some(e), None => break },
            r = generation.changed() => { if r.is_err() { break } None }
            _ = sleep_until(deadline) => None,
        };
        // Envelopes whose stream is now known go first, in order; the rest wait, or go.
        if !held.is_empty() {
            let now = Instant::now();
            let mut keep = VecDeque::new();
            while let Some(h) = held.pop_front() {
                let w = lookup(&sessions, h.session);
                match w {
                    Some(w) => {
                        let (buf, ok) = write_one(&w, h.kind, h.plain, &local).await;
                        drop(buf);
                        count_write(&stats, ok, h.send_time_us);
                        mark(&mut dirty, &mut to_flush, &w);
                    }
                    None if now < h.at + PENDING_WAIT => keep.push_back(h),
                    None => {
                        TopicStats::count(&stats.unannounced);
                        warn!(topic = %local, session = h.session, "dropped data of a stream that was never announced");
                    }
                }
            }
            held = keep;
        }
        let mut next = first;
        let mut written = 0;
        while let Some(env) = next.take() {
            let opened = match opener.lock() {
                Ok(mut o) => o
                    .open(&env, now_us(), &mut plain)
                    .map_err(|e| e.to_string()),
                Err(_) => Err("opener poisoned".to_string()),
            };
            match opened {
                Ok(o) => {
                    stats.age_in.record_envelope(&env);
                    let (session, kind) = (o.header.session, o.header.flags.payload_kind());
                    match lookup(&sessions, session) {
                        Some(w) if held.iter().all(|h| h.session != session) => {
                            let (buf, ok) = write_one(&w, kind, plain, &local).await;
                            plain = buf;
                            count_write(&stats, ok, o.header.send_time_us);
                            mark(&mut dirty, &mut to_flush, &w);
                        }
                        // Unknown stream (or earlier envelopes of it still wait): hold it.
                        _ => {
                            if held.len() >= MAX_PENDING {
                                held.pop_front();
                                TopicStats::count(&stats.unannounced);
                            }
                            held.push_back(Held {
                                at: Instant::now(),
                                session,
                                kind,
                                send_time_us: o.header.send_time_us,
                                plain: std::mem::take(&mut plain),
                            });
                        }
                    }
                }
                Err(e) => {
                    TopicStats::count(&stats.refused);
                    warn!(topic = %local, "dropped an envelope: {e}");
                }
            }
            written += 1;
            if written < IMPORT_BATCH {
                next = data_rx.try_recv().ok();
            }
        }
        for w in to_flush.drain(..) {
            if let Err(e) = w.flush() {
                warn!(topic = %local, "DDS flush failed: {e}");
            }
        }
        dirty.clear();
    }
}

fn lookup(sessions: &Sessions, session: u64) -> Option<Arc<Writer>> {
    sessions
        .read()
        .unwrap_or_else(|p| p.into_inner())
        .get(&session)
        .cloned()
}

/// Remembers a writer that has unflushed samples (once per batch).
fn mark(dirty: &mut HashSet<usize>, to_flush: &mut Vec<Arc<Writer>>, w: &Arc<Writer>) {
    if dirty.insert(Arc::as_ptr(w) as usize) {
        to_flush.push(w.clone());
    }
}

fn count_write(stats: &TopicStats, ok: bool, send_time_us: u64) {
    if ok {
        stats.age_out.record(now_us().saturating_sub(send_time_us));
        TopicStats::count(&stats.samples);
    } else {
        TopicStats::count(&stats.failed);
    }
}

/// Writes one opened payload: data, or an instance lifecycle change.
async fn write_one(
    w: &Arc<Writer>,
    kind: PayloadKind,
    plain: Vec<u8>,
    local: &str,
) -> (Vec<u8>, bool) {
    match kind {
        PayloadKind::Data => write_import(w, plain, local).await,
        PayloadKind::Dispose | PayloadKind::Unregister => {
            let r = if kind == PayloadKind::Dispose {
                w.dispose_cdr(&plain)
            } else {
                w.unregister_cdr(&plain)
            };
            if let Err(e) = &r {
                warn!(topic = %local, "DDS instance lifecycle write failed: {e}");
            }
            (plain, r.is_ok())
        }
    }
}
