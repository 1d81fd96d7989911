//! [`Edge`]: one process's door to its realms, through one [`Port`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use roam_proto::{Name, SigningIdentity};

use crate::announce::Announcer;
use crate::names::meta_descriptor;
use crate::port::Port;
use crate::realm::Realm;
use crate::stats::TopicRegistry;

/// A topic as this process names it in a realm: the realm, and the realm-side name (`/chatter`,
/// `dds:NAME`, `/svc#request`; see [`crate::names`]).
#[derive(Clone)]
pub struct TopicRef {
    pub realm: Arc<Realm>,
    pub topic: String,
    /// A 256-bit name given directly instead of derived (see [`TopicRef::raw_name`]).
    pub raw: Option<Name>,
}

impl TopicRef {
    pub fn new(realm: Arc<Realm>, topic: impl Into<String>) -> Self {
        Self {
            realm,
            topic: topic.into(),
            raw: None,
        }
    }

    /// A name seen on the wire, used as is: for tools that test what an outsider who observed
    /// it can do (security testing). Nothing is announced or followed for it.
    pub fn raw_name(realm: Arc<Realm>, label: impl Into<String>, name: Name) -> Self {
        Self {
            realm,
            topic: label.into(),
            raw: Some(name),
        }
    }

    /// The name the data of type `ty` travels on.
    pub fn data_name(&self, ty: &str) -> Name {
        self.raw.unwrap_or_else(|| {
            crate::names::data_descriptor(&self.topic, ty).name(&self.realm.secret)
        })
    }
}

impl std::fmt::Debug for TopicRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} in realm {}", self.topic, self.realm.label)
    }
}

/// What went wrong at the edge.
#[derive(Debug, thiserror::Error)]
pub enum EdgeError {
    #[error("cannot seal: {0}")]
    Seal(#[from] roam_proto::SealError),
    #[error(transparent)]
    Send(#[from] roam_net::client::SendError),
}

/// Keeps a definition announced (see [`Edge::describe`]).
pub struct Description {
    _announcer: Arc<Announcer>,
}

/// One process's door to its realms: every publisher, subscriber, service and action handle
/// comes from here. Cheap to clone.
#[derive(Clone)]
pub struct Edge {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) port: Port,
    /// This process's name in announcements (its identity), so a restarted process's
    /// announcements replace its earlier ones.
    pub(crate) announcer_name: String,
    /// Signs every envelope when set (signed mode).
    pub(crate) signer: Option<Arc<SigningIdentity>>,
    announcers: Mutex<HashMap<Name, Weak<Announcer>>>,
    /// This process's directory entries, one per realm, shared by its parts.
    pub(crate) directories: crate::directory::Entries,
    pub(crate) stats: TopicRegistry,
}

impl Edge {
    /// An edge on `port`, announcing itself as `name` (its identity).
    pub fn new(port: Port, name: impl Into<String>) -> Self {
        Self::build(port, name.into(), None)
    }

    /// Like [`Self::new`], signing every envelope with `signer` (a realm member's key).
    pub fn signed(port: Port, name: impl Into<String>, signer: Arc<SigningIdentity>) -> Self {
        Self::build(port, name.into(), Some(signer))
    }

    fn build(port: Port, announcer_name: String, signer: Option<Arc<SigningIdentity>>) -> Self {
        Self {
            inner: Arc::new(Inner {
                port,
                announcer_name,
                signer,
                announcers: Mutex::new(HashMap::new()),
                directories: Mutex::new(HashMap::new()),
                stats: TopicRegistry::default(),
            }),
        }
    }

    pub fn port(&self) -> &Port {
        &self.inner.port
    }

    /// The name this process announces itself by.
    pub fn name(&self) -> &str {
        &self.inner.announcer_name
    }

    /// Every topic's counters in this process.
    pub fn topics(&self) -> &TopicRegistry {
        &self.inner.stats
    }

    /// Announces a definition of `dds_type` (its ros2msg text) with `topic`'s announcements
    /// for as long as the returned handle lives: what an importer with the definitions does
    /// for what it imports, so members without them (a gateway with no ROS install) can read
    /// the data.
    pub fn describe(&self, topic: &TopicRef, dds_type: &str, text: String) -> Description {
        let announcer = self.announcer(topic);
        announcer.change(crate::announce::Change::Definition(
            roam_proto::meta::TypeDefinition {
                dds_type: dds_type.to_string(),
                text,
            },
        ));
        Description {
            _announcer: announcer,
        }
    }

    /// The announcer of a topic, shared by every publisher of it in this process.
    pub(crate) fn announcer(&self, topic: &TopicRef) -> Arc<Announcer> {
        let meta = meta_descriptor(&topic.topic).name(&topic.realm.secret);
        let mut map = self
            .inner
            .announcers
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if let Some(a) = map.get(&meta).and_then(Weak::upgrade) {
            return a;
        }
        map.retain(|_, w| w.strong_count() > 0);
        let a = Announcer::start(
            self.inner.port.clone(),
            topic.realm.clone(),
            meta,
            self.inner.announcer_name.clone(),
            self.inner.signer.clone(),
        );
        map.insert(meta, Arc::downgrade(&a));
        a
    }
}

/// An edge's topics are its process's topics in the metrics snapshot.
impl crate::metrics::TopicSource for Edge {
    fn topics(&self) -> Vec<crate::metrics::Topic> {
        crate::metrics::TopicSource::topics(&self.inner.stats)
    }
}
