//! Which service convention a local DDS endpoint speaks. Pure: no DDS, no I/O.
//!
//! ROS 2 services are two DDS topics, and the RMWs disagree on where a call's identity goes:
//!
//! - **cyclonedds** (rmw_cyclonedds): a 16-byte header (client id, sequence number) at the
//!   front of every request and reply payload. This is also the realm's convention
//!   (`roam_edge::service::wire`), so such samples cross verbatim.
//! - **fastdds** (rmw_fastrtps, rmw_connextdds, ros2-client's default "Enhanced" mapping):
//!   no header; a request is known by its RTPS sample identity (writer GUID, sequence
//!   number) and a reply names it in the inline QoS `related_sample_identity`.
//!
//! A proxy tells them apart per endpoint, by the vendor id at the head of the endpoint's GUID
//! prefix (every one of these DDS implementations puts its vendor id there), unless the
//! service's entry in the configuration says `convention: cyclonedds` or `fastdds`.

use roam_dds::Guid;
use serde::Deserialize;

/// Where a service call's identity travels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Convention {
    /// In a header at the front of the payload (rmw_cyclonedds; the realm's own).
    Cyclone,
    /// Beside the payload, as the sample identity and `related_sample_identity`.
    Fast,
}

/// A service entry's `convention:`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Deserialize)]
pub enum Setting {
    /// By each endpoint's vendor ([`by_vendor`]).
    #[default]
    #[serde(rename = "auto")]
    Auto,
    /// Every local endpoint of the service speaks rmw_cyclonedds's convention.
    #[serde(rename = "cyclonedds")]
    Cyclone,
    /// Every local endpoint of the service speaks rmw_fastrtps's convention.
    #[serde(rename = "fastdds")]
    Fast,
}

/// RTPS vendor ids (the OMG's list) of the implementations a ROS 2 node may run on.
pub const VENDOR_RTI: [u8; 2] = [0x01, 0x01];
pub const VENDOR_EPROSIMA: [u8; 2] = [0x01, 0x0f];
pub const VENDOR_ECLIPSE: [u8; 2] = [0x01, 0x10];
pub const VENDOR_RUSTDDS: [u8; 2] = [0x01, 0x12];

/// The vendor id at the head of a GUID.
pub fn vendor(guid: &Guid) -> [u8; 2] {
    [guid[0], guid[1]]
}

/// The DDS implementation a vendor id names, for logs.
pub fn vendor_name(v: [u8; 2]) -> &'static str {
    match v {
        VENDOR_RTI => "RTI Connext",
        VENDOR_EPROSIMA => "Fast DDS",
        VENDOR_ECLIPSE => "CycloneDDS",
        VENDOR_RUSTDDS => "RustDDS",
        _ => "an unknown DDS",
    }
}

/// The convention `auto` assumes for a vendor: what its usual ROS 2 client library does.
/// Fast DDS (rmw_fastrtps), RTI Connext (rmw_connextdds) and RustDDS (ros2-client, whose own
/// services use its "Enhanced" mapping) carry the identity beside the payload; CycloneDDS and
/// vendors we do not know get the realm's convention, which forwards samples unchanged.
pub fn by_vendor(v: [u8; 2]) -> Convention {
    match v {
        VENDOR_EPROSIMA | VENDOR_RTI | VENDOR_RUSTDDS => Convention::Fast,
        _ => Convention::Cyclone,
    }
}

/// The convention of the local endpoint `guid` of a service whose entry says `setting`.
pub fn classify(setting: Setting, guid: &Guid) -> Convention {
    match setting {
        Setting::Auto => by_vendor(vendor(guid)),
        Setting::Cyclone => Convention::Cyclone,
        Setting::Fast => Convention::Fast,
    }
}

/// `_Request_` type -> `_Response_` type and back, e.g.
/// `example_interfaces::srv::dds_::AddTwoInts_Request_` ->
/// `example_interfaces::srv::dds_::AddTwoInts_Response_`. `None` for other names.
pub fn reply_type_of(request: &str) -> Option<String> {
    request
        .strip_suffix("_Request_")
        .map(|s| format!("{s}_Response_"))
}

/// The request type for a reply type (see [`reply_type_of`]).
pub fn request_type_of(reply: &str) -> Option<String> {
    reply
        .strip_suffix("_Response_")
        .map(|s| format!("{s}_Request_"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guid(v: [u8; 2]) -> Guid {
        let mut g = [7; 16];
        g[..2].copy_from_slice(&v);
        g
    }

    #[test]
    fn auto_goes_by_the_vendor_at_the_head_of_the_guid() {
        assert_eq!(
            classify(Setting::Auto, &guid(VENDOR_EPROSIMA)),
            Convention::Fast
        );
        assert_eq!(classify(Setting::Auto, &guid(VENDOR_RTI)), Convention::Fast);
        assert_eq!(
            classify(Setting::Auto, &guid(VENDOR_RUSTDDS)),
            Convention::Fast
        );
        assert_eq!(
            classify(Setting::Auto, &guid(VENDOR_ECLIPSE)),
            Convention::Cyclone
        );
        assert_eq!(
            classify(Setting::Auto, &guid([0xab, 0xcd])),
            Convention::Cyclone
        );
        assert_eq!(vendor_name(VENDOR_EPROSIMA), "Fast DDS");
        assert_eq!(vendor_name([9, 9]), "an unknown DDS");
    }

    #[test]
    fn an_explicit_setting_wins_over_the_vendor() {
        for v in [VENDOR_EPROSIMA, VENDOR_ECLIPSE, VENDOR_RUSTDDS, [0, 0]] {
            assert_eq!(classify(Setting::Fast, &guid(v)), Convention::Fast);
            assert_eq!(classify(Setting::Cyclone, &guid(v)), Convention::Cyclone);
        }
    }

    #[test]
    fn settings_parse_from_yaml_words() {
        let s: Setting = serde_yaml_ng::from_str("fastdds").unwrap();
        assert_eq!(s, Setting::Fast);
        let s: Setting = serde_yaml_ng::from_str("cyclonedds").unwrap();
        assert_eq!(s, Setting::Cyclone);
        let s: Setting = serde_yaml_ng::from_str("auto").unwrap();
        assert_eq!(s, Setting::Auto);
        assert!(serde_yaml_ng::from_str::<Setting>("fast").is_err());
    }

    #[test]
    fn request_and_reply_types_pair_up() {
        let rq = "example_interfaces::srv::dds_::AddTwoInts_Request_";
        let rr = "example_interfaces::srv::dds_::AddTwoInts_Response_";
        assert_eq!(reply_type_of(rq).as_deref(), Some(rr));
        assert_eq!(request_type_of(rr).as_deref(), Some(rq));
        assert_eq!(reply_type_of("std_msgs::msg::dds_::String_"), None);
        assert_eq!(request_type_of(rq), None);
    }
}
