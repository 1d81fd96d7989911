//! Any bytes through the topic-announcement decoder (what an exporter seals on a metadata
//! name): never panics, and whatever decodes re-encodes to something that decodes the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use roam_proto::meta::TopicAnnouncement;

fuzz_target!(|data: &[u8]| {
    if let Ok(a) = TopicAnnouncement::decode(data) {
        let again = TopicAnnouncement::decode(&a.encode()).expect("an encoded announcement decodes");
        assert_eq!(again, a);
    }
});
