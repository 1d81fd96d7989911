//! Any bytes as JSON and as CBOR into the encoder, for a fixed set of types (the first byte
//! picks one): never panics; what encodes decodes, and its JSON encodes to the same CDR.
#![no_main]

mod msg_types;

use libfuzzer_sys::fuzz_target;
use roam_msg::EncodeOptions;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, input)) = data.split_first() else {
        return;
    };
    let types = msg_types::types();
    let ty = &types[pick as usize % types.len()];
    let opts = EncodeOptions::default();
    for cdr in [
        {
            let mut o = Vec::new();
            ty.json_to_cdr(input, &opts, &mut o).ok().map(|_| o)
        },
        {
            let mut o = Vec::new();
            ty.cbor_to_cdr(input, &opts, &mut o).ok().map(|_| o)
        },
    ]
    .into_iter()
    .flatten()
    {
        let mut json = Vec::new();
        ty.cdr_to_json(&cdr, &mut json)
            .expect("what we encode decodes");
        let mut again = Vec::new();
        ty.json_to_cdr(&json, &opts, &mut again)
            .expect("what we decode encodes");
        // NaN payloads and infinities are the only things JSON cannot carry.
        if !json.windows(4).any(|w| w == b"null") {
            assert_eq!(again, cdr);
        }
    }
});
