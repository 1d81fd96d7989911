//! The proxy process: a DDS participant on the local domain, an in-process edge router, and
//! one task per exported or imported topic between them.
//!
//! Export: a local publication on `rt/<topic>` that the configuration exports is announced in
//! its realm (metadata and data names). Only while someone in the realm subscribes does the
//! proxy hold a DDS reader on it, sealing every sample and handing it to the edge router.
//! Import: the proxy subscribes to the topic's metadata name; once an exporter announces the
//! type and QoS, it creates a matching local DDS writer and subscribes to the data.
//! Endpoints of the proxy's own participant are never exported, so what it imports never
//! goes back out.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use roam_dds::{
    Discovery, DiscoveryEvent, Endpoint, Participant, Reader, TopicInfo, Writer, WriterOptions,
};
use roam_net::latency::now_us;
use roam_net::link::LinkConfig;
use roam_net::runtime::{self, PeerAddr, RouterConfig, RouterHandle, RoutingTimers};
use roam_proto::{Name, Opener, Sealer};
use tokio::sync::mpsc;
use tracing::{info, warn};

use super::config::{ProxyConfig, What};
use super::meta::{data_descriptor, meta_descriptor, TopicMeta};
use super::ros_names::{ros_endpoint, service_to_dds, topic_to_dds, RosEndpoint};
use crate::realm_file::{self, Realm};
use crate::stats::{Direction, ProxyStats, TopicStats};
use roam_dds::ros_discovery_info;

/// USER_DATA on every DDS writer a proxy creates for an import, so that another proxy on the
/// same domain recognises it and never exports it back into a realm (which would loop it).
const PROXY_MARK: &[u8] = b"roam-proxy/1";

/// How often an exporter re-announces a topic's metadata while anyone listens for it.
const META_PERIOD: Duration = Duration::from_secs(2);

