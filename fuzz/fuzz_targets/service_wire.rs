//! Any bytes through the service and action wire codecs of the edge layer (what a service
//! client, server or action handle reads from the realm): never panics; a sample that splits
//! joins back to the same bytes, and what the action readers decode encodes back to something
//! that decodes the same.
#![no_main]

// The codecs are pure: their sources are compiled here as they are in roam-edge, so the fuzz
// build does not pull in the edge layer's network stack.
#[path = "../../crates/roam-edge/src/service/wire.rs"]
pub mod service_wire_src;
#[path = "../../crates/roam-edge/src/action/wire.rs"]
pub mod action_wire_src;
// The paths the action codec names its service sibling by.
mod service {
    pub use super::service_wire_src as wire;
}

use libfuzzer_sys::fuzz_target;
use roam_msg::Endian;
use action_wire_src as action;
use service::wire;

fuzz_target!(|data: &[u8]| {
    let mut body = Vec::new();
    if let Ok(h) = wire::body(data, &mut body) {
        let mut again = Vec::new();
        wire::join(h.id, &body, &mut again).expect("a split sample's body joins");
        assert_eq!(again, data);
    }
    let endian = Endian::of(data).unwrap_or_default();
    if let Ok(list) = action::decode_status_array(data) {
        let again = action::encode_status_array(&list, endian);
        assert_eq!(
            action::decode_status_array(&again).expect("ours decodes"),
            list
        );
    }
    if let Ok(r) = action::decode_cancel_response(data) {
        let again = action::encode_cancel_response(&r, endian);
        assert_eq!(
            action::decode_cancel_response(&again).expect("ours decodes"),
            r
        );
    }
    if let Ok(g) = action::decode_cancel_request(data) {
        let again = action::encode_cancel_request(&g, endian);
        assert_eq!(
            action::decode_cancel_request(&again).expect("ours decodes"),
            g
        );
    }
    if let Ok((accepted, stamp)) = action::decode_send_goal_response(data) {
        let again = action::encode_send_goal_response(accepted, stamp, endian);
        assert_eq!(
            action::decode_send_goal_response(&again).expect("ours decodes"),
            (accepted, stamp)
        );
    }
    let _ = action::decode_get_result_request(data);
    let _ = action::result_status(data);
    let _ = action::split_goal_id(data, &mut body);
});
