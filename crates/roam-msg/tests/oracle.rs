//! roam-msg against an independent oracle: PyPI `rosbags` (its ROS 2 Humble and Jazzy
//! typestores, its CDR serializer and its IDL parser), driven by `tests/oracle/oracle.py`.
//!
//! For every type in both typestores (plus `example_interfaces` AddTwoInts and Fibonacci with
//! the types rosidl derives, and action_msgs' CancelGoal):
//! - rosbags' ros2msg definition parses, and roam writes it back identically;
//! - rosbags' CDR (both byte orders) of empty, extreme and random values decodes to the JSON
//!   rosbridge would make of rosbags' values;
//! - that JSON encodes to exactly rosbags' bytes for the same values (NaN where JSON has null);
//! - CDR -> CBOR -> CDR gives back rosbags' bytes (CBOR keeps infinities and -0.0);
//! - rosbags deserializes roam's encodings to the same values (`oracle.py verify`).
//!
//! And every Jazzy type written as rosidl's `.idl` parses to its `.msg` definition.
//!
//! And every type's RIHS01 type hash is rosbags' `hash_rihs01` of the same definitions, except
//! where a type contains `char`: rosbags hashes it as IDL `char` (13), rosidl (and roam) as
//! `uint8` (3); those are compared with rosbags' hash of the definitions with `char` read as
//! `uint8` instead.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use base64_simd::STANDARD as B64;
use roam_msg::schema::{BaseType, MessageDef, Primitive};
use roam_msg::{rihs01, EncodeOptions, Endian, TypeRegistry};
use serde_json::{json, Value};

const SETUP_HINT: &str =
    "the oracle test needs python3 with the `rosbags` package: run scripts/setup.sh";

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn oracle_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oracle/oracle.py")
}

fn python(args: &[&str]) -> std::process::Output {
    let out = Command::new("python3")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 ({e}); {SETUP_HINT}"));
    out
}

