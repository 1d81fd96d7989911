//! The surface syntax: seed 001's examples parse, every operand, operator and action has a
//! form, and bad files are refused at the right line and column with what was expected.

use proptest::prelude::*;
use roam_rules::{Action, ErrorKind, Module, Operand, ParseError, Rules, Test};

fn err(text: &str) -> ParseError {
    Rules::parse(text).expect_err("should be refused")
}

#[test]
fn the_papers_example_parses_as_three_filter_rules() {
    let text = "Filter: TOPIC == \"map\" && NODE == \"A\";\nFilter: TOPIC == \"map\" && NODE == \"B\";\nFilter: TOPIC == \"map\" && NODE == \"C\";\n";
    let rules = Rules::parse(text).unwrap();
    assert_eq!(rules.rules().len(), 3);
    let r = &rules.rules()[1];
    assert_eq!(r.module, Module::Filter);
    assert_eq!(r.line, 2);
    assert_eq!(r.text, "Filter: TOPIC == \"map\" && NODE == \"B\"");
    assert_eq!(r.conditions[0].operand, Operand::Topic);
    assert_eq!(r.conditions[1].operand, Operand::Node);
    assert_eq!(r.conditions[1].test, Test::Equal("B".into()));
    assert!(r.actions.is_empty());
}

#[test]
fn every_operand_operator_and_action_has_a_form() {
    let text = r#"
# comments run to the end of the line
Filter: TOPIC == "/a" && TYPE != "std_msgs/msg/String" && REALM CONTAINS "ware" && Allow;
Filter: PEER IN ["r1", "r2"] && MESSAGE MATCHES "^\\{" && Limit 2.5 && Copy "/b";
Filter: FIELD(header.frame_id) == "map" && FIELD("points.0.x") == 3 && Drop;
Monitor: topic in ["/x" "/y"] && Count && Average && Max && Min && Log "/tmp/x.mcap";
Display: NODE == "/n" && Count;
"#;
    let rules = Rules::parse(text).unwrap();
    let r = rules.rules();
    assert_eq!(r.len(), 5);
    assert_eq!(r[0].line, 3);
    assert_eq!(r[0].actions, vec![Action::Allow]);
    assert_eq!(r[0].conditions[2].test, Test::Contains("ware".into()));
    assert_eq!(
        r[1].conditions[0].test,
        Test::In(vec!["r1".into(), "r2".into()])
    );
    assert!(r[1].conditions[1].test.check("{\"data\": 1}"));
    assert_eq!(
        r[1].actions,
        vec![Action::Limit(2.5), Action::Copy("/b".into())]
    );
    assert_eq!(
        r[2].conditions[0].operand,
        Operand::Field("header.frame_id".into())
    );
    assert_eq!(
        r[2].conditions[1].operand,
        Operand::Field("points.0.x".into())
    );
    assert_eq!(r[2].conditions[1].test, Test::Equal("3".into()));
    assert_eq!(r[3].module, Module::Monitor);
    assert_eq!(r[3].actions.len(), 5);
    assert_eq!(r[3].actions[4], Action::Log("/tmp/x.mcap".into()));
    assert_eq!(r[4].module, Module::Display);
}

