//! `roam pub` and `roam sub`: raw publishing and subscribing through a router, for debugging
//! and tests (like mosquitto_pub / mosquitto_sub).

use roam_net::latency::now_us;
use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use clap::Args;
use roam_net::client::{max_envelope_len, Client, ClientConfig, ClientEvent, SendError};
use roam_net::link::LinkConfig;
use roam_proto::{Opener, Sealer, SigningIdentity};
use tokio::io::AsyncBufReadExt;

use super::{CmdResult, ConnectArgs, TopicArgs};
use crate::addr;
use crate::config::LinkFile;
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
}

/// The topic's name in its realm: from --raw-name, or derived from the checked descriptor.
/// The descriptor is checked before the realm file is read, so a mistyped topic or type is
/// reported first.
fn topic_name(
    topic: &TopicArgs,
    raw: Option<&str>,
) -> Result<(roam_proto::Name, crate::realm_file::Realm), String> {
    let descriptor = match raw {
        Some(_) => None,
        None => Some(topic.descriptor()?),
    };
    let realm = crate::realm_file::load(&topic.realm)?;
    let name = match (raw, descriptor) {
        (Some(h), _) => roam_proto::Name::from_hex(h)
            .ok_or_else(|| format!("--raw-name {h:?} is not 64 hex digits"))?,
        (None, d) => d.ok_or("no topic")?.name(&realm.secret),
    };
    Ok((name, realm))
}

fn client_config(conn: &ConnectArgs) -> Result<ClientConfig, String> {
    // The address first: its mistakes need no PKI to be reported.
    let router = addr::parse_peer(&conn.connect).map_err(|e| format!("--connect: {e}"))?;
    let identity = roam_net::pki::load_identity(&conn.pki, &conn.id).map_err(|e| e.to_string())?;
    let link = LinkFile {
        max_message_bytes: conn.max_message_bytes,
        ..LinkFile::default()
    }
    .apply(LinkConfig::default())
    .map_err(|e| format!("--max-message-bytes: {}", e.message))?;
    Ok(ClientConfig {
        identity: Arc::new(identity),
        router,
        link,
        max_backoff: Duration::from_secs(2),
    })
}

fn client(conn: &ConnectArgs) -> Result<Client, String> {
    Client::start(client_config(conn)?).map_err(|e| e.to_string())
}

/// How long a stopping publisher waits for the router to take what it already queued.
const FINISH_ON_STOP: Duration = Duration::from_secs(3);

