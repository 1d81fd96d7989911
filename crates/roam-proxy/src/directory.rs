//! The proxy's entries in its realms' directories ([`roam_edge::directory`]): one entry per
//! realm, listing
//!
//! - what it exports, as it actually exports it: every local publication the proxy forwards
//!   (the same decision the export tasks are fed by), with its DDS type written as a ROS type
//!   name and, for topics, its QoS; a service is offered while its server's reply writer
//!   lives;
//! - what it imports, as configured or as a pattern matched it, with the types of the writers
//!   it made for each import (so once an exporter has announced the topic), and for a service
//!   also the types of the local clients' requests.
//!
//! DDS discovery drives it (a second listener on the proxy's participant): the entry changes
//! when a publisher, server or client comes or goes, and is announced at once. When a pattern
//! adds a service or an action, the publications already seen are looked at again.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use roam_dds::{Discovery, DiscoveryEvent, Endpoint, Guid, History, Participant, Qos};
use roam_edge::directory::{service_type_from_dds, DirectoryAnnouncer, ItemKind, Role};
use roam_edge::names::dds_topic;
use roam_edge::ros_names::{service_to_dds, topic_to_dds, type_from_dds};
use roam_edge::{Edge, Realm, StreamQos};
use roam_proto::directory::DirectoryItem;
use tokio::sync::{mpsc, oneshot, Notify};
use tracing::warn;

use super::config::{Mapping, ProxyConfig, What};

use crate::error::StartError;

/// Whether a local publication is one the proxy exports: (realm, realm-side name).
pub type Exported = Box<dyn Fn(&Participant, &Endpoint) -> Option<(String, String)> + Send + Sync>;

/// How long stopping waits for the last entries to reach the router.
const CLOSE_WAIT: Duration = Duration::from_secs(2);

/// One configured import, and the local DDS topic of the writers the proxy makes for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Imported {
    pub realm: String,
    pub kind: ItemKind,
    /// Its name in the realm, as listed.
    pub name: String,
    /// The local DDS topic the proxy writes what it imports to (for a service, the replies).
    pub dds_topic: String,
}

/// Every import of the configuration.
pub fn imports(cfg: &ProxyConfig) -> Vec<Imported> {
    cfg.imports.iter().map(imported).collect()
}

/// What one import lists (from the file, or matched by a pattern).
pub fn imported(m: &Mapping) -> Imported {
    let (kind, name, dds) = match m.what {
        What::Topic => (ItemKind::Topic, m.remote.clone(), topic_to_dds(&m.local)),
        What::DdsTopic => (ItemKind::Topic, dds_topic(&m.remote), m.local.clone()),
        What::Service => (
            ItemKind::Service,
            m.remote.clone(),
            service_to_dds(&m.local).1,
        ),
    };
    Imported {
        realm: m.realm.clone(),
        kind,
        name,
        dds_topic: dds,
    }
}

/// One live publication that an entry lists.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Live {
    realm: String,
    kind: ItemKind,
    role: Role,
    name: String,
    ty: String,
    qos: Option<StreamQos>,
}

/// Where a topic or service the proxy imports through a pattern comes from, by the local DDS
/// topic of its writers: (realm, kind, realm-side name).
pub type PatternImported = Box<dyn Fn(&str) -> Option<(String, ItemKind, String)> + Send + Sync>;

/// What a proxy's entries list, from its configured imports and DDS discovery. Pure.
pub struct Entries {
    imports: Vec<Imported>,
    pattern_imported: PatternImported,
    live: HashMap<Guid, Live>,
}

impl Entries {
    pub fn new(imports: Vec<Imported>, pattern_imported: PatternImported) -> Self {
        Self {
            imports,
            pattern_imported,
            live: HashMap::new(),
        }
    }

    /// Takes a local publication's discovery (`own`: a writer of the proxy's participant;
    /// `exported`: where the proxy exports it); says whether an entry changed.
    pub fn observe(
        &mut self,
        ep: &Endpoint,
        own: bool,
        exported: Option<(String, String)>,
    ) -> bool {
        let live = match exported {
            _ if !ep.alive => None,
            Some((realm, remote)) => Some(exported_item(realm, &remote, ep)),
            None if own => self.imported_item(ep),
            None => None,
        };
        match live {
            Some(l) => self.live.insert(ep.guid, l.clone()) != Some(l),
            None => self.live.remove(&ep.guid).is_some(),
        }
    }

