//! Whatever a broker delivers, the decoders answer with a value or an error, never a panic,
//! and their work is bounded by the input.

use proptest::prelude::*;

use crate::{primitive, wire, RosMsgType};

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
    }

    #[test]
    fn a_type_message_round_trips(name in "[a-z_]{1,12}/msg/[A-Z][a-zA-Z0-9]{0,12}", stamped in any::<bool>()) {
        let t = RosMsgType { name, stamped, ..Default::default() };
        prop_assert_eq!(RosMsgType::decode(&t.encode()).unwrap(), t);
    }
}
