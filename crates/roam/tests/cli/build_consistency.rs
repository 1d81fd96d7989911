//! The build's own statements agree with each other: the Rust version the workspace declares
//! is the one setup installs, every phony make target has a rule, and the release binary
//! carries no DWARF (it was 63 MB with it).

use std::path::PathBuf;

fn repo_file(path: &str) -> String {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::read_to_string(root.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_declared_rust_version_is_the_one_setup_requires() {
    let cargo = repo_file("Cargo.toml");
    let declared = cargo
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .expect("rust-version in Cargo.toml")
        .trim_matches('"');
    let setup = repo_file("scripts/setup.sh");
    let required = setup
        .lines()
        .find_map(|l| {
            let (_, rest) = l.split_once("| sort -V | head -n1)\" != \"")?;
            rest.split('"').next()
        })
        .expect("the version check in scripts/setup.sh");
    assert_eq!(
        format!("{declared}.0"),
        required,
        "Cargo.toml says {declared}, setup.sh requires {required}"
    );
}

#[test]
fn every_phony_make_target_has_a_rule() {
    let make = repo_file("Makefile");
    let phony = make
        .lines()
        .find_map(|l| l.strip_prefix(".PHONY:"))
        .expect(".PHONY line");
    for target in phony.split_whitespace() {
        assert!(
            make.lines().any(|l| l.starts_with(&format!("{target}:"))),
            "make target {target} is phony but has no rule"
        );
    }
}

#[test]
fn the_release_profile_strips_debug_info() {
    let cargo = repo_file("Cargo.toml");
    let release: String = cargo
        .split("[profile.release]")
        .nth(1)
        .expect("[profile.release]")
        .lines()
        .take_while(|l| !l.starts_with('['))
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        release.contains("strip = \"debuginfo\"") || release.contains("strip = true"),
        "{release}"
    );
    assert!(!release.contains("debug = 1"), "{release}");
}