/// Runs a proxy until `stop` resolves.
pub async fn run(
    cfg: ProxyConfig,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), String> {
    let identity = roam_net::pki::load_identity(&cfg.pki, &cfg.id).map_err(|e| e.to_string())?;
    if identity.role != roam_proto::frame::Role::Router {
        return Err(format!(
            "the proxy runs an edge router: identity {} needs a router certificate (`roam pki issue {} --role router`)",
            cfg.id, cfg.id
        ));
    }
    let mut realms = BTreeMap::new();
    for (name, path) in &cfg.realms {
        realms.insert(name.clone(), Arc::new(realm_file::load(path)?));
    }
    let connect = cfg
        .upstream
        .iter()
        .map(|s| s.parse::<PeerAddr>())
        .collect::<Result<Vec<_>, _>>()?;
    let listen = cfg.listen.as_deref().map(runtime::resolve).transpose()?;
    let (router, router_task) = runtime::start(RouterConfig {
        identity: Arc::new(identity),
        listen,
        listen_tcp: None,
        connect,
        link: cfg.link.apply(LinkConfig::default())?,
        timers: RoutingTimers::default(),
        max_backoff: Duration::from_millis(cfg.link.max_backoff_ms.unwrap_or(2000)),
        stall_timeout: cfg.link.stall_timeout(),
    })
    .await
    .map_err(|e| e.to_string())?;
    if let Some(a) = router.quic_addr {
        println!("listening quic {a}");
    }

    let xml = super::dds_config::xml(&cfg.dds);
    let participant =
        Participant::new(cfg.dds.domain, xml.as_deref()).map_err(|e| format!("DDS: {e}"))?;
    info!(domain = cfg.dds.domain, "DDS participant up");
    if !cfg.encrypt_payloads {
        warn!("encrypt_payloads is false: exported payloads travel in clear text (authenticated, not confidential)");
    }

    let stats = Arc::new(ProxyStats::default());
    let side = Side {
        router: router.clone(),
        participant: participant.clone(),
    };
    let status = (cfg.status_interval_s > 0).then(|| {
        let (router, stats) = (router.clone(), stats.clone());
        let every = Duration::from_secs(cfg.status_interval_s);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            loop {
                tick.tick().await;
                log_status(&router, &stats).await;
            }
        })
    });

    let (mut service_exports, mut service_imports) = service_legs(&cfg);
    // Raw DDS topics travel like ROS ones, under their own DDS names.
    let raw = |m: &super::config::Mapping| Leg {
        dds_topic: m.local.clone(),
        remote: format!("dds:{}", m.remote),
        realm: m.realm.clone(),
    };
    service_exports.extend(
        cfg.exports
            .iter()
            .filter(|m| m.what == What::DdsTopic)
            .map(raw),
    );
    service_imports.extend(
        cfg.imports
            .iter()
            .filter(|m| m.what == What::DdsTopic)
            .map(raw),
    );
    let topic_imports = cfg
        .imports
        .iter()
        .filter(|m| m.what == What::Topic)
        .map(|m| Leg {
            dds_topic: topic_to_dds(&m.local),
            remote: m.remote.clone(),
            realm: m.realm.clone(),
        });
    for leg in topic_imports.chain(service_imports) {
        info!(dds_topic = %leg.dds_topic, from = %leg.remote, realm = %leg.realm, "importing");
        let realm = realms[&leg.realm].clone();
        let topic_stats = stats.topic(Direction::Import, &leg.dds_topic);
        tokio::spawn(import(
            side.clone(),
            realm,
            leg.remote,
            leg.dds_topic,
            topic_stats,
        ));
    }

    // Discovery events are few (one per endpoint in the domain and its changes), so an
    // unbounded channel is fine, and sending never blocks a CycloneDDS thread.
    let (ev_tx, mut ev_rx) = mpsc::unbounded_channel::<DiscoveryEvent>();
    let _discovery = Discovery::new(&participant, move |ev| {
        let _ = ev_tx.send(ev);
    })
    .map_err(|e| format!("DDS discovery: {e}"))?;

    let mut node = NodeAnnouncer::new(&participant, &cfg)?;
    let mut exported: HashSet<String> = HashSet::new();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            ev = ev_rx.recv() => {
                let Some(ev) = ev else { continue };
                tracing::debug!(?ev, "DDS discovery");
                node.observe(&participant, &ev);
                let DiscoveryEvent::Publication(ep) = ev else { continue };
                if let Some((local, realm, remote)) = exportable(&cfg, &service_exports, &participant, &ep) {
                    if exported.insert(local.clone()) {
                        let meta = TopicMeta { dds_type: ep.type_name.clone(), keyless: ep.keyless(), qos: ep.qos };
                        info!(topic = %local, as_ = %remote, realm = %realm, ty = %meta.dds_type, "exporting");
                        let topic_stats = stats.topic(Direction::Export, &ep.topic_name);
                        tokio::spawn(export(side.clone(), realms[&realm].clone(), ep.topic_name.clone(), remote, meta, cfg.encrypt_payloads, topic_stats));
                    }
                }
            }
        }
    }
    if let Some(s) = status {
        s.abort();
    }
    log_status(&router, &stats).await;
    router.shutdown().await;
    let _ = router_task.await;
    Ok(())
}

/// What every export and import task reaches: the edge router and the DDS participant.
#[derive(Clone)]
struct Side {
    router: RouterHandle,
    participant: Participant,
}

async fn log_status(router: &RouterHandle, stats: &ProxyStats) {
    if let Some(r) = router.report().await {
        crate::stats::log_router(&r);
    }
    stats.log();
}

/// Whether a discovered publication is one this proxy exports: (local topic, realm, realm topic).
fn exportable(
    cfg: &ProxyConfig,
    service_exports: &[Leg],
    me: &Participant,
    ep: &Endpoint,
) -> Option<(String, String, String)> {
    // Our own endpoints, and any roam proxy's import writers, are never exported.
    if !ep.alive || me.owns(ep) || ep.user_data == PROXY_MARK {
        return None;
    }
    if let Some(leg) = service_exports
        .iter()
        .find(|l| l.dds_topic == ep.topic_name)
    {
        return Some((leg.dds_topic.clone(), leg.realm.clone(), leg.remote.clone()));
    }
    let Some(RosEndpoint::Topic(local)) = ros_endpoint(&ep.topic_name) else {
        return None;
    };
    let (realm, remote) = cfg.export_of(&local)?;
    Some((local, realm, remote))
}

