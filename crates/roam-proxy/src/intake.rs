//! Which DDS participant reads an exported topic. Bulk types (camera images, point clouds,
//! maps) are read by a participant on a second CycloneDDS domain instance of the proxy
//! ([`roam_dds::Participant::sibling`]), every other topic by the proxy's participant.
//!
//! Why: CycloneDDS delivers all readers of a domain instance on its receive threads, and a
//! reliable keep-all topic whose link cannot carry it makes its reader's callback wait
//! (back-pressure on the publisher, nothing dropped). With a 13 MB image stream over a lossy
//! path that wait held every small topic of the proxy for up to 1.5 s (lab E12); on the
//! sibling it holds only the other bulk topics. docs/operations.md, "Bulk topics".

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};

use roam_dds::Participant;
use tracing::{info, warn};

use super::rules::ros_type;

/// `dds.bulk_types` when the file does not set it.
pub const DEFAULT_BULK_TYPES: [&str; 4] = [
    "sensor_msgs/msg/Image",
    "sensor_msgs/msg/CompressedImage",
    "sensor_msgs/msg/PointCloud2",
    "nav_msgs/msg/OccupancyGrid",
];

/// The participants exports read with.
pub struct Intake {
    main: Participant,
    /// ROS type names (`pkg/msg/Type`) read on the sibling.
    bulk_types: HashSet<String>,
    announced: AtomicBool,
}

impl Intake {
    /// `bulk_types` as the file gives them (`pkg/msg/Type` or `pkg/Type`; checked by the
    /// configuration), or the defaults.
    pub fn new(main: Participant, bulk_types: Option<&[String]>) -> Intake {
        let bulk_types = match bulk_types {
            Some(list) => list.iter().map(|t| full_name(t)).collect(),
            None => DEFAULT_BULK_TYPES.iter().map(|t| t.to_string()).collect(),
        };
        Intake {
            main,
            bulk_types,
            announced: AtomicBool::new(false),
        }
    }

    /// Whether samples of DDS type `dds_type` (`pkg::msg::dds_::Type_`) are bulk.
    pub fn is_bulk(&self, dds_type: &str) -> bool {
        !self.bulk_types.is_empty() && self.bulk_types.contains(&ros_type(dds_type))
    }

    /// The participant to read `dds_type` with. May create a CycloneDDS domain instance
    /// (the first bulk topic): call it off the async runtime. When the sibling cannot be
    /// made, says why once and reads with the proxy's participant, as without bulk types.
    pub fn participant_for(&self, dds_type: &str) -> Participant {
        if !self.is_bulk(dds_type) {
            return self.main.clone();
        }
        match self.main.sibling() {
            Ok(s) => {
                if !self.announced.swap(true, Ordering::Relaxed) {
                    info!(ty = %ros_type(dds_type), domain = self.main.domain_id(), "bulk topics are read by a second DDS participant of this proxy");
                }
                s
            }
            Err(e) => {
                if !self.announced.swap(true, Ordering::Relaxed) {
                    warn!("bulk topics share the proxy's DDS participant: {e}");
                }
                self.main.clone()
            }
        }
    }
}

/// `pkg/Type` as `pkg/msg/Type`; anything else as given.
fn full_name(t: &str) -> String {
    roam_msg::TypeName::parse(t).map_or_else(|_| t.to_string(), |n| n.full())
}

#[cfg(test)]
mod tests {
    use super::*;
    use roam_dds::loopback_config;

    fn main_participant() -> Participant {
        Participant::new(121, Some(loopback_config())).expect("participant")
    }

    #[test]
    fn images_point_clouds_and_maps_are_bulk_by_default() {
        let i = Intake::new(main_participant(), None);
        assert!(i.is_bulk("sensor_msgs::msg::dds_::Image_"));
        assert!(i.is_bulk("sensor_msgs::msg::dds_::PointCloud2_"));
        assert!(i.is_bulk("nav_msgs::msg::dds_::OccupancyGrid_"));
        assert!(!i.is_bulk("std_msgs::msg::dds_::String_"));
        assert!(!i.is_bulk("DDSPerfRDataKS"));
        let p = i.participant_for("std_msgs::msg::dds_::String_");
        assert_eq!(
            p.guid(),
            i.main.guid(),
            "small topics: the proxy's participant"
        );
        let s = i.participant_for("sensor_msgs::msg::dds_::Image_");
        assert_ne!(s.guid(), i.main.guid(), "bulk: the sibling");
        assert_ne!(s.domain_id(), i.main.domain_id());
    }

    #[test]
    fn the_file_replaces_the_list_and_an_empty_one_turns_it_off() {
        let list = vec!["my_msgs/Scan3d".to_string()];
        let i = Intake::new(main_participant(), Some(&list));
        assert!(i.is_bulk("my_msgs::msg::dds_::Scan3d_"));
        assert!(!i.is_bulk("sensor_msgs::msg::dds_::Image_"));
        let off = Intake::new(main_participant(), Some(&[]));
        assert!(!off.is_bulk("sensor_msgs::msg::dds_::Image_"));
        let p = off.participant_for("sensor_msgs::msg::dds_::Image_");
        assert_eq!(p.guid(), off.main.guid());
    }

    #[test]
    fn a_domain_specific_configuration_keeps_bulk_topics_on_the_main_participant() {
        let xml = format!(
            "<CycloneDDS><Domain id=\"122\">{}</Domain></CycloneDDS>",
            loopback_config()
        );
        let main = Participant::new(122, Some(&xml)).expect("participant");
        let i = Intake::new(main, None);
        let p = i.participant_for("sensor_msgs::msg::dds_::Image_");
        assert_eq!(p.guid(), i.main.guid());
    }
}