fn run_oracle(args: &[&str]) {
    let script = oracle_script();
    let mut full = vec![script.to_str().unwrap()];
    full.extend_from_slice(args);
    let out = python(&full);
    assert!(
        out.status.success(),
        "oracle.py {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    print!("{}", String::from_utf8_lossy(&out.stdout));
}

fn require_rosbags() {
    let out = python(&["-c", "import importlib.metadata, rosbags.typesys, numpy; print(importlib.metadata.version('rosbags'))"]);
    assert!(
        out.status.success(),
        "{SETUP_HINT}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!(
        "oracle: rosbags {}",
        String::from_utf8_lossy(&out.stdout).trim()
    );
}

fn unb64(v: &Value) -> Vec<u8> {
    B64.decode_to_vec(v.as_str().expect("base64 string"))
        .expect("oracle base64")
}

/// Type hashes checked: equal to rosbags', and (types with `char`) equal to rosbags' with `char`
/// read as `uint8`.
#[derive(Default)]
struct HashCounts {
    same: usize,
    char_as_uint8: usize,
}

/// Compares roam's type hash of `roam_type` in `reg` with the oracle's line for it.
fn check_hash(
    reg: &TypeRegistry,
    label: &str,
    roam_type: &str,
    want: Option<&Value>,
    counts: &mut HashCounts,
    failures: &mut Vec<String>,
) {
    let Some(want) = want else {
        failures.push(format!("{label}: no type hash from the oracle"));
        return;
    };
    let got = match rihs01(reg, roam_type) {
        Ok(h) => h,
        Err(e) => {
            failures.push(format!("{label}: type hash: {e}"));
            return;
        }
    };
    let roam_uses_char = reg.closure(roam_type).is_ok_and(|defs| {
        defs.iter().any(|d| {
            d.fields
                .iter()
                .any(|f| f.ty.base == BaseType::Primitive(Primitive::Char))
        })
    });
    let uses_char = want["uses_char"].as_bool().unwrap();
    if roam_uses_char != uses_char {
        failures.push(format!(
            "{label}: roam says the type uses char: {roam_uses_char}, rosbags {uses_char}"
        ));
    }
    let (key, count) = if uses_char {
        ("hash_char_as_uint8", &mut counts.char_as_uint8)
    } else {
        ("hash", &mut counts.same)
    };
    if got == want[key].as_str().unwrap() {
        *count += 1;
    } else {
        failures.push(format!(
            "{label}: type hash {got} != rosbags' {key} {}",
            want[key]
        ));
    }
}

/// Checks one typestore entry; returns roam's encodings of the oracle's JSON for `verify`.
fn check_entry(
    entry: &Value,
    hash: Option<&Value>,
    hash_counts: &mut HashCounts,
    failures: &mut Vec<String>,
) -> Vec<Value> {
    let store = entry["store"].as_str().unwrap();
    let oracle_type = entry["type"].as_str().unwrap();
    let roam_type = entry["roam_type"].as_str().unwrap();
    let label = format!("{store} {roam_type}");
    let mut reg = TypeRegistry::with_builtins();
    if let Some(src) = entry.get("source").filter(|s| !s["text"].is_null()) {
        let (name, text) = (src["name"].as_str().unwrap(), src["text"].as_str().unwrap());
        let r = if src["kind"] == "srv" {
            reg.add_srv(name, text)
        } else {
            reg.add_action(name, text)
        };
        r.unwrap_or_else(|e| panic!("{label}: {e}"));
    } else if entry.get("source").is_none() {
        // The plain ros2msg path, in a registry with nothing else in it.
        let def = entry["def"].as_str().unwrap();
        let mut plain = TypeRegistry::new();
        if let Err(e) = plain.add_ros2msg(roam_type, def) {
            failures.push(format!("{label}: definition does not parse: {e}"));
            return Vec::new();
        }
        match plain.to_ros2msg(roam_type) {
            Ok(text) if text == def => {}
            Ok(text) => failures.push(format!(
                "{label}: ros2msg written back differs:\n{text}\n--- rosbags:\n{def}"
            )),
            Err(e) => failures.push(format!("{label}: {e}")),
        }
        // The embedded definitions must be the ones ROS ships.
        let builtin = TypeRegistry::with_builtins();
        if let Some(b) = builtin.get(roam_type) {
            if Some(b) != plain.get(roam_type) {
                failures.push(format!(
                    "{label}: embedded definition differs from rosbags'"
                ));
            }
        }
        reg = plain;
    }
    check_hash(&reg, &label, roam_type, hash, hash_counts, failures);
    let ty = match reg.resolve(roam_type) {
        Ok(t) => t,
        Err(e) => {
            failures.push(format!("{label}: {e}"));
            return Vec::new();
        }
    };
    let mut encodings = Vec::new();
    for (i, case) in entry["cases"].as_array().unwrap().iter().enumerate() {
        let label = format!("{label} case {i}");
        let want = &case["json"];
        for order in ["le", "be"] {
            let cdr = unb64(&case[order]);
            let mut out = Vec::new();
            match ty.cdr_to_json(&cdr, &mut out) {
                Ok(()) => {
                    let got: Value = serde_json::from_slice(&out).expect("roam writes valid JSON");
                    if &got != want {
                        failures.push(format!(
                            "{label} {order}: JSON differs at {}",
                            first_diff(&got, want, String::new())
                        ));
                    }
                }
                Err(e) => failures.push(format!("{label} {order}: decode failed: {e}")),
            }
            let mut cbor = Vec::new();
            let mut back = Vec::new();
            let opts = EncodeOptions {
                endian: Endian::of(&cdr).unwrap(),
                now: None,
            };
            match ty
                .cdr_to_cbor(&cdr, &mut cbor)
                .map_err(|e| e.to_string())
                .and_then(|()| {
                    ty.cbor_to_cdr(&cbor, &opts, &mut back)
                        .map_err(|e| e.to_string())
                }) {
                Ok(()) if back == cdr => {}
                Ok(()) => failures.push(format!(
                    "{label} {order}: CDR -> CBOR -> CDR changed the bytes"
                )),
                Err(e) => failures.push(format!("{label} {order}: CBOR round trip failed: {e}")),
            }
        }
        let mut encoded = json!({"store": store, "type": oracle_type, "case": i});
        for (order, endian, rt) in [
            ("le", Endian::Little, "rt_le"),
            ("be", Endian::Big, "rt_be"),
        ] {
            let mut cdr = Vec::new();
            match ty.json_to_cdr(
                want.to_string().as_bytes(),
                &EncodeOptions { endian, now: None },
                &mut cdr,
            ) {
                Ok(()) => {
                    if cdr != unb64(&case[rt]) {
                        failures.push(format!(
                            "{label} {order}: JSON -> CDR differs from rosbags' bytes"
                        ));
                    }
                    encoded[order] = Value::String(B64.encode_to_string(&cdr));
                }
                Err(e) => failures.push(format!("{label} {order}: encode failed: {e}")),
            }
        }
        if encoded.get("le").is_some() && encoded.get("be").is_some() {
            encodings.push(encoded);
        }
    }
    encodings
}

/// The first place two JSON values differ, as `path: a != b`.
fn first_diff(a: &Value, b: &Value, path: String) -> String {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) if x.keys().eq(y.keys()) => x
            .iter()
            .zip(y.values())
            .find(|((_, p), q)| p != q)
            .map(|((k, p), q)| first_diff(p, q, format!("{path}.{k}")))
            .unwrap_or_default(),
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find(|(_, (p, q))| p != q)
            .map(|(i, (p, q))| first_diff(p, q, format!("{path}[{i}]")))
            .unwrap_or_default(),
        _ => {
            let short = |v: &Value| v.to_string().chars().take(300).collect::<String>();
            format!("{path}: roam {} != oracle {}", short(a), short(b))
        }
    }
}

