//! Random input never panics: CDR, JSON and CBOR into the codec, text into the parsers.

mod common;

use proptest::prelude::*;
use roam_msg::{EncodeOptions, Endian, TypeRegistry};

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_cdr_never_panics(endian in 0u8..2, body in proptest::collection::vec(any::<u8>(), 0..400)) {
        let mut cdr = vec![0, endian, 0, 0];
        cdr.extend_from_slice(&body);
        for ty in common::types() {
            let mut out = Vec::new();
            if ty.cdr_to_json(&cdr, &mut out).is_ok() {
                // Whatever decodes is valid JSON and encodes again.
                let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
                let mut again = Vec::new();
                ty.json_to_cdr(v.to_string().as_bytes(), &EncodeOptions::default(), &mut again).unwrap();
            } else {
                prop_assert!(out.is_empty());
            }
            let _ = ty.cdr_to_cbor(&cdr, &mut Vec::new());
        }
    }

    #[test]
    fn mutated_valid_cdr_never_panics(i in 0usize..4, flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6)) {
        let ty = &common::types()[i];
        let mut cdr = Vec::new();
        ty.json_to_cdr(b"{}", &EncodeOptions { endian: Endian::Big, now: None }, &mut cdr).unwrap();
        for (at, b) in flips {
            let n = cdr.len();
            cdr[at % n] ^= b;
        }
        let _ = ty.cdr_to_json(&cdr, &mut Vec::new());
        let _ = ty.cdr_to_cbor(&cdr, &mut Vec::new());
    }

    #[test]
    fn random_json_and_cbor_never_panic(input in proptest::collection::vec(any::<u8>(), 0..300)) {
        for ty in common::types() {
            let mut out = vec![1u8];
            if ty.json_to_cdr(&input, &EncodeOptions::default(), &mut out).is_err() {
                prop_assert_eq!(&out, &[1u8]);
            }
            let _ = ty.cbor_to_cdr(&input, &EncodeOptions::default(), &mut Vec::new());
        }
    }

    #[test]
    fn json_shaped_input_never_panics(s in r#"\{("(b|s|v|data|names|all|headers|e|x|frame_id|stamp|sec)": ?(\[|\{|null|true|-?[0-9]{1,25}(\.[0-9]+)?(e-?[0-9]+)?|"[A-Za-z0-9+/=]{0,12}"|\]|\}|,){1,8}){0,4}\}?"#) {
        for ty in common::types() {
            let _ = ty.json_to_cdr(s.as_bytes(), &EncodeOptions::default(), &mut Vec::new());
        }
    }

    #[test]
    fn random_definitions_never_panic(text in r"([a-z_/0-9A-Z]{0,12}(\[(<=)?[0-9]{0,3}\])? [a-zA-Z_]{0,6}( |=)?[-0-9.\x22\x27a-z\[\],]{0,10}(#.*)?\n|---\n|=====\nMSG: [a-z/A-Z]{0,12}\n){0,8}") {
        let mut reg = TypeRegistry::new();
        let _ = reg.add_msg("p/msg/T", &text);
        let _ = reg.add_srv("p/srv/S", &text);
        let _ = reg.add_action("p/action/A", &text);
        let _ = reg.add_ros2msg("p/msg/R", &text);
        let _ = reg.resolve("p/msg/T");
    }

    #[test]
    fn random_idl_never_panics(text in r#"(module [a-z]{1,4} \{ |struct [A-Z][a-z]{0,3} \{ |typedef |const |sequence<|string<|[a-z0-9:_]{1,10} |[0-9]{1,3}|[\[\]<>{};,=@()-]|"[a-z(),' ]{0,8}"|@default \(value=|//x\n){0,30}"#) {
        let _ = TypeRegistry::new().add_idl(&text);
    }
}