/// Announces one exported topic and forwards its samples while anyone in the realm wants them.
async fn export(
    side: Side,
    realm: Arc<Realm>,
    dds_topic: String,
    remote: String,
    meta: TopicMeta,
    encrypt: bool,
    stats: Arc<TopicStats>,
) {
    let Side {
        router,
        participant,
    } = side;
    let data_name = data_descriptor(&remote, &meta.dds_type).name(&realm.secret);
    let meta_name = meta_descriptor(&remote).name(&realm.secret);
    let mut meta_demand = router.publish(meta_name).await;
    let mut data_demand = router.publish(data_name).await;
    let Ok(mut meta_sealer) = Sealer::new(&realm.secret, meta_name, false, None) else {
        return;
    };
    let Ok(sealer) = Sealer::new(&realm.secret, data_name, !meta.qos.reliable, None) else {
        return;
    };
    let sealer = sealer.clear_text(!encrypt);
    let sealer = Arc::new(Mutex::new(sealer));
    let topic = TopicInfo {
        name: dds_topic.clone(),
        type_name: meta.dds_type.clone(),
        keyless: meta.keyless,
    };
    let mut reader: Option<Reader> = None;
    let mut tick = tokio::time::interval(META_PERIOD);
    let mut buf = Vec::new();
    loop {
        tokio::select! {
            r = meta_demand.changed() => {
                if r.is_err() { return; }
                if *meta_demand.borrow() {
                    send_meta(&router, &mut meta_sealer, meta_name, &meta, &mut buf).await;
                }
            }
            _ = tick.tick() => {
                if *meta_demand.borrow() {
                    send_meta(&router, &mut meta_sealer, meta_name, &meta, &mut buf).await;
                }
            }
            r = data_demand.changed() => {
                if r.is_err() { return; }
                let wanted = *data_demand.borrow();
                if wanted && reader.is_none() {
                    let (router, sealer, stats) = (router.clone(), sealer.clone(), stats.clone());
                    let on_sample = move |s: roam_dds::Sample| {
                        let mut out = Vec::new();
                        let now = now_us();
                        let sealed = sealer.lock().map(|mut sl| sl.seal(&s.cdr, now, &mut out));
                        if matches!(sealed, Ok(Ok(()))) {
                            // How long DDS took from the publisher's write to this hop.
                            if s.source_timestamp_ns > 0 {
                                stats.age_in.record(now.saturating_sub(s.source_timestamp_ns as u64 / 1000));
                            }
                            TopicStats::count(&stats.samples);
                            router.send_blocking(data_name, Bytes::from(out));
                        } else {
                            TopicStats::count(&stats.failed);
                        }
                    };
                    // The constructor may deliver historical samples (transient local) on this
                    // thread, and the callback blocks: build it off the async runtime.
                    let (p, t, q) = (participant.clone(), topic.clone(), meta.qos);
                    let made = tokio::task::spawn_blocking(move || Reader::new(&p, &t, &q, on_sample)).await;
                    match made.map_err(|e| roam_dds::DdsError::InvalidArgument(e.to_string())).and_then(|r| r) {
                        Ok(r) => {
                            info!(topic = %dds_topic, "a remote subscriber appeared: reading");
                            reader = Some(r);
                        }
                        Err(e) => warn!(topic = %dds_topic, "cannot create a DDS reader: {e}"),
                    }
                } else if !wanted && reader.is_some() {
                    info!(topic = %dds_topic, "no remote subscriber left: reader closed");
                    reader = None;
                }
            }
        }
    }
}

async fn send_meta(
    router: &RouterHandle,
    sealer: &mut Sealer,
    name: Name,
    meta: &TopicMeta,
    buf: &mut Vec<u8>,
) {
    if sealer.seal(&meta.encode(), now_us(), buf).is_ok() {
        router.send(name, Bytes::from(std::mem::take(buf))).await;
    }
}

