//! `roam pub` and `roam sub`: publishing and subscribing through a router from a shell, for
//! debugging and tests (like mosquitto_pub / mosquitto_sub). Both go through the edge layer
//! over a client link, like every other door: `roam pub` announces its stream (a proxy
//! importing the topic writes it to DDS), `roam sub` follows announcements.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use roam_edge::{
    Edge, EdgeError, Event, PayloadKind, Publisher, StreamQos, StreamSpec, Subscriber,
    SubscriberOptions, TopicRef,
};
use roam_net::client::{max_envelope_len, SendError};
use roam_net::latency::now_us;
use roam_proto::SigningIdentity;
use tokio::io::AsyncBufReadExt;

use super::connect::{client_config, client_edge, ClientEdge};
use super::{CmdResult, ConnectArgs, TopicArgs};
use crate::payload;

#[derive(Debug, Args)]
pub struct PubArgs {
    #[command(flatten)]
    pub topic: TopicArgs,
    #[command(flatten)]
    pub conn: ConnectArgs,
    /// Stop after this many messages (default: all of stdin, or forever with --size).
    #[arg(long)]
    pub count: Option<u64>,
    /// Send generated payloads of this many bytes instead of stdin lines.
    #[arg(long, value_name = "BYTES")]
    pub size: Option<usize>,
    /// Messages per second (0: as fast as the link accepts).
    #[arg(long, value_name = "HZ", default_value_t = 0.0)]
    pub rate: f64,
    /// Best effort: may be dropped under load instead of queued (sent as QUIC datagrams).
    #[arg(long)]
    pub best_effort: bool,
    /// Keep every message (a DDS KEEP_ALL history) instead of the newest 10: subscribers
    /// that miss messages (a router died, a link went down) ask for them again, and get the
    /// stream complete and in order while the messages are within --resend-window.
    #[arg(long, conflicts_with = "best_effort")]
    pub keep_all: bool,
    /// With --keep-all: how long sent messages are kept for subscribers that missed them
    /// (also bounded by 8 MiB and 4,096 messages).
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    pub resend_window: f64,
    /// Sign every envelope with this identity's key (signed mode).
    #[arg(long)]
    pub sign: bool,
    /// Start sending at once instead of waiting until a subscriber exists.
    #[arg(long)]
    pub no_wait: bool,
    /// Send every envelope twice (checks that receivers drop replays).
    #[arg(long)]
    pub replay: bool,
    /// Use this 64-hex-digit name instead of deriving it from the topic (acts as an outsider
    /// who observed a name on the wire; for security testing).
    #[arg(long, value_name = "HEX")]
    pub raw_name: Option<String>,
    /// Publish this message, given as JSON in rosbridge's conventions (e.g. '{"data": "hi"}'
    /// for std_msgs/msg/String); `-` reads one JSON message per line from stdin. Fields left
    /// out take their defaults. The type's definition comes from this machine or from the
    /// realm (see --msg-path).
    #[arg(long, value_name = "JSON")]
    pub json: Option<String>,
    #[command(flatten)]
    pub definitions: super::json::DefinitionArgs,
}

#[derive(Debug, Args)]
pub struct SubArgs {
    #[command(flatten)]
    pub topic: TopicArgs,
    #[command(flatten)]
    pub conn: ConnectArgs,
    /// Exit after this many messages.
    #[arg(long)]
    pub count: Option<u64>,
    /// Print only the final summary, not one line per message.
    #[arg(long)]
    pub quiet: bool,
    /// Subscribe to this 64-hex-digit name instead of deriving it from the topic.
    #[arg(long, value_name = "HEX")]
    pub raw_name: Option<String>,
    /// Print every message as one line of JSON (rosbridge's conventions), like `ros2 topic
    /// echo`; the type's definition comes from this machine or from the realm (see
    /// --msg-path).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub definitions: super::json::DefinitionArgs,
}