pub async fn run_pub(a: PubArgs) -> CmdResult {
    // First of all: a signal from here on ends with the summary, never kills.
    let mut stop = super::signals::Stop::install()?;
    let (name, realm) = topic_name(&a.topic, a.raw_name.as_deref())?;
    let signer = if a.sign {
        let id =
            roam_net::pki::load_identity(&a.conn.pki, &a.conn.id).map_err(|e| e.to_string())?;
        Some(Arc::new(SigningIdentity::from_pkcs8(&id.signing_pkcs8)?))
    } else {
        None
    };
    let mut sealer =
        Sealer::new(&realm.secret, name, a.best_effort, signer).map_err(|e| e.to_string())?;
    let cfg = client_config(&a.conn)?;
    // Generated payloads all have one size: refuse an impossible one before connecting.
    if let Some(size) = a.size {
        check_size(size, sealer.sealed_len(size), max_envelope_len(&cfg.link))?;
    }
    let mut c = Client::start(cfg).map_err(|e| e.to_string())?;
    let mut sent = 0u64;
    let mut stopped = false;
    let outcome = tokio::select! {
        r = publish(&a, &mut c, &mut sealer, name, &mut sent) => r,
        sig = stop.wait() => {
            eprintln!("{sig}: stopping");
            stopped = true;
            Ok(())
        }
    };
    // Exit only once the router has everything: a publisher that quits loses nothing. When
    // stopped by a signal, or by a second one while finishing, it waits a bounded time.
    if stopped || outcome.is_err() {
        let _ = tokio::time::timeout(FINISH_ON_STOP, c.finish()).await;
    } else {
        tokio::select! {
            _ = c.finish() => {}
            sig = stop.wait() => {
                eprintln!("{sig}: stopping");
                let _ = tokio::time::timeout(FINISH_ON_STOP, c.finish()).await;
            }
        }
    }
    let s = c.stats();
    eprintln!(
        "sent {sent} messages ({} dropped while offline, {} best-effort dropped for newer ones)",
        s.dropped_offline, s.dropped_stale
    );
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

/// Waits for a subscriber (unless --no-wait), then sends every message; counts in `sent`.
async fn publish(
    a: &PubArgs,
    c: &mut Client,
    sealer: &mut Sealer,
    name: roam_proto::Name,
    sent: &mut u64,
) -> CmdResult {
    c.publish(name).await;
    if !a.no_wait {
        eprintln!("waiting for a subscriber of {} ...", a.topic.topic);
        loop {
            match c.events.recv().await {
                Some(ClientEvent::Demand {
                    name: n,
                    wanted: true,
                }) if n == name => break,
                Some(_) => {}
                None => return Err("client session ended".into()),
            }
        }
    }
    let period = (a.rate > 0.0).then(|| Duration::from_secs_f64(1.0 / a.rate));
    let mut tick = period.map(|p| {
        let mut i = tokio::time::interval(p);
        i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        i
    });
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut buf = Vec::new();
    loop {
        if a.count.is_some_and(|n| *sent >= n) {
            return Ok(());
        }
        let body = match a.size {
            Some(size) => payload::pattern(sealer.next_seq(), size),
            None => match lines.next_line().await.map_err(|e| e.to_string())? {
                Some(l) => l.into_bytes(),
                None => return Ok(()),
            },
        };
        if let Some(t) = tick.as_mut() {
            t.tick().await;
        }
        sealer
            .seal(&body, now_us(), &mut buf)
            .map_err(|e| e.to_string())?;
        let envelope = Bytes::from(std::mem::take(&mut buf));
        let result = match a.replay {
            true => match c.send(envelope.clone()).await {
                Ok(()) => c.send(envelope).await,
                e => e,
            },
            false => c.send(envelope).await,
        };
        match result {
            Ok(()) => *sent += 1,
            Err(SendError::TooLarge { len, limit }) => {
                let why = check_size(body.len(), len, limit).err().unwrap_or_default();
                return Err(format!("message {}: {why}", *sent + 1));
            }
            Err(SendError::Closed) => return Err("client session ended".into()),
        }
    }
}

pub async fn run_sub(a: SubArgs) -> CmdResult {
    let mut stop = super::signals::Stop::install()?;
    let (name, realm) = topic_name(&a.topic, a.raw_name.as_deref())?;
    let mut opener = Opener::new(&realm.secret, realm.opener_config());
    let mut c = client(&a.conn)?;
    c.subscribe(name).await;
    let mut got = 0u64;
    let mut out = Vec::new();
    let stdout = std::io::stdout();
    let summary = |got: u64, opener: &Opener| {
        let s = opener.stats();
        eprintln!(
            "received {got} messages; dropped: {} forged, {} replayed, {} malformed, {} unsigned, {} bad signer",
            s.forged, s.replayed, s.malformed, s.unsigned, s.bad_signer
        );
    };
    loop {
        let ev = tokio::select! {
            ev = c.events.recv() => ev,
            sig = stop.wait() => {
                eprintln!("{sig}: stopping");
                summary(got, &opener);
                return Ok(());
            }
        };
        match ev {
            Some(ClientEvent::Data { envelope, .. }) => {
                match opener.open(&envelope, now_us(), &mut out) {
                    Ok(o) => {
                        got += 1;
                        if !a.quiet {
                            let latency = now_us() as i64 - o.header.send_time_us as i64;
                            let line =
                                payload::describe(o.header.seq, latency, &out, o.signer.as_deref());
                            let mut lock = stdout.lock();
                            let _ = writeln!(lock, "{line}");
                            let _ = lock.flush();
                        }
                        if a.count.is_some_and(|n| got >= n) {
                            break;
                        }
                    }
                    Err(e) => tracing::warn!("dropped an envelope: {e}"),
                }
            }
            Some(ClientEvent::Connected { router }) => {
                tracing::info!("subscribed through {router}")
            }
            Some(_) => {}
            None => return Err("client session ended".into()),
        }
    }
    summary(got, &opener);
    Ok(())
}