/// Makes a realm topic appear locally once its exporter announced its type and QoS.
async fn import(
    side: Side,
    realm: Arc<Realm>,
    remote: String,
    local: String,
    stats: Arc<TopicStats>,
) {
    let Side {
        router,
        participant,
    } = side;
    // `local` is the DDS topic name the writer is created on.
    let meta_name = meta_descriptor(&remote).name(&realm.secret);
    let mut meta_rx = router.subscribe(meta_name, 16).await;
    // One opener for metadata and data: its replay windows outlive a writer's replacement.
    let opener = Arc::new(Mutex::new(Opener::new(
        &realm.secret,
        realm.opener_config(),
    )));
    let mut current: Option<(TopicMeta, Name)> = None;
    let mut plain = Vec::new();
    while let Some(env) = meta_rx.recv().await {
        let opened = opener
            .lock()
            .map_err(|_| "opener poisoned".to_string())
            .and_then(|mut o| {
                o.open(&env, now_us(), &mut plain)
                    .map_err(|e| e.to_string())
            });
        let meta = match opened.and_then(|_| TopicMeta::decode(&plain)) {
            Ok(m) => m,
            Err(e) => {
                warn!(topic = %remote, "dropped topic metadata: {e}");
                continue;
            }
        };
        if current.as_ref().is_some_and(|(m, _)| *m == meta) {
            continue;
        }
        let topic = TopicInfo {
            name: local.clone(),
            type_name: meta.dds_type.clone(),
            keyless: meta.keyless,
        };
        let options = WriterOptions {
            user_data: PROXY_MARK,
            batching: true,
            non_blocking: true,
        };
        let writer = match Writer::with_options(&participant, &topic, &meta.qos, options) {
            Ok(w) => w,
            Err(e) => {
                warn!(topic = %local, "cannot create a DDS writer: {e}");
                continue;
            }
        };
        let data_name = data_descriptor(&remote, &meta.dds_type).name(&realm.secret);
        if let Some((_, old)) = &current {
            if *old != data_name {
                router.unsubscribe(*old).await;
            }
        }
        info!(topic = %local, ty = %meta.dds_type, reliable = meta.qos.reliable, transient_local = meta.qos.transient_local, "remote topic announced: writing locally");
        // Subscribing again replaces the router's channel: a previous writer task drains
        // what it holds and ends.
        let data_rx = router.subscribe(data_name, 4096).await;
        tokio::spawn(write_imports(
            data_rx,
            opener.clone(),
            Arc::new(writer),
            local.clone(),
            stats.clone(),
        ));
        current = Some((meta, data_name));
    }
}

/// Most samples an import writes before it flushes them to the local readers: bounds how
/// long the first of a burst waits in the writer's outgoing packet.
const IMPORT_BATCH: usize = 64;

/// Samples up to this size are written on the async worker that received them (queued and
/// sent in microseconds); a larger one takes milliseconds to copy and send, and goes to a
/// blocking thread so the router's tasks keep running meanwhile.
const INLINE_WRITE_MAX: usize = 256 << 10;