#[test]
fn errors_say_where_and_what_was_expected() {
    let e = err("Filter: TOPIC == \"/a\";\nFilter: TOPIC = \"/b\";\n");
    assert_eq!((e.line, e.column), (2, 15));
    assert!(e.to_string().contains("expected `==`"), "{e}");

    let e = err("Filter: TOPIC \"/a\";");
    assert_eq!((e.line, e.column), (1, 15));
    assert!(e.to_string().contains("expected an operator"), "{e}");

    let e = err("Filtre: TOPIC == \"/a\";");
    assert_eq!((e.line, e.column), (1, 1));
    assert!(
        e.to_string()
            .contains("a module (Filter, Monitor, Display)"),
        "{e}"
    );

    let e = err("Filter: TOPIC == \"/a\"");
    assert_eq!((e.line, e.column), (1, 22));
    assert!(e.to_string().contains("found the end of the file"), "{e}");

    let e = err("Filter: TOPIC == \"/a");
    assert!(matches!(e.kind, ErrorKind::UnterminatedString), "{e}");
    assert_eq!((e.line, e.column), (1, 18));

    let e = err("Monitor: TOPIC MATCHES \"(\" && Count;");
    assert!(matches!(e.kind, ErrorKind::BadRegex(_)), "{e}");
    assert_eq!(e.column, 24);

    let e = err("Monitor: TOPIC == \"/a\" && Limit 3;");
    assert!(
        matches!(
            e.kind,
            ErrorKind::WrongModule {
                action: "Limit",
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(e.column, 27);

    let e = err("Filter: TOPIC == \"/a\" && Count;");
    assert!(
        matches!(
            e.kind,
            ErrorKind::WrongModule {
                action: "Count",
                ..
            }
        ),
        "{e}"
    );

    let e = err("Filter: TOPIC == \"/a\" && Limit 0;");
    assert!(matches!(e.kind, ErrorKind::BadRate(_)), "{e}");

    let e = err("Filter: TOPIC == \"/a\" && Allow && Drop;");
    assert!(matches!(e.kind, ErrorKind::TwoVerdicts("Allow")), "{e}");

    let e = err("Monitor: TOPIC == \"/a\";");
    assert!(matches!(e.kind, ErrorKind::NoAction("Monitor", _)), "{e}");

    let e = err("Filter: TOPIC IN \"/a\";");
    assert!(matches!(e.kind, ErrorKind::InNeedsList), "{e}");

    let e = err("Filter: TOPIC == [\"/a\"];");
    assert!(matches!(e.kind, ErrorKind::ListNotAllowed("==")), "{e}");

    let e = err("Filter: FIELD() == \"x\";");
    assert!(e.to_string().contains("a field path"), "{e}");

    let e = err("Filter: TOPIC == \"a\\q\";");
    assert!(matches!(e.kind, ErrorKind::BadEscape('q')), "{e}");
}

#[test]
fn an_empty_file_or_only_comments_is_no_rules() {
    assert!(Rules::parse("").unwrap().rules().is_empty());
    assert!(Rules::parse("# nothing\n\n  # here\n")
        .unwrap()
        .rules()
        .is_empty());
}

#[test]
fn columns_count_characters_not_bytes() {
    let e = err("Filter: TOPIC == \"é\" ?;");
    assert_eq!(e.column, 22);
}

proptest! {
    /// Any text: parsed or refused with a position inside the text, never a panic.
    #[test]
    fn any_text_is_parsed_or_refused_at_a_place_in_it(text in "\\PC{0,200}") {
        if let Err(e) = Rules::parse(&text) {
            let lines = text.split('\n').count();
            prop_assert!(e.line >= 1 && e.line <= lines, "{e} in {text:?}");
            prop_assert!(e.column >= 1);
        }
    }

    /// Text built from the language's own pieces exercises the parser past the first token.
    #[test]
    fn rule_shaped_text_never_panics(parts in proptest::collection::vec(prop_oneof![
        Just("Filter"), Just("Monitor"), Just("Display"), Just(":"), Just(";"), Just("&&"),
        Just("TOPIC"), Just("NODE"), Just("FIELD(a.b)"), Just("=="), Just("!="), Just("IN"),
        Just("MATCHES"), Just("CONTAINS"), Just("\"x\""), Just("[\"a\" \"b\"]"), Just("Limit"),
        Just("5"), Just("Copy"), Just("Count"), Just("Drop"), Just("\n"), Just("\"[\""),
    ], 0..30)) {
        let text = parts.join(" ");
        let _ = Rules::parse(&text);
    }

    /// Well-formed rules parse back to what was written.
    #[test]
    fn written_rules_parse(topic in "/[a-z_]{1,12}", rate in 1u32..1000, node in "/[a-z]{1,8}") {
        let text = format!("Filter: TOPIC == \"{topic}\" && NODE == \"{node}\" && Limit {rate};\nMonitor: TOPIC == \"{topic}\" && Count;\n");
        let rules = Rules::parse(&text).unwrap();
        prop_assert_eq!(rules.rules().len(), 2);
        prop_assert_eq!(&rules.rules()[0].conditions[0].test, &Test::Equal(topic));
        prop_assert_eq!(rules.rules()[0].limit(), Some(rate as f64));
    }
}

/// The fuzz target's committed seeds stay valid rules files.
#[test]
fn the_fuzz_seeds_parse() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/seeds/rules_parse");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let rules = Rules::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(!rules.rules().is_empty(), "{}", path.display());
        n += 1;
    }
    assert!(n >= 3);
}
