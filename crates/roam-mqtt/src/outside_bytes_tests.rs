//! Whatever a broker delivers, the decoders answer with a value or an error, never a panic,
//! and their work is bounded by the input.

use bytes::Bytes;
use proptest::prelude::*;

use crate::convert::Inbound;
use crate::params::{Durability, Mqtt2Ros, MqttQos, Reliability};
use crate::{primitive, wire, RosMsgType};

fn entry(primitive: bool, ros_type: Option<&str>) -> Mqtt2Ros {
    Mqtt2Ros {
        mqtt_topic: "t".into(),
        ros_topic: "/t".into(),
        primitive,
        json: false,
        ros_type: ros_type.map(str::to_string),
        mqtt_qos: MqttQos::AtMostOnce,
        queue_size: 1,
        latched: false,
        reliability: Reliability::SystemDefault,
        durability: Durability::SystemDefault,
        realm: None,
    }
}

proptest! {
    #[test]
    fn any_bytes_decode_to_a_value_or_an_error(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = RosMsgType::decode(&bytes);
        let _ = wire::split_stamped(&bytes);
        let _ = wire::decode_stamp(&bytes);
        for t in primitive::TYPES {
            let name = format!("std_msgs/msg/{t}");
            let _ = primitive::to_text(&name, &bytes);
            let _ = primitive::parse_fixed(&name, &bytes);
        }
        let _ = primitive::probe(&bytes);
        let payload = Bytes::from(bytes.clone());
        for (p, ty) in [(false, None), (false, Some("std_msgs/msg/String")), (true, None), (true, Some("std_msgs/msg/UInt8"))] {
            let mut inb = Inbound::new(entry(p, ty), None).unwrap();
            let _ = inb.on_message("mqtt_client/ros_msg_type/t", &payload, 0);
            let _ = inb.on_message("t", &payload, 0);
        }
    }

    #[test]
    fn a_type_message_round_trips(name in "[a-z_]{1,12}/msg/[A-Z][a-zA-Z0-9]{0,12}", stamped in any::<bool>()) {
        let t = RosMsgType { name, stamped, ..Default::default() };
        prop_assert_eq!(RosMsgType::decode(&t.encode()).unwrap(), t);
    }
}
