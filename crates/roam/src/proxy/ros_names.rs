//! How ROS 2 names appear on the DDS wire (the rmw conventions all vendors share).
//!
//! | ROS 2                          | DDS topic                     | DDS type                                   |
//! |--------------------------------|-------------------------------|--------------------------------------------|
//! | topic `/chatter`               | `rt/chatter`                  | `std_msgs::msg::dds_::String_`             |
//! | service `/add` request         | `rq/addRequest`               | `example_interfaces::srv::dds_::AddTwoInts_Request_` |
//! | service `/add` reply           | `rr/addReply`                 | `example_interfaces::srv::dds_::AddTwoInts_Response_` |

/// What a DDS topic is, seen from ROS 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RosEndpoint {
    Topic(String),
    ServiceRequest(String),
    ServiceReply(String),
}

/// Maps a DDS topic name to the ROS 2 name it carries; `None` for non-ROS topics
/// (e.g. `DCPSParticipant`, `ros_discovery_info` has no prefix and is handled apart).
pub fn ros_endpoint(dds_topic: &str) -> Option<RosEndpoint> {
    if let Some(rest) = dds_topic.strip_prefix("rt/") {
        return Some(RosEndpoint::Topic(format!("/{rest}")));
    }
    if let Some(rest) = dds_topic
        .strip_prefix("rq/")
        .and_then(|r| r.strip_suffix("Request"))
    {
        return Some(RosEndpoint::ServiceRequest(format!("/{rest}")));
    }
    if let Some(rest) = dds_topic
        .strip_prefix("rr/")
        .and_then(|r| r.strip_suffix("Reply"))
    {
        return Some(RosEndpoint::ServiceReply(format!("/{rest}")));
    }
    None
}

/// The DDS topic of a ROS 2 topic: `/a/b` -> `rt/a/b`.
pub fn topic_to_dds(ros: &str) -> String {
    format!("rt/{}", ros.trim_start_matches('/'))
}

/// The DDS request and reply topics of a ROS 2 service.
pub fn service_to_dds(ros: &str) -> (String, String) {
    let n = ros.trim_start_matches('/');
    (format!("rq/{n}Request"), format!("rr/{n}Reply"))
}

/// `std_msgs::msg::dds_::String_` -> `std_msgs/msg/String`; other names unchanged.
pub fn type_from_dds(dds: &str) -> String {
    let parts: Vec<&str> = dds.split("::").collect();
    match parts.as_slice() {
        [pkg, kind, "dds_", name] => {
            format!("{pkg}/{kind}/{}", name.strip_suffix('_').unwrap_or(name))
        }
        _ => dds.to_string(),
    }
}

/// `std_msgs/msg/String` -> `std_msgs::msg::dds_::String_`; other names unchanged.
pub fn type_to_dds(ros: &str) -> String {
    let parts: Vec<&str> = ros.split('/').collect();
    match parts.as_slice() {
        [pkg, kind, name] if !pkg.is_empty() && !name.is_empty() => {
            format!("{pkg}::{kind}::dds_::{name}_")
        }
        _ => ros.to_string(),
    }
}

/// A valid ROS 2 topic name (absolute, no empty or odd tokens): what config files may name.
pub fn check_ros_name(name: &str) -> Result<(), String> {
    if !name.starts_with('/') {
        return Err(format!("{name:?} must be absolute (start with '/')"));
    }
    if name.len() > 1 && name.ends_with('/') {
        return Err(format!("{name:?} must not end with '/'"));
    }
    for token in name[1..].split('/') {
        let ok = !token.is_empty()
            && !token.starts_with(|c: char| c.is_ascii_digit())
            && token.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !ok {
            return Err(format!("{name:?}: token {token:?} may hold only letters, digits and '_', not start with a digit"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_services_and_types_map_both_ways() {
        assert_eq!(topic_to_dds("/chatter"), "rt/chatter");
        assert_eq!(
            ros_endpoint("rt/robot/odom"),
            Some(RosEndpoint::Topic("/robot/odom".into()))
        );
        assert_eq!(
            service_to_dds("/add"),
            ("rq/addRequest".into(), "rr/addReply".into())
        );
        assert_eq!(
            ros_endpoint("rq/addRequest"),
            Some(RosEndpoint::ServiceRequest("/add".into()))
        );
        assert_eq!(
            ros_endpoint("rr/addReply"),
            Some(RosEndpoint::ServiceReply("/add".into()))
        );
        assert_eq!(ros_endpoint("DCPSParticipant"), None);
        assert_eq!(
            type_to_dds("std_msgs/msg/String"),
            "std_msgs::msg::dds_::String_"
        );
        assert_eq!(
            type_from_dds("std_msgs::msg::dds_::String_"),
            "std_msgs/msg/String"
        );
        assert_eq!(type_from_dds("KeyedSeq"), "KeyedSeq");
        assert_eq!(type_to_dds("KeyedSeq"), "KeyedSeq");
        for t in [
            "sensor_msgs/msg/LaserScan",
            "example_interfaces/srv/AddTwoInts_Request",
        ] {
            assert_eq!(type_from_dds(&type_to_dds(t)), t);
        }
    }

    #[test]
    fn config_names_are_checked() {
        assert!(check_ros_name("/robot_7/odom").is_ok());
        assert!(check_ros_name("chatter").unwrap_err().contains("absolute"));
        assert!(check_ros_name("/a//b").is_err());
        assert!(check_ros_name("/7up").is_err());
        assert!(check_ros_name("/a-b").is_err());
    }
}
