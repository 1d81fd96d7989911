//! Any text as the configuration files roam reads outside the proxy: a router's
//! (roam_config::router), a gateway's (roam_config::gateway) and mqtt_client's parameter file
//! (roam_mqtt::Params), parsed and checked as their loaders do, without the files they name.
//! (A proxy's file is not here: roam-proxy would bring CycloneDDS's build into every fuzz
//! build, which `make test` pays on a fresh machine.)
//! Never panics; every mistake is a typed error that names the file and, when it gives a
//! line, one inside the text (or just past its end, where a text cut short ends); what is
//! taken refers only to realms the file declares.
//! (Rules files have their own target, rules_parse.)
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use roam_config::doc::{ConfigError, Doc};
use roam_config::gateway::{GatewayFile, Overrides};
use roam_config::router::RouterFile;
use roam_mqtt::Params;

/// Relative paths in a file are taken against a directory that does not exist, so nothing
/// the text names is read.
const DIR: &str = "/nonexistent/roam-fuzz";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    router(text);
    gateway(text);
    if let Err(e) = Params::parse(text, Path::new(DIR)) {
        assert!(!e.message.is_empty());
    }
});

/// A located mistake of the file `origin` holding `text`.
fn located(e: &ConfigError, text: &str, origin: &str) {
    assert_eq!(e.origin, origin);
    assert!(!e.message.is_empty());
    if let Some(line) = e.line {
        // The YAML parser marks a text cut short on the line after its last (as its own
        // message says), so that one counts as inside too.
        let lines = yaml_lines(text);
        assert!(
            line >= 1 && line <= lines + 1,
            "line {line} of {lines}: {e}"
        );
    }
    assert!(e.to_string().starts_with(origin));
}

/// Lines as YAML counts them: a CR LF, CR, LF, NEL, LS or PS ends one.
fn yaml_lines(text: &str) -> usize {
    let breaks = text
        .replace("\r\n", "\n")
        .chars()
        .filter(|c| matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}'))
        .count();
    breaks + 1
}

fn router(text: &str) {
    let origin = "router.yaml";
    let doc = Doc::new(text, origin);
    let checked = doc.parse::<RouterFile>().and_then(|f| f.check(&doc));
    if let Err(e) = checked {
        located(&e, text, origin);
    }
}

fn gateway(text: &str) {
    let origin = "gateway.yaml";
    let doc = Doc::new(text, origin);
    let overrides = Overrides {
        listen: None,
        grpc_listen: None,
        foxglove_listen: None,
        upstream: Vec::new(),
        metrics_listen: None,
    };
    match doc
        .parse::<GatewayFile>()
        .and_then(|f| f.check(&doc, overrides))
    {
        Ok(cfg) => assert!(roam_pki::validate_name(&cfg.id).is_ok()),
        Err(e) => located(&e, text, origin),
    }
}
