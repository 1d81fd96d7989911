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
//! - [`auth`]: bearer tokens and client certificates, with expiry and allow/deny patterns per
//!   identity;
//! - [`tls`]: `wss://` and gRPC over TLS, client certificates;
//! - [`codec`]: a type's CDR <-> JSON/CBOR codec from local or announced definitions;
//! - [`rosbridge`]: the rosbridge v2 protocol (pure parse and encode) and its WebSocket shell;
//! - [`grpc`]: the `roam.gateway.v1` gRPC service (proto/roam/gateway/v1/gateway.proto) on tonic;
//! - [`foxglove`]: the Foxglove WebSocket protocol (raw CDR, `ros2msg` schemas) and its shell.
//!
//! Names, sealing, links and reconnection belong to the edge layer and the client link; a
//! door only translates.

pub mod admission;
pub mod auth;
pub mod codec;
pub mod dashboard;
pub mod doors;
pub mod expiry;
pub mod foxglove;
pub mod grpc;
pub mod listing;
pub mod outbox;
pub mod rosbridge;
pub mod rules;
pub mod session;
pub mod tls;
pub mod ws;

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
    /// Connection slots: clients with an identity at most, connections authenticating at
    /// most (in all, per source address), and how long authenticating may take.
    pub admission: admission::AdmissionLimits,
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
            admission: admission::AdmissionLimits::default(),
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
    /// Connections admitted now (with an identity), all doors.
    pub clients: AtomicU64,
    pub clients_total: AtomicU64,
    /// Operations refused for authentication or permission.
    pub refused: AtomicU64,
    /// Frames that were not operations (malformed JSON or CBOR, unknown ops, oversized).
    pub bad_frames: AtomicU64,
    /// Samples dropped for slow clients.
    pub dropped: AtomicU64,
    /// Messages the rules dropped (published by clients, or on their way to them).
    pub ruled: AtomicU64,
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
    /// This gateway's entry in the realm's directory: what its clients offer and import.
    pub listing: Arc<listing::Listing>,
    /// None: no authentication (every client may do everything).
    pub tokens: Option<auth::Tokens>,
    pub limits: Limits,
    pub stats: Arc<Stats>,
    /// Every door's connection slots.
    pub admission: Arc<admission::Admission>,
    /// The process's rules, when it has a rules file (set once, after start).
    pub rules: std::sync::OnceLock<Arc<dyn rules::MessageRules>>,
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
        let announcer = match edge.directory_announcer(realm.clone()).await {
            Ok(a) => Some(a),
            Err(e) => {
                tracing::warn!(
                    "this gateway's clients' topics are not listed in the realm's directory: {e}"
                );
                None
            }
        };
        Arc::new(Gateway {
            listing: listing::Listing::new(announcer),
            edge,
            realm,
            codecs: Arc::new(codec::CodecCache::new(definitions)),
            directory,
            tokens,
            admission: Arc::new(admission::Admission::new(limits.admission)),
            limits,
            stats: Arc::new(Stats::default()),
            rules: std::sync::OnceLock::new(),
        })
    }
}

impl Gateway {
    /// A slot for a connection that just arrived from `peer` (refusals are counted per
    /// cause in [`admission::Admission::refused`]).
    pub fn arrive(
        &self,
        peer: std::net::SocketAddr,
    ) -> Result<Arc<admission::Slot>, admission::Cause> {
        admission::Slot::arrive(&self.admission, &self.stats, peer.ip())
    }

    /// Whether what a client showed at its handshake (a verified certificate's name, a token
    /// on the upgrade request) proves an identity: always on a gateway without
    /// authentication.
    pub fn proves_identity(&self, cert_name: Option<&str>, token: Option<&str>) -> bool {
        let Some(tokens) = &self.tokens else {
            return true;
        };
        cert_name.is_some_and(|n| tokens.certificate(n).is_ok())
            || token.is_some_and(|t| tokens.authenticate(t, unix_now()).is_ok())
    }

    /// Whether the rules (if any) let a message pass; a drop is counted.
    pub fn rules_pass(
        &self,
        m: &rules::RuledMessage<'_>,
        schema: Option<&roam_msg::MessageType>,
        cdr: &[u8],
    ) -> bool {
        let pass = self.rules.get().is_none_or(|r| r.passes(m, schema, cdr));
        if !pass {
            Stats::count(&self.stats.ruled);
        }
        pass
    }

    /// The realm's listing as this gateway sees it: every member's directory entry, and what
    /// this gateway's clients offer and import now (its own entry comes back to its view only
    /// after a trip through the router).
    pub fn realm_listing(&self) -> roam_edge::directory::Listing {
        use roam_edge::directory::{Listed, Party};
        use roam_proto::directory::{ItemKind, Role};
        let mut listing = self.directory.listing();
        let me = self.edge.name().to_string();
        for item in self.listing.items_now() {
            let list = match item.kind {
                ItemKind::Topic => &mut listing.topics,
                ItemKind::Service => &mut listing.services,
                ItemKind::Action => &mut listing.actions,
            };
            let at = match list.iter().position(|l| l.name == item.name) {
                Some(i) => i,
                None => {
                    list.push(Listed {
                        name: item.name.clone(),
                        types: Vec::new(),
                        offered_by: Vec::new(),
                        imported_by: Vec::new(),
                    });
                    list.len() - 1
                }
            };
            let l = &mut list[at];
            for t in &item.types {
                if !l.types.contains(t) {
                    l.types.push(t.clone());
                }
            }
            let party = Party {
                member: me.clone(),
                types: item.types.clone(),
                qos: Vec::new(),
            };
            let parties = match item.role {
                Role::Offers => &mut l.offered_by,
                Role::Imports => &mut l.imported_by,
            };
            if !parties.iter().any(|p| p.member == me) {
                parties.push(party);
            }
        }
        for list in [
            &mut listing.topics,
            &mut listing.services,
            &mut listing.actions,
        ] {
            list.sort_by(|a, b| a.name.cmp(&b.name));
        }
        if !listing.members.contains(&me) && !self.listing.items_now().is_empty() {
            listing.members.push(me);
            listing.members.sort();
        }
        listing
    }
}

/// Now as Unix seconds (for token expiry).
pub(crate) fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
