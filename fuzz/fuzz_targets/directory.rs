//! Any bytes through the directory-entry decoder (what every realm member seals on its realm's
//! directory name): never panics, and whatever decodes re-encodes to something that decodes
//! the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use roam_proto::directory::DirectoryEntry;

fuzz_target!(|data: &[u8]| {
    if let Ok(e) = DirectoryEntry::decode(data) {
        let again = DirectoryEntry::decode(&e.encode()).expect("an encoded entry decodes");
        assert_eq!(again, e);
    }
});