/// rosidl writes `.msg` `char` as IDL `uint8`; compare definitions with that applied.
fn char_as_uint8(mut def: MessageDef) -> MessageDef {
    for f in &mut def.fields {
        if f.ty.base == BaseType::Primitive(Primitive::Char) {
            f.ty.base = BaseType::Primitive(Primitive::UInt8);
        }
    }
    def
}

fn check_idl(entry: &Value, failures: &mut Vec<String>) {
    let name = entry["type"].as_str().unwrap();
    let mut from_msg = TypeRegistry::new();
    from_msg
        .add_ros2msg(name, entry["msg"].as_str().unwrap())
        .unwrap();
    let mut from_idl = TypeRegistry::new();
    match from_idl.add_idl(entry["idl"].as_str().unwrap()) {
        Ok(names) if names.len() == 1 => {
            let a = from_idl.get(name).cloned().map(char_as_uint8);
            let b = from_msg.get(name).cloned().map(char_as_uint8);
            if a != b {
                failures.push(format!("idl {name}: {a:?}\n!= msg {b:?}"));
            }
        }
        Ok(names) => failures.push(format!("idl {name}: gave {names:?}")),
        Err(e) => failures.push(format!("idl {name}: {e}")),
    }
}

#[test]
fn every_typestore_type_matches_rosbags() {
    require_rosbags();
    let dir = TempDir(std::env::temp_dir().join(format!("roam-msg-oracle-{}", std::process::id())));
    std::fs::create_dir_all(&dir.0).unwrap();
    let d = dir.0.to_str().unwrap();
    let seed = std::env::var("ROAM_ORACLE_SEED").unwrap_or_else(|_| "1".into());
    run_oracle(&["gen", d, &seed]);

    let mut hashes = HashMap::new();
    for line in std::fs::read_to_string(dir.0.join("hashes.jsonl"))
        .unwrap()
        .lines()
    {
        let h: Value = serde_json::from_str(line).unwrap();
        let key = (h["store"].to_string(), h["roam_type"].to_string());
        hashes.insert(key, h);
    }

    let mut failures = Vec::new();
    let mut roam_lines = String::new();
    let (mut types, mut cases) = (0, 0);
    let mut hash_counts = HashCounts::default();
    for line in std::fs::read_to_string(dir.0.join("cases.jsonl"))
        .unwrap()
        .lines()
    {
        let entry: Value = serde_json::from_str(line).unwrap();
        types += 1;
        cases += entry["cases"].as_array().unwrap().len();
        let hash = hashes.get(&(entry["store"].to_string(), entry["roam_type"].to_string()));
        for enc in check_entry(&entry, hash, &mut hash_counts, &mut failures) {
            roam_lines.push_str(&enc.to_string());
            roam_lines.push('\n');
        }
    }
    let mut idl = 0;
    for line in std::fs::read_to_string(dir.0.join("idl.jsonl"))
        .unwrap()
        .lines()
    {
        check_idl(&serde_json::from_str(line).unwrap(), &mut failures);
        idl += 1;
    }
    println!(
        "oracle: {types} types, {cases} cases (x2 byte orders), {idl} IDL definitions checked"
    );
    println!(
        "oracle: type hashes: {} equal to rosbags', {} with char equal to rosbags' with char \
         read as uint8",
        hash_counts.same, hash_counts.char_as_uint8
    );
    assert!(
        types > 300 && idl > 150 && hash_counts.same > 300,
        "the oracle produced too little: {types} types, {idl} idl, {} hashes",
        hash_counts.same
    );
    assert!(
        failures.is_empty(),
        "{} failures; first ones:\n{}",
        failures.len(),
        failures
            .iter()
            .take(15)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n\n")
    );

    std::fs::write(dir.0.join("roam.jsonl"), roam_lines).unwrap();
    run_oracle(&["verify", d]);
}
