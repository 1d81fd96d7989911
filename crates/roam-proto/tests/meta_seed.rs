//! Writes the fuzz seed for topic announcements when ROAM_WRITE_FUZZ_SEEDS is set; always
//! checks that the committed seed still decodes (so the fuzzer starts from valid input).

use roam_proto::meta::{StreamAnnouncement, StreamQos, TopicAnnouncement, TypeDefinition, XTypes};

fn sample() -> TopicAnnouncement {
    TopicAnnouncement {
        exporter: "robot-7".into(),
        streams: vec![
            StreamAnnouncement {
                id: 1,
                session: 2,
                dds_type: "std_msgs::msg::dds_::String_".into(),
                keyed: false,
                qos: StreamQos {
                    reliable: true,
                    transient_local: true,
                    depth: 1,
                },
                xtypes: None,
                type_hash: Some(
                    "RIHS01_df668c740482bbd48fb39d76a70dfd4bd59db1288021743503259e948f6b1a18"
                        .into(),
                ),
            },
            StreamAnnouncement {
                id: 3,
                session: 4,
                dds_type: "fleet::RobotState".into(),
                keyed: true,
                qos: StreamQos {
                    reliable: false,
                    transient_local: false,
                    depth: 0,
                },
                xtypes: Some(XTypes {
                    type_information: vec![1, 2, 3],
                    type_mapping: vec![4, 5],
                }),
                type_hash: None,
            },
        ],
        definitions: vec![TypeDefinition {
            dds_type: "std_msgs::msg::dds_::String_".into(),
            text: "string data\n".into(),
        }],
    }
}

#[test]
fn the_committed_fuzz_seed_is_a_valid_announcement() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fuzz/seeds/meta/two_streams"
    );
    if std::env::var_os("ROAM_WRITE_FUZZ_SEEDS").is_some() {
        std::fs::write(path, sample().encode()).unwrap();
    }
    let bytes = std::fs::read(path).expect("fuzz/seeds/meta/two_streams");
    assert_eq!(TopicAnnouncement::decode(&bytes).unwrap(), sample());
}