/// The topic as the edge names it, checked before the realm file is read (so a mistyped
/// topic or type is reported first), and whether `--raw-name` replaces its name.
fn topic_ref(topic: &TopicArgs, raw: Option<&str>) -> Result<(TopicRef, String), String> {
    let resolved = topic.resolve()?;
    let realm = Arc::new(roam_edge::realm::load(&topic.realm)?);
    let t = match raw {
        Some(h) => {
            let name = roam_proto::Name::from_hex(h)
                .ok_or_else(|| format!("--raw-name {h:?} is not 64 hex digits"))?;
            TopicRef::raw_name(realm, resolved.topic, name)
        }
        None => TopicRef::new(realm, resolved.topic),
    };
    Ok((t, resolved.dds_type))
}

/// How long a stopping publisher waits for the router to take what it already queued.
const FINISH_ON_STOP: Duration = Duration::from_secs(3);

pub async fn run_pub(a: PubArgs) -> CmdResult {
    // First of all: a signal from here on ends with the summary, never kills.
    let mut stop = super::signals::Stop::install()?;
    let (topic, dds_type) = topic_ref(&a.topic, a.raw_name.as_deref())?;
    let signer = if a.sign {
        let id = roam_pki::load_identity(&a.conn.pki, &a.conn.id).map_err(|e| e.to_string())?;
        Some(Arc::new(
            SigningIdentity::from_pkcs8(&id.signing_pkcs8).map_err(|e| e.to_string())?,
        ))
    } else {
        None
    };
    let cfg = client_config(&a.conn)?;
    // Generated payloads all have one size: refuse an impossible one before connecting.
    if let Some(size) = a.size {
        let sealed = roam_proto::envelope::HEADER_LEN
            + size
            + roam_proto::envelope::TAG_LEN
            + if signer.is_some() {
                roam_proto::envelope::SIGNER_LEN + roam_proto::envelope::SIGNATURE_LEN
            } else {
                0
            };
        check_size(size, sealed, max_envelope_len(&cfg.link))?;
    }
    let identity = cfg.identity.clone();
    let ClientEdge { edge, client, .. } = client_edge(cfg, &a.conn.id, "connected to", signer)?;
    let _epochs = super::connect::follow_epochs(&edge, &topic.realm, &identity).await?;
    // With --json, a definition on this machine is used and announced with the stream.
    let local = match &a.json {
        Some(_) => super::json::local_codec(&a.definitions.source()?, &dds_type).await,
        None => None,
    };
    let (mut codec, definition) = match local {
        Some((codec, text)) => (Some(codec), Some(text)),
        None => (None, None),
    };
    if !(a.resend_window.is_finite() && a.resend_window >= 0.0) {
        return Err(format!(
            "--resend-window {} is not a number of seconds",
            a.resend_window
        ));
    }
    let spec = StreamSpec {
        qos: StreamQos {
            reliable: !a.best_effort,
            transient_local: false,
            // 0: KEEP_ALL.
            depth: if a.keep_all { 0 } else { 10 },
        },
        definition,
        window: roam_edge::recovery::WindowLimits {
            max_age: Duration::from_secs_f64(a.resend_window),
            ..Default::default()
        },
        ..StreamSpec::new(dds_type)
    };
    let publisher = edge
        .publisher(&topic, spec)
        .await
        .map_err(|e| e.to_string())?;
    if a.json.is_some() && codec.is_none() {
        // The stream is announced (with its type): a member that has the definition, such
        // as a proxy importing the topic, announces it in turn.
        codec = Some(announced_definition(&a, &edge, &topic, publisher.dds_type()).await?);
    }
    let mut sent = 0u64;
    let mut stopped = false;
    let outcome = tokio::select! {
        r = publish(&a, &publisher, codec.as_ref(), &mut sent) => r,
        sig = stop.wait() => {
            eprintln!("{sig}: stopping");
            stopped = true;
            Ok(())
        }
    };
    // Exit only once the router has everything: a publisher that quits loses nothing. When
    // stopped by a signal, or by a second one while finishing, it waits a bounded time.
    let losses = publisher.losses();
    drop(publisher);
    if stopped || outcome.is_err() {
        let _ = tokio::time::timeout(FINISH_ON_STOP, client.finish()).await;
    } else {
        tokio::select! {
            _ = client.finish() => {}
            sig = stop.wait() => {
                eprintln!("{sig}: stopping");
                let _ = tokio::time::timeout(FINISH_ON_STOP, client.finish()).await;
            }
        }
    }
    let s = client.stats();
    eprintln!(
        "sent {sent} messages ({} dropped while offline, {} best-effort dropped for newer ones)",
        s.dropped_offline, s.dropped_stale
    );
    if let Some(l) = losses {
        eprintln!(
            "resent {} messages that subscribers missed; {} messages did not reach {} subscribers (asked for after the resend window)",
            l.resent, l.lost, l.subscribers
        );
    }
    outcome
}

