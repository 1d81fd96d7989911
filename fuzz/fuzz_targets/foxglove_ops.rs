//! Any Foxglove WebSocket client message (roam_gateway::foxglove::ops), a JSON text frame or
//! a binary one: parsed into an operation or refused, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use roam_gateway::foxglove::ops::{parse_binary, parse_json};

fuzz_target!(|data: &[u8]| {
    let _ = parse_json(data);
    let _ = parse_binary(data);
});
