//! The channels and services a Foxglove client is offered, numbered. Pure.
//!
//! [`Numbering`] gives every (topic, type, schema) of the realm's listing a channel id, and
//! every (service, type, schemas) a service id, kept while it stays the same (the protocol
//! lets a server reuse an id only for the exact same channel; clients cache schemas by id).
//! [`View`] is what one client was told: each new [`Snapshot`] becomes the advertise and
//! unadvertise messages that bring it up to date, filtered by what the client may see.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A topic of the realm as a channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelInfo {
    pub id: u64,
    pub topic: String,
    /// `pkg/msg/Type`, the channel's `schemaName`.
    pub ros_type: String,
    /// The ros2msg text: the type, then each dependency after a `MSG: pkg/Type` line.
    pub schema: Arc<str>,
}

/// A service of the realm.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceInfo {
    pub id: u32,
    pub name: String,
    /// `pkg/srv/Type`.
    pub srv_type: String,
    /// `pkg/srv/Type_Request`, as ROS 2 names the request message.
    pub request_name: String,
    pub request_schema: Arc<str>,
    pub response_name: String,
    pub response_schema: Arc<str>,
}

/// What the realm offers now, with ids.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    pub channels: Vec<Arc<ChannelInfo>>,
    pub services: Vec<Arc<ServiceInfo>>,
}

/// A topic with its type and schema, as found in the listing.
pub type TopicEntry = (String, String, Arc<str>);

/// A service with its type and the request and response schemas.
pub type ServiceEntry = (String, String, Arc<str>, Arc<str>);

/// Ids remembered at most; beyond it, only those of what exists now are kept.
const REMEMBERED: usize = 4096;

/// Ids for channels and services, stable while what they name stays the same.
#[derive(Debug)]
pub struct Numbering {
    channels: HashMap<TopicEntry, u64>,
    services: HashMap<ServiceEntry, u32>,
    next_channel: u64,
    next_service: u32,
}

impl Default for Numbering {
    fn default() -> Self {
        Self {
            channels: HashMap::new(),
            services: HashMap::new(),
            next_channel: 1,
            next_service: 1,
        }
    }
}

impl Numbering {
    /// The snapshot of `topics` and `services` (each sorted by name), numbered.
    pub fn snapshot(&mut self, topics: Vec<TopicEntry>, services: Vec<ServiceEntry>) -> Snapshot {
        if self.channels.len() + topics.len() > REMEMBERED {
            self.channels.retain(|k, _| topics.contains(k));
        }
        if self.services.len() + services.len() > REMEMBERED {
            self.services.retain(|k, _| services.contains(k));
        }
        let mut snap = Snapshot::default();
        for t in topics {
            let id = *self.channels.entry(t.clone()).or_insert_with(|| {
                let id = self.next_channel;
                self.next_channel += 1;
                id
            });
            let (topic, ros_type, schema) = t;
            snap.channels.push(Arc::new(ChannelInfo {
                id,
                topic,
                ros_type,
                schema,
            }));
        }
        for s in services {
            let id = *self.services.entry(s.clone()).or_insert_with(|| {
                // Wraps after 4 billion distinct services; a u32 is the protocol's width.
                let id = self.next_service;
                self.next_service = self.next_service.wrapping_add(1).max(1);
                id
            });
            let (name, srv_type, request_schema, response_schema) = s;
            snap.services.push(Arc::new(ServiceInfo {
                id,
                request_name: format!("{srv_type}_Request"),
                response_name: format!("{srv_type}_Response"),
                name,
                srv_type,
                request_schema,
                response_schema,
            }));
        }
        snap.channels.sort_by(|a, b| a.topic.cmp(&b.topic));
        snap.services.sort_by(|a, b| a.name.cmp(&b.name));
        snap
    }
}

/// What a client has to be told to match a new snapshot.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub advertise: Vec<Arc<ChannelInfo>>,
    pub unadvertise: Vec<u64>,
    pub advertise_services: Vec<Arc<ServiceInfo>>,
    pub unadvertise_services: Vec<u32>,
}

/// The channels and services one client was told about.
#[derive(Debug, Default)]
pub struct View {
    channels: BTreeMap<u64, Arc<ChannelInfo>>,
    services: BTreeMap<u32, Arc<ServiceInfo>>,
}

