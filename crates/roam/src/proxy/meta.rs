//! The realm names of a topic: its data (one name per DDS type) and its announcements (what
//! an exporter publishes on it: [`roam_proto::meta::TopicAnnouncement`]).

use roam_proto::{Kind, TopicDescriptor};

/// The type field of the metadata name's descriptor (version 2: stream announcements).
pub const META_TYPE: &str = "roam/meta/v2";

/// The descriptor of a realm topic's metadata.
pub fn meta_descriptor(realm_topic: &str) -> TopicDescriptor {
    TopicDescriptor {
        topic: realm_topic.into(),
        type_name: META_TYPE.into(),
        kind: Kind::Topic,
        instance: String::new(),
    }
}

/// The descriptor of a realm topic's data: named by its ROS type, so both ends agree on it.
pub fn data_descriptor(realm_topic: &str, dds_type: &str) -> TopicDescriptor {
    TopicDescriptor::topic(realm_topic, &super::ros_names::type_from_dds(dds_type))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_and_data_have_different_names() {
        let realm = roam_proto::RealmSecret::from_bytes([1; 32]);
        assert_ne!(
            meta_descriptor("/a").name(&realm),
            data_descriptor("/a", "x::msg::dds_::Y_").name(&realm)
        );
    }
}
