//! The realm-side names of a topic, and the conventions every door shares.
//!
//! - A ROS 2 topic is named by its ROS name (`/chatter`); a plain DDS topic that is not a
//!   ROS 2 one by `dds:<DDS topic name>` ([`dds_topic`]); the two topics of a ROS 2 service by
//!   `<service>#request` and `<service>#reply` ([`service_request`], [`service_reply`]).
//! - A topic's data travels on one 256-bit name per type: `descriptor(topic, ROS type)`
//!   ([`data_descriptor`]), so both ends agree on it from the topic and the type alone.
//! - What its exporters announce (streams, QoS, definitions: [`roam_proto::meta`]) travels on
//!   `descriptor(topic, "roam/meta/v2")` ([`meta_descriptor`]).

use roam_proto::{Kind, TopicDescriptor};

use crate::ros_names::type_from_dds;

/// The type field of the metadata name's descriptor (version 2: stream announcements).
pub const META_TYPE: &str = "roam/meta/v2";

/// The realm-side name of a plain DDS topic (not a ROS 2 one), forwarded under its DDS name.
pub fn dds_topic(dds_name: &str) -> String {
    format!("dds:{dds_name}")
}

/// The realm-side name of a ROS 2 service's requests.
pub fn service_request(service: &str) -> String {
    format!("{service}#request")
}

/// The realm-side name of a ROS 2 service's replies.
pub fn service_reply(service: &str) -> String {
    format!("{service}#reply")
}

/// The descriptor of a realm topic's announcements.
pub fn meta_descriptor(realm_topic: &str) -> TopicDescriptor {
    TopicDescriptor {
        topic: realm_topic.into(),
        type_name: META_TYPE.into(),
        kind: Kind::Topic,
        instance: String::new(),
    }
}

/// The descriptor of a realm topic's data of one type (a DDS type name or a ROS one: both
/// name the same data), named by the ROS form so every end agrees on it.
pub fn data_descriptor(realm_topic: &str, ty: &str) -> TopicDescriptor {
    TopicDescriptor::topic(realm_topic, &type_from_dds(ty))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_and_data_have_different_names_and_type_spellings_agree() {
        let realm = roam_proto::RealmSecret::from_bytes([1; 32]);
        assert_ne!(
            meta_descriptor("/a").name(&realm),
            data_descriptor("/a", "x::msg::dds_::Y_").name(&realm)
        );
        assert_eq!(
            data_descriptor("/a", "x::msg::dds_::Y_").name(&realm),
            data_descriptor("/a", "x/msg/Y").name(&realm)
        );
        assert_eq!(service_request("/s"), "/s#request");
        assert_eq!(dds_topic("DDSPerfRDataKS"), "dds:DDSPerfRDataKS");
    }
}