impl View {
    /// Brings the view to `snap`, keeping the channels whose topic `may_subscribe` allows and
    /// the services `may_call` allows.
    pub fn update(
        &mut self,
        snap: &Snapshot,
        may_subscribe: impl Fn(&str) -> bool,
        may_call: impl Fn(&str) -> bool,
    ) -> Changes {
        let mut ch = Changes::default();
        let channels: BTreeMap<u64, Arc<ChannelInfo>> = snap
            .channels
            .iter()
            .filter(|c| may_subscribe(&c.topic))
            .map(|c| (c.id, c.clone()))
            .collect();
        ch.unadvertise = self
            .channels
            .keys()
            .filter(|id| !channels.contains_key(id))
            .copied()
            .collect();
        ch.advertise = channels
            .values()
            .filter(|c| !self.channels.contains_key(&c.id))
            .cloned()
            .collect();
        self.channels = channels;
        let services: BTreeMap<u32, Arc<ServiceInfo>> = snap
            .services
            .iter()
            .filter(|s| may_call(&s.name))
            .map(|s| (s.id, s.clone()))
            .collect();
        ch.unadvertise_services = self
            .services
            .keys()
            .filter(|id| !services.contains_key(id))
            .copied()
            .collect();
        ch.advertise_services = services
            .values()
            .filter(|s| !self.services.contains_key(&s.id))
            .cloned()
            .collect();
        self.services = services;
        ch
    }

    pub fn channel(&self, id: u64) -> Option<&Arc<ChannelInfo>> {
        self.channels.get(&id)
    }

    pub fn service(&self, id: u32) -> Option<&Arc<ServiceInfo>> {
        self.services.get(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topic(name: &str, ty: &str, schema: &str) -> TopicEntry {
        (name.into(), ty.into(), schema.into())
    }

    #[test]
    fn ids_stay_while_the_channel_is_the_same() {
        let mut n = Numbering::default();
        let s = n.snapshot(
            vec![
                topic("/b", "std_msgs/msg/String", "string data\n"),
                topic("/a", "std_msgs/msg/String", "string data\n"),
            ],
            vec![],
        );
        let ids: Vec<(&str, u64)> = s
            .channels
            .iter()
            .map(|c| (c.topic.as_str(), c.id))
            .collect();
        assert_eq!(ids, [("/a", 2), ("/b", 1)]);
        // /b goes and comes back the same: its id again; /a changes type: a new id.
        let s = n.snapshot(
            vec![topic("/a", "std_msgs/msg/Int32", "int32 data\n")],
            vec![],
        );
        assert_eq!(s.channels[0].id, 3);
        let s = n.snapshot(
            vec![
                topic("/a", "std_msgs/msg/Int32", "int32 data\n"),
                topic("/b", "std_msgs/msg/String", "string data\n"),
            ],
            vec![(
                "/add".into(),
                "example_interfaces/srv/AddTwoInts".into(),
                "int64 a\nint64 b\n".into(),
                "int64 sum\n".into(),
            )],
        );
        assert_eq!(s.channels[1].id, 1);
        assert_eq!(s.services[0].id, 1);
        assert_eq!(
            s.services[0].request_name,
            "example_interfaces/srv/AddTwoInts_Request"
        );
        assert_eq!(
            s.services[0].response_name,
            "example_interfaces/srv/AddTwoInts_Response"
        );
    }

    #[test]
    fn remembered_ids_are_bounded() {
        let mut n = Numbering::default();
        for i in 0..(REMEMBERED + 10) {
            n.snapshot(vec![topic(&format!("/t{i}"), "a/msg/B", "")], vec![]);
        }
        assert!(n.channels.len() <= REMEMBERED);
    }

    #[test]
    fn a_view_is_told_what_changed_and_only_what_it_may_see() {
        let mut n = Numbering::default();
        let mut v = View::default();
        let s1 = n.snapshot(
            vec![
                topic("/a", "x/msg/A", "int8 a\n"),
                topic("/secret", "x/msg/A", "int8 a\n"),
            ],
            vec![(
                "/add".into(),
                "x/srv/Add".into(),
                "int64 a\n".into(),
                "int64 b\n".into(),
            )],
        );
        let ch = v.update(&s1, |t| t != "/secret", |_| false);
        let adv: Vec<&str> = ch.advertise.iter().map(|c| c.topic.as_str()).collect();
        assert_eq!(adv, ["/a"]);
        assert!(ch.advertise_services.is_empty());
        assert!(v.channel(s1.channels[1].id).is_none());
        // Nothing new: nothing to say.
        assert_eq!(
            v.update(&s1, |t| t != "/secret", |_| false),
            Changes::default()
        );
        let s2 = n.snapshot(vec![topic("/b", "x/msg/A", "int8 a\n")], s1_services(&s1));
        let ch = v.update(&s2, |_| true, |_| true);
        assert_eq!(ch.unadvertise, [s1.channels[0].id]);
        assert_eq!(ch.advertise[0].topic, "/b");
        assert_eq!(ch.advertise_services.len(), 1);
        assert_eq!(v.service(ch.advertise_services[0].id).unwrap().name, "/add");
    }

    fn s1_services(s: &Snapshot) -> Vec<ServiceEntry> {
        s.services
            .iter()
            .map(|s| {
                (
                    s.name.clone(),
                    s.srv_type.clone(),
                    s.request_schema.clone(),
                    s.response_schema.clone(),
                )
            })
            .collect()
    }
}