/// Refuses a message the link would refuse, saying how to raise the limit.
fn check_size(payload: usize, envelope: usize, limit: usize) -> CmdResult {
    if envelope <= limit {
        return Ok(());
    }
    Err(format!(
        "a message of {payload} bytes ({envelope} bytes sealed) is over the link's limit of {limit} bytes; \
         nothing was sent. Send smaller messages, or raise the limit on every hop: \
         --max-message-bytes here and for roam sub, link.max_message_bytes in the routers' \
         and proxies' files"
    ))
}

/// The codec of `--json` from a definition announced in the realm.
async fn announced_definition(
    a: &PubArgs,
    edge: &Edge,
    topic: &TopicRef,
    dds_type: &str,
) -> Result<roam_msg::MessageType, String> {
    let options = SubscriberOptions {
        announcements_only: true,
        ..SubscriberOptions::default()
    };
    let mut announcements = edge.subscriber(topic, options).await;
    let wait = a.definitions.wait();
    super::json::announced_codec(&mut announcements, dds_type, wait, |_, _| {}).await
}

/// The next message body: a generated payload, a stdin line, or JSON (from the argument or
/// a stdin line) encoded as CDR. `None` when stdin ends.
async fn next_body(
    a: &PubArgs,
    codec: Option<&roam_msg::MessageType>,
    n: u64,
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::io::Stdin>>,
) -> Result<Option<Vec<u8>>, String> {
    let read_line = |l: std::io::Result<Option<String>>| l.map_err(|e| e.to_string());
    if let (Some(json), Some(codec)) = (&a.json, codec) {
        let text = match json.as_str() {
            "-" => match read_line(lines.next_line().await)? {
                Some(l) if l.trim().is_empty() => return Ok(Some(Vec::new())),
                Some(l) => l,
                None => return Ok(None),
            },
            j => j.to_string(),
        };
        let mut cdr = Vec::new();
        codec
            .json_to_cdr(
                text.as_bytes(),
                &roam_msg::EncodeOptions::default(),
                &mut cdr,
            )
            .map_err(|e| format!("message {n}: {e}"))?;
        return Ok(Some(cdr));
    }
    Ok(match a.size {
        Some(size) => Some(payload::pattern(n, size)),
        None => read_line(lines.next_line().await)?.map(String::into_bytes),
    })
}

