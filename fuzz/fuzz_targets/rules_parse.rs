//! Any text through the rules parser: never panics; what parses evaluates on a message
//! without panicking either, and every error points inside the text.
#![no_main]

use std::sync::Arc;
use std::time::Instant;

use libfuzzer_sys::fuzz_target;
use roam_rules::{Engine, Message, NoContent, Rules};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Rules::parse(text) {
        Ok(rules) => {
            let mut e = Engine::new(Arc::new(rules));
            let m = Message {
                topic: "/map",
                type_name: "std_msgs/msg/String",
                node: Some("/n"),
                realm: "r",
                peer: None,
                size: 10,
            };
            let now = Instant::now();
            let _ = e.evaluate(&m, &mut NoContent, now);
            let _ = e.figures(now);
        }
        Err(e) => {
            assert!(e.line >= 1 && e.line <= text.split('\n').count());
            assert!(e.column >= 1);
        }
    }
});