/// Opens every envelope of an imported topic and writes it to the local DDS domain. What is
/// queued is written as one batch (samples share packets) and flushed before waiting again,
/// so a lone message is never held back. When the local readers push back (a reliable write
/// the readers are not ready for), this task waits for them, this import's queue fills and
/// the router pushes back on the topic. Ends when the router closes the channel
/// (unsubscribed, or replaced by a newer writer).
async fn write_imports(
    mut data_rx: mpsc::Receiver<Bytes>,
    opener: Arc<Mutex<Opener>>,
    writer: Arc<Writer>,
    local: String,
    stats: Arc<TopicStats>,
) {
    let mut plain = Vec::new();
    while let Some(first) = data_rx.recv().await {
        let mut next = Some(first);
        let mut written = 0;
        while let Some(env) = next.take() {
            let opened = match opener.lock() {
                Ok(mut o) => o
                    .open(&env, now_us(), &mut plain)
                    .map_err(|e| e.to_string()),
                Err(_) => Err("opener poisoned".to_string()),
            };
            match opened {
                Ok(_) => {
                    stats.age_in.record_envelope(&env);
                    let (buf, written) = write_import(&writer, plain, &local).await;
                    plain = buf;
                    if written {
                        stats.age_out.record_envelope(&env);
                        TopicStats::count(&stats.samples);
                    } else {
                        TopicStats::count(&stats.failed);
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
        if let Err(e) = writer.flush() {
            warn!(topic = %local, "DDS flush failed: {e}");
        }
    }
}

/// Writes one sample (the writer never blocks: see [`INLINE_WRITE_MAX`] and
/// [`write_patiently`]); hands the buffer back for reuse, and whether the write succeeded.
async fn write_import(writer: &Arc<Writer>, cdr: Vec<u8>, local: &str) -> (Vec<u8>, bool) {
    if cdr.len() <= INLINE_WRITE_MAX {
        match writer.write_cdr(&cdr) {
            Ok(()) => return (cdr, true),
            Err(e) if !e.is_timeout() => {
                warn!(topic = %local, "DDS write failed: {e}");
                return (cdr, false);
            }
            // The readers are not ready: wait for them off the async workers.
            Err(_) => {}
        }
    }
    let w = writer.clone();
    let done = tokio::task::spawn_blocking(move || {
        let r = write_patiently(&w, &cdr);
        (cdr, r)
    });
    match done.await {
        Ok((cdr, Ok(()))) => (cdr, true),
        Ok((cdr, Err(e))) => {
            warn!(topic = %local, "DDS write failed: {e}");
            (cdr, false)
        }
        Err(e) => {
            warn!(topic = %local, "DDS write task failed: {e}");
            (Vec::new(), false)
        }
    }
}

/// How long an import keeps retrying a reliable write that the readers are not ready for
/// before it gives the sample up (a reader that stopped reading).
const WRITE_PATIENCE: Duration = Duration::from_secs(10);

/// Writes a sample with a non-blocking writer, retrying while CycloneDDS reports
/// back-pressure (a timeout: slow readers, not failure), with growing pauses (a retry copies
/// the sample again). Gives up after [`WRITE_PATIENCE`].
fn write_patiently(writer: &Writer, cdr: &[u8]) -> Result<(), roam_dds::DdsError> {
    let deadline = std::time::Instant::now() + WRITE_PATIENCE;
    let mut pause = Duration::from_micros(50);
    loop {
        match writer.write_cdr(cdr) {
            Err(e) if e.is_timeout() && std::time::Instant::now() < deadline => {
                // What earlier batched writes queued must go out for the readers to ack it.
                let _ = writer.flush();
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(5));
            }
            r => return r,
        }
    }
}

/// One direction of a topic or service between a DDS topic here and a name in a realm.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Leg {
    dds_topic: String,
    remote: String,
    realm: String,
}

/// A ROS 2 service is two DDS topics: requests (`rq/...Request`, written by clients) and
/// replies (`rr/...Reply`, written by the server). The network with the server exports the
/// replies and imports the requests; a network with clients does the opposite. Both travel
/// verbatim: the rmw request header inside each sample (client GUID and sequence) lets every
/// client pick its own replies, so the proxies keep no per-call state.
fn service_legs(cfg: &ProxyConfig) -> (Vec<Leg>, Vec<Leg>) {
    let (mut exports, mut imports) = (Vec::new(), Vec::new());
    for (m, server_here) in cfg
        .exports
        .iter()
        .map(|m| (m, true))
        .chain(cfg.imports.iter().map(|m| (m, false)))
        .filter(|(m, _)| m.what == What::Service)
    {
        let (rq, rr) = service_to_dds(&m.local);
        let request = Leg {
            dds_topic: rq,
            remote: format!("{}#request", m.remote),
            realm: m.realm.clone(),
        };
        let reply = Leg {
            dds_topic: rr,
            remote: format!("{}#reply", m.remote),
            realm: m.realm.clone(),
        };
        if server_here {
            exports.push(reply);
            imports.push(request);
        } else {
            exports.push(request);
            imports.push(reply);
        }
    }
    (exports, imports)
}

/// Announces the proxy as a ROS 2 node in `ros_discovery_info`, listing the readers and
/// writers its participant owns, so `ros2 node list` and `ros2 topic info -v` show it.
struct NodeAnnouncer(ros_discovery_info::NodeAnnouncer);

impl NodeAnnouncer {
    fn new(participant: &Participant, cfg: &ProxyConfig) -> Result<Self, String> {
        let name: String = cfg
            .id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let gid = ros_discovery_info::GidSize::for_distro(cfg.dds.ros_distro.as_deref());
        ros_discovery_info::NodeAnnouncer::new(participant, "/", &format!("roam_proxy_{name}"), gid)
            .map(Self)
            .map_err(|e| format!("DDS ros_discovery_info: {e}"))
    }

    /// Tracks our own ROS endpoints; republishes when they change.
    fn observe(&mut self, participant: &Participant, ev: &DiscoveryEvent) {
        let ep = ev.endpoint();
        if !participant.owns(ep) || ros_endpoint(&ep.topic_name).is_none() {
            return;
        }
        let writer = matches!(ev, DiscoveryEvent::Publication(_));
        // A reliable write may wait briefly for local readers: keep it off the async workers.
        let res = tokio::task::block_in_place(|| self.0.set_endpoint(ep.guid, writer, ep.alive));
        if let Err(e) = res {
            warn!("cannot announce the proxy in ros_discovery_info: {e}");
        }
    }
}