    /// The writer the proxy made for an import: what the realm sent, of which type.
    fn imported_item(&self, ep: &Endpoint) -> Option<Live> {
        let (realm, kind, name) = match self.imports.iter().find(|i| i.dds_topic == ep.topic_name) {
            Some(i) => (i.realm.clone(), i.kind, i.name.clone()),
            None => (self.pattern_imported)(&ep.topic_name)?,
        };
        let (ty, qos) = match kind {
            ItemKind::Topic => (type_from_dds(&ep.type_name), Some(stream_qos(&ep.qos))),
            _ => (service_type_from_dds(&ep.type_name), None),
        };
        Some(Live {
            realm,
            kind,
            role: Role::Imports,
            name,
            ty,
            qos,
        })
    }

    /// The items of the proxy's entry in `realm`, sorted.
    pub fn items(&self, realm: &str) -> Vec<DirectoryItem> {
        type Key<'a> = (ItemKind, &'a str, Role);
        let mut all: BTreeMap<Key, (BTreeSet<&str>, BTreeSet<StreamQos>)> = BTreeMap::new();
        for i in self.imports.iter().filter(|i| i.realm == realm) {
            all.entry((i.kind, &i.name, Role::Imports)).or_default();
        }
        for l in self.live.values().filter(|l| l.realm == realm) {
            let (types, qos) = all.entry((l.kind, &l.name, l.role)).or_default();
            types.insert(&l.ty);
            qos.extend(l.qos);
        }
        // An action is listed where its goal service is: served here if its `send_goal` is,
        // called from here if that is imported (what `ros2 action list -t` shows).
        let actions: Vec<_> = all
            .iter()
            .filter(|((kind, _, _), _)| *kind == ItemKind::Service)
            .filter_map(|((_, name, role), (types, _))| {
                let action = name.strip_suffix(ACTION_GOAL_SERVICE)?;
                let types: BTreeSet<&str> = types
                    .iter()
                    .filter_map(|t| t.strip_suffix("_SendGoal"))
                    .collect();
                Some(((ItemKind::Action, action, *role), types))
            })
            .collect();
        for (key, types) in actions {
            all.entry(key).or_default().0.extend(types);
        }
        all.into_iter()
            .map(|((kind, name, role), (types, qos))| DirectoryItem {
                kind,
                role,
                name: name.to_string(),
                types: types.into_iter().map(str::to_string).collect(),
                qos: qos.into_iter().collect(),
            })
            .collect()
    }
}

/// The service whose server or client stands for an action's (rcl_action's names).
const ACTION_GOAL_SERVICE: &str = "/_action/send_goal";

/// A forwarded local publication: a topic's publisher, a service server's replies
/// (`NAME#reply`: the service is offered here) or a client's requests (`NAME#request`: it is
/// called from here).
fn exported_item(realm: String, remote: &str, ep: &Endpoint) -> Live {
    let service = |name: &str, role| Live {
        realm: realm.clone(),
        kind: ItemKind::Service,
        role,
        name: name.to_string(),
        ty: service_type_from_dds(&ep.type_name),
        qos: None,
    };
    if let Some(name) = remote.strip_suffix("#reply") {
        return service(name, Role::Offers);
    }
    if let Some(name) = remote.strip_suffix("#request") {
        return service(name, Role::Imports);
    }
    Live {
        kind: ItemKind::Topic,
        role: Role::Offers,
        name: remote.to_string(),
        ty: type_from_dds(&ep.type_name),
        qos: Some(stream_qos(&ep.qos)),
        realm,
    }
}

fn stream_qos(q: &Qos) -> StreamQos {
    StreamQos {
        reliable: q.reliable,
        transient_local: q.transient_local,
        depth: match q.history {
            History::KeepLast(n) => n,
            History::KeepAll => 0,
        },
    }
}

/// The running directory entries of a proxy; [`Self::stop`] sends the last ones.
pub struct ProxyDirectory {
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
    _discovery: Discovery,
}

/// Starts announcing the proxy in every realm it belongs to. `changed` is notified when what
/// `exported` says of a publication already seen may have changed (a pattern added a service
/// or an action): the entries are then worked out again.
pub async fn start(
    edge: &Edge,
    participant: &Participant,
    realms: &BTreeMap<String, Arc<Realm>>,
    imports: Vec<Imported>,
    pattern_imported: PatternImported,
    exported: Exported,
    changed: Arc<Notify>,
) -> Result<ProxyDirectory, StartError> {
    let mut announcers = Vec::new();
    for (name, realm) in realms {
        let a = edge
            .directory_announcer(realm.clone())
            .await
            .map_err(|source| StartError::Directory {
                realm: name.clone(),
                source,
            })?;
        announcers.push((name.clone(), a));
    }
    // Few events (one per endpoint in the domain and its changes): an unbounded channel
    // never blocks a CycloneDDS thread.
    let (tx, rx) = mpsc::unbounded_channel();
    let discovery = Discovery::new(participant, move |ev| {
        let _ = tx.send(ev);
    })
    .map_err(|source| StartError::Dds {
        what: "DDS discovery for the directory",
        source,
    })?;
    let (stop, stopped) = oneshot::channel();
    let task = tokio::spawn(run(
        Entries::new(imports, pattern_imported),
        participant.clone(),
        exported,
        announcers,
        (rx, changed),
        stopped,
    ));
    Ok(ProxyDirectory {
        stop,
        task,
        _discovery: discovery,
    })
}

