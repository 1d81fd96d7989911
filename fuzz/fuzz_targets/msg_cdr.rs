//! Any bytes through the CDR decoder, for a fixed set of types (the first byte picks one):
//! never panics; what decodes to JSON encodes back, and CDR -> CBOR -> CDR keeps the bytes
//! up to end padding.
#![no_main]

mod msg_types;

use libfuzzer_sys::fuzz_target;
use roam_msg::{EncodeOptions, Endian};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, cdr)) = data.split_first() else {
        return;
    };
    let types = msg_types::types();
    let ty = &types[pick as usize % types.len()];
    let mut json = Vec::new();
    if ty.cdr_to_json(cdr, &mut json).is_ok() {
        let endian = Endian::of(cdr).expect("decoded, so the header is known");
        let mut again = Vec::new();
        ty.json_to_cdr(&json, &EncodeOptions { endian, now: None }, &mut again)
            .expect("decoded JSON encodes");
        let mut cbor = Vec::new();
        ty.cdr_to_cbor(cdr, &mut cbor)
            .expect("decodes to JSON, so to CBOR too");
        let mut back = Vec::new();
        ty.cbor_to_cdr(&cbor, &EncodeOptions { endian, now: None }, &mut back)
            .expect("our CBOR encodes");
        // Headers' option bytes, hidden empty-struct bytes, bool bytes and end padding are
        // normalised; the decoded JSON must be the same.
        let mut json2 = Vec::new();
        ty.cdr_to_json(&back, &mut json2).expect("our CDR decodes");
        assert_eq!(json, json2);
    }
});