/// Waits for a subscriber (unless --no-wait), then sends every message; counts in `sent`.
async fn publish(
    a: &PubArgs,
    p: &Publisher,
    codec: Option<&roam_msg::MessageType>,
    sent: &mut u64,
) -> CmdResult {
    // A JSON argument is one message unless --count says more.
    let count = match (&a.json, a.count) {
        (Some(j), None) if j != "-" => Some(1),
        (_, c) => c,
    };
    if !a.no_wait {
        eprintln!("waiting for a subscriber of {} ...", a.topic.topic);
        let mut demand = p.demand();
        demand
            .wait_for(|w| *w)
            .await
            .map_err(|_| "client session ended".to_string())?;
    }
    let period = (a.rate > 0.0).then(|| Duration::from_secs_f64(1.0 / a.rate));
    let mut tick = period.map(|p| {
        let mut i = tokio::time::interval(p);
        i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        i
    });
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    loop {
        if count.is_some_and(|n| *sent >= n) {
            return Ok(());
        }
        // Sequence numbers start at 1: message n carries the pattern of n.
        let body = match next_body(a, codec, *sent + 1, &mut lines).await? {
            Some(b) if b.is_empty() && a.json.is_some() => continue,
            Some(b) => b,
            None => return Ok(()),
        };
        if let Some(t) = tick.as_mut() {
            t.tick().await;
        }
        let envelope = p
            .seal(PayloadKind::Data, &body)
            .map_err(|e| e.to_string())?;
        let result = match a.replay {
            true => match p.send(envelope.clone()).await {
                Ok(()) => p.send(envelope).await,
                e => e,
            },
            false => p.send(envelope).await,
        };
        match result {
            Ok(()) => *sent += 1,
            Err(EdgeError::Send(SendError::TooLarge { len, limit })) => {
                let why = check_size(body.len(), len, limit).err().unwrap_or_default();
                return Err(format!("message {}: {why}", *sent + 1));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

pub async fn run_sub(a: SubArgs) -> CmdResult {
    let mut stop = super::signals::Stop::install()?;
    let (topic, dds_type) = topic_ref(&a.topic, a.raw_name.as_deref())?;
    let cfg = client_config(&a.conn)?;
    let identity = cfg.identity.clone();
    let ClientEdge { edge, .. } = client_edge(cfg, &a.conn.id, "subscribed through", None)?;
    let _epochs = super::connect::follow_epochs(&edge, &topic.realm, &identity).await?;
    let options = SubscriberOptions {
        dds_type: Some(dds_type),
        ..SubscriberOptions::default()
    };
    let mut sub = edge.subscriber(&topic, options).await;
    let mut got = 0u64;
    let mut out = Vec::new();
    // With --json: the type's codec, and the messages that came before it was known.
    let mut early: Vec<(roam_edge::Received, Vec<u8>)> = Vec::new();
    let codec = match a.json {
        false => None,
        true => {
            let source = a.definitions.source()?;
            let dds_type = a.topic.resolve()?.dds_type;
            Some(match super::json::local_codec(&source, &dds_type).await {
                Some((codec, _)) => codec,
                None => {
                    let wait = a.definitions.wait();
                    super::json::announced_codec(&mut sub, &dds_type, wait, |ev, buf| {
                        if let Event::Message(r) = ev {
                            if early.len() < 1024 {
                                early.push((r, buf));
                            }
                        }
                    })
                    .await?
                }
            })
        }
    };
    let stdout = std::io::stdout();
    let mut json = Vec::new();
    let mut print = |r: &roam_edge::Received, payload: &[u8]| -> CmdResult {
        let line = match &codec {
            Some(codec) => {
                json.clear();
                codec
                    .cdr_to_json(payload, &mut json)
                    .map_err(|e| format!("message {}: {e}", r.header.seq))?;
                String::from_utf8_lossy(&json).into_owned()
            }
            None => {
                let latency = now_us() as i64 - r.header.send_time_us as i64;
                payload::describe(r.header.seq, latency, payload, r.signer.as_deref())
            }
        };
        let mut lock = stdout.lock();
        let _ = writeln!(lock, "{line}");
        let _ = lock.flush();
        Ok(())
    };
    for (r, payload) in std::mem::take(&mut early) {
        got += 1;
        if !a.quiet {
            print(&r, &payload)?;
        }
    }
    let summary = |got: u64, sub: &Subscriber| {
        let s = sub.open_stats();
        let t = sub.stats();
        let n = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
        eprintln!(
            "received {got} messages; dropped: {} forged, {} replayed, {} malformed, {} unsigned, {} bad signer, {} of an epoch not held",
            s.forged, s.replayed, s.malformed, s.unsigned, s.bad_signer, s.epoch
        );
        eprintln!(
            "{} messages recovered after a loss, {} lost",
            n(&t.recovered),
            n(&t.lost)
        );
    };
    loop {
        let ev = tokio::select! {
            ev = sub.recv(&mut out) => ev,
            sig = stop.wait() => {
                eprintln!("{sig}: stopping");
                summary(got, &sub);
                return Ok(());
            }
        };
        match ev {
            Some(Event::Message(r)) => {
                got += 1;
                if !a.quiet {
                    if let Err(e) = print(&r, &out) {
                        tracing::warn!("{e}");
                    }
                }
                if a.count.is_some_and(|n| got >= n) {
                    break;
                }
            }
            Some(_) => {}
            None => return Err("client session ended".into()),
        }
    }
    summary(got, &sub);
    Ok(())
}