impl ProxyDirectory {
    /// Says in every realm that the proxy is leaving, and waits (briefly) until it is said.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        if tokio::time::timeout(CLOSE_WAIT, self.task).await.is_err() {
            warn!("the proxy's last directory entries were not sent within {CLOSE_WAIT:?}");
        }
    }
}

async fn run(
    mut entries: Entries,
    participant: Participant,
    exported: Exported,
    announcers: Vec<(String, DirectoryAnnouncer)>,
    (mut events, changed): (mpsc::UnboundedReceiver<DiscoveryEvent>, Arc<Notify>),
    mut stop: oneshot::Receiver<()>,
) {
    let announce = |entries: &Entries| {
        for (realm, a) in &announcers {
            a.set(entries.items(realm));
        }
    };
    announce(&entries);
    // Every live publication of the domain, to look at again when `changed` says so.
    let mut seen: HashMap<Guid, Endpoint> = HashMap::new();
    let observe = |entries: &mut Entries, ep: &Endpoint| -> bool {
        let own = participant.owns(ep);
        entries.observe(ep, own, exported(&participant, ep))
    };
    loop {
        tokio::select! {
            _ = &mut stop => break,
            ev = events.recv() => {
                let Some(ev) = ev else { break };
                let mut changed = false;
                let mut next = Some(ev);
                // Take every event already queued before announcing once.
                while let Some(ev) = next.take() {
                    if let DiscoveryEvent::Publication(ep) = ev {
                        changed |= observe(&mut entries, &ep);
                        match ep.alive {
                            true => seen.insert(ep.guid, ep),
                            false => seen.remove(&ep.guid),
                        };
                    }
                    next = events.try_recv().ok();
                }
                if changed {
                    announce(&entries);
                }
            }
            _ = changed.notified() => {
                let mut changed = false;
                for ep in seen.values() {
                    changed |= observe(&mut entries, ep);
                }
                if changed {
                    announce(&entries);
                }
            }
        }
    }
    // The proxy is stopping: its whole process leaves each realm, gateway doors included.
    for (_, a) in announcers {
        a.leave().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRING: &str = "std_msgs::msg::dds_::String_";

    fn ep(n: u8, topic: &str, ty: &str, qos: Qos) -> Endpoint {
        let mut guid = [0u8; 16];
        guid[0] = n;
        guid[15] = 0x03;
        Endpoint {
            guid,
            participant_guid: [0; 16],
            participant_instance_handle: 0,
            topic_name: topic.into(),
            type_name: ty.into(),
            qos,
            user_data: vec![],
            type_info: None,
            alive: true,
        }
    }

    fn none() -> PatternImported {
        Box::new(|_| None)
    }

    fn exported(name: &str) -> Option<(String, String)> {
        Some(("test".into(), name.into()))
    }

    fn imported() -> Vec<Imported> {
        let cfg = ProxyConfig::parse(
            "id: base\npki: /p\nrealms: {test: /r, other: /o}\nimports:\n  - topic: /robot/chatter\n    realm: test\n    as: /chatter\n  - service: /add\n    realm: test\n  - dds_topic: Raw\n    realm: other\n",
            "test.yaml",
        )
        .unwrap();
        imports(&cfg)
    }

    #[test]
    fn imports_are_listed_as_configured_with_the_local_dds_topics_of_their_writers() {
        let i = imported();
        let got: Vec<(&str, ItemKind, &str, &str)> = i
            .iter()
            .map(|i| {
                (
                    i.realm.as_str(),
                    i.kind,
                    i.name.as_str(),
                    i.dds_topic.as_str(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("test", ItemKind::Topic, "/robot/chatter", "rt/chatter"),
                ("test", ItemKind::Service, "/add", "rr/addReply"),
                ("other", ItemKind::Topic, "dds:Raw", "Raw"),
            ]
        );
        let e = Entries::new(i, none());
        let items = e.items("test");
        assert_eq!(items.len(), 2);
        assert!(items
            .iter()
            .all(|i| i.role == Role::Imports && i.types.is_empty()));
        assert_eq!(e.items("other")[0].name, "dds:Raw");
    }

    #[test]
    fn exports_are_listed_while_their_publications_live_with_ros_types_and_qos() {
        let mut e = Entries::new(vec![], none());
        let talker = ep(1, "rt/chatter", STRING, Qos::default());
        assert!(e.observe(&talker, false, exported("/robot/chatter")));
        assert!(
            !e.observe(&talker, false, exported("/robot/chatter")),
            "no change"
        );
        let latched = ep(2, "rt/chatter", STRING, Qos::latched(1));
        assert!(e.observe(&latched, false, exported("/robot/chatter")));
        let server = ep(
            3,
            "rr/addReply",
            "example_interfaces::srv::dds_::AddTwoInts_Response_",
            Qos::default(),
        );
        assert!(e.observe(&server, false, exported("/add#reply")));
        // Not exported: not listed.
        assert!(!e.observe(&ep(4, "rt/private", STRING, Qos::default()), false, None));

        let items = e.items("test");
        assert_eq!(items.len(), 2, "{items:?}");
        let topic = &items[0];
        assert_eq!(
            (topic.kind, topic.role, topic.name.as_str()),
            (ItemKind::Topic, Role::Offers, "/robot/chatter")
        );
        assert_eq!(topic.types, ["std_msgs/msg/String"]);
        assert_eq!(topic.qos.len(), 2, "both publishers' QoS");
        let service = &items[1];
        assert_eq!(
            (service.kind, service.role, service.name.as_str()),
            (ItemKind::Service, Role::Offers, "/add")
        );
        assert_eq!(service.types, ["example_interfaces/srv/AddTwoInts"]);
        assert!(e.items("other").is_empty());

        // The server leaves: the service is no longer offered.
        let mut gone = server.clone();
        gone.alive = false;
        assert!(e.observe(&gone, false, None));
        assert_eq!(e.items("test").len(), 1);
    }

    #[test]
    fn an_imports_types_come_from_the_writers_the_proxy_made_for_it() {
        let mut e = Entries::new(imported(), none());
        // Another participant's writer on the imported topic is not ours: not listed.
        let theirs = ep(1, "rt/chatter", STRING, Qos::default());
        assert!(!e.observe(&theirs, false, None));
        let ours = ep(2, "rt/chatter", STRING, Qos::latched(1));
        assert!(e.observe(&ours, true, None));
        let reply = ep(
            3,
            "rr/addReply",
            "example_interfaces::srv::dds_::AddTwoInts_Response_",
            Qos::default(),
        );
        assert!(e.observe(&reply, true, None));
        // A local client's requests, exported: the service is called from here.
        let client = ep(
            4,
            "rq/addRequest",
            "example_interfaces::srv::dds_::AddTwoInts_Request_",
            Qos::default(),
        );
        assert!(e.observe(&client, false, exported("/add#request")));
        let items = e.items("test");
        assert_eq!(items[0].name, "/robot/chatter");
        assert_eq!(items[0].types, ["std_msgs/msg/String"]);
        assert!(items[0].qos[0].transient_local);
        assert_eq!(items[1].name, "/add");
        assert_eq!(items[1].role, Role::Imports);
        assert_eq!(items[1].types, ["example_interfaces/srv/AddTwoInts"]);
        assert!(items[1].qos.is_empty());
        assert_eq!(items.len(), 2, "one item per name and role: {items:?}");
    }

    #[test]
    fn an_action_is_listed_where_its_goal_service_is_served_or_called() {
        let cfg = ProxyConfig::parse(
            "id: base\npki: /p\nrealms: {test: /r}\nimports:\n  - action: /fibonacci\n    realm: test\n",
            "test.yaml",
        )
        .unwrap();
        let mut e = Entries::new(imports(&cfg), none());
        let server = ep(
            1,
            "rr/navigate/_action/send_goalReply",
            "nav2_msgs::action::dds_::NavigateToPose_SendGoal_Response_",
            Qos::default(),
        );
        assert!(e.observe(
            &server,
            false,
            exported("/navigate/_action/send_goal#reply")
        ));
        let reply = ep(
            2,
            "rr/fibonacci/_action/send_goalReply",
            "example_interfaces::action::dds_::Fibonacci_SendGoal_Response_",
            Qos::default(),
        );
        assert!(e.observe(&reply, true, None));
        let actions: Vec<(String, Role, Vec<String>)> = e
            .items("test")
            .into_iter()
            .filter(|i| i.kind == ItemKind::Action)
            .map(|i| (i.name, i.role, i.types))
            .collect();
        let action = |n: &str, r, t: &str| (n.to_string(), r, vec![t.to_string()]);
        assert_eq!(
            actions,
            [
                action(
                    "/fibonacci",
                    Role::Imports,
                    "example_interfaces/action/Fibonacci"
                ),
                action("/navigate", Role::Offers, "nav2_msgs/action/NavigateToPose"),
            ]
        );
        // Five parts imported, each listed as itself too.
        assert_eq!(e.items("test").len(), 5 + 1 + 2, "{:?}", e.items("test"));
    }
}
