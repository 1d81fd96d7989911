//! Doors into a roam realm for programs outside ROS, over the edge layer.
//!
//! ```text
//!  WebSocket client ──frames──> rosbridge::ops (pure parse) ──Op──> rosbridge::client
//!                                                                     │ Session: identity,
//!                                                                     │ subscriptions, adverts
//!  realm <──edge Publisher / ServiceClient── Session ──edge Subscriber──> Outbox (pure,
//!                                                                     bounded per client)
//!  WebSocket client <──frames── rosbridge::encode (pure) <── writer task ──┘
//! ```
//!
//! - [`session`]: one client's identity and permissions, its subscriptions (edge
//!   [`roam_edge::Subscriber`]s) and advertisements (edge [`roam_edge::Publisher`]s), door
//!   independent;
//! - [`outbox`]: what waits to be sent to one client, bounded (drop oldest, counted),
//!   `queue_length` and `throttle_rate` honoured;
//! - [`auth`]: bearer tokens with expiry and allow/deny patterns per identity;
//! - [`codec`]: a type's CDR <-> JSON/CBOR codec from local or announced definitions;
//! - [`rosbridge`]: the rosbridge v2 protocol (pure parse and encode) and its WebSocket shell.
//!
//! Names, sealing, links and reconnection belong to the edge layer and the client link; a
//! door only translates.

pub mod auth;
pub mod codec;
pub mod outbox;
pub mod rosbridge;
pub mod session;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use roam_edge::definitions::DefinitionSource;
use roam_edge::directory::DirectoryView;
use roam_edge::{Edge, Realm};

pub use outbox::OutboxLimits;

/// Bounds on what clients may hold and ask.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest WebSocket frame or message a client may send, in bytes.
    pub max_frame_bytes: usize,
    /// Clients connected at once at most; more are refused at the handshake.
    pub max_clients: usize,
    /// Per client: what waits to be sent.
    pub outbox: OutboxLimits,
    /// Messages kept per subscription when the client gives no `queue_length`.
    pub default_queue_length: usize,
    /// The largest `queue_length` honoured.
    pub max_queue_length: usize,
    /// Subscriptions, advertisements and advertised services per client, each.
    pub max_topics_per_client: usize,
    /// Service calls of one client waiting for replies at once.
    pub max_calls_per_client: usize,
    /// How long a call waits for its reply when the client gives no `timeout`.
    pub call_timeout: Duration,
    /// How long a service's definition is awaited from the realm when this machine has none.
    pub definition_wait: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_frame_bytes: 32 << 20,
            max_clients: 256,
            outbox: OutboxLimits::default(),
            default_queue_length: 100,
            max_queue_length: 10_000,
            max_topics_per_client: 256,
            max_calls_per_client: 64,
            call_timeout: Duration::from_secs(30),
            definition_wait: Duration::from_secs(5),
        }
    }
}

/// Counters of a gateway, over all its clients.
#[derive(Debug, Default)]
pub struct Stats {
    pub clients: AtomicU64,
    pub clients_total: AtomicU64,
    /// Operations refused for authentication or permission.
    pub refused: AtomicU64,
    /// Frames that were not operations (malformed JSON or CBOR, unknown ops, oversized).
    pub bad_frames: AtomicU64,
    /// Samples dropped for slow clients.
    pub dropped: AtomicU64,
}

impl Stats {
    pub fn count(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// What every client of one gateway shares: the edge into the realm, the realm's directory,
/// the type codecs, the tokens and the limits.
pub struct Gateway {
    pub edge: Edge,
    pub realm: Arc<Realm>,
    pub codecs: Arc<codec::CodecCache>,
    pub directory: DirectoryView,
    /// None: no authentication (every client may do everything).
    pub tokens: Option<auth::Tokens>,
    pub limits: Limits,
    pub stats: Stats,
}

impl Gateway {
    pub async fn new(
        edge: Edge,
        realm: Arc<Realm>,
        definitions: Arc<DefinitionSource>,
        tokens: Option<auth::Tokens>,
        limits: Limits,
    ) -> Arc<Gateway> {
        let directory = edge.directory_view(realm.clone()).await;
        Arc::new(Gateway {
            edge,
            realm,
            codecs: Arc::new(codec::CodecCache::new(definitions)),
            directory,
            tokens,
            limits,
            stats: Stats::default(),
        })
    }
}

/// Now as Unix seconds (for token expiry).
pub(crate) fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
