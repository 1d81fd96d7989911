//! Any rosbridge v2 client message (roam_gateway::rosbridge::ops), JSON text or CBOR: parsed
//! into an operation or refused, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use roam_gateway::rosbridge::ops::{parse_cbor, parse_json};

fuzz_target!(|data: &[u8]| {
    let _ = parse_json(data);
    let _ = parse_cbor(data);
});
