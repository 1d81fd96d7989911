//! Error cases and search rules, on small hand-made trees.

use std::os::unix::fs::symlink;
use std::path::PathBuf;

use roam_edge::definitions::{
    check_msg_path, DefinitionError, DefinitionSource, Limits, MsgPathError, RootLayout, SearchRoot,
};
use tempfile::TempDir;

struct Tree(TempDir);

impl Tree {
    fn new() -> Tree {
        Tree(tempfile::tempdir().expect("temp dir"))
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.0.path().join(rel)
    }

    fn file(&self, rel: &str, text: &str) -> &Tree {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
        self
    }

    fn dir(&self, rel: &str) -> &Tree {
        std::fs::create_dir_all(self.path(rel)).unwrap();
        self
    }

    fn prefix(&self, rel: &str) -> SearchRoot {
        SearchRoot::prefix(self.path(rel))
    }
}

fn source(roots: Vec<SearchRoot>) -> DefinitionSource {
    DefinitionSource::new(roots)
}

#[test]
fn a_missing_type_says_where_it_looked() {
    let t = Tree::new();
    t.file("a/share/robot_msgs/msg/Pose2D.msg", "float64 x\n");
    let src = source(vec![t.prefix("a"), t.prefix("b")]);
    match src.lookup("robot_msgs/msg/Nope") {
        Err(DefinitionError::Unknown { ty, looked_in }) => {
            assert_eq!(ty.full(), "robot_msgs/msg/Nope");
            assert_eq!(looked_in, [t.path("a/share/robot_msgs/msg/Nope.{msg,idl}")]);
        }
        other => panic!("{other:?}"),
    }
    let e = src.lookup("other_msgs/Thing").unwrap_err();
    assert!(matches!(&e, DefinitionError::Unknown { looked_in, .. }
        if *looked_in == [t.path("a/share/other_msgs"), t.path("b/share/other_msgs")]));
    assert_eq!(
        e.to_string(),
        format!(
            "type other_msgs/msg/Thing not found; looked in {}, {}",
            t.path("a/share/other_msgs").display(),
            t.path("b/share/other_msgs").display()
        )
    );
    // A service or action itself is not a message; a bad name is refused before any I/O.
    assert!(matches!(
        src.lookup("robot_msgs/srv/Reset"),
        Err(DefinitionError::NotAMessage(_))
    ));
    assert!(matches!(
        src.lookup("robot_msgs/msg/../../etc"),
        Err(DefinitionError::BadName(_))
    ));
    assert!(matches!(
        source(vec![]).lookup("robot_msgs/msg/Pose2D"),
        Err(DefinitionError::Unknown { looked_in, .. }) if looked_in.is_empty()
    ));
    // Errors are not cached: a file written later is found.
    t.file("a/share/robot_msgs/msg/Nope.msg", "int8 x\n");
    assert!(
        src.lookup("robot_msgs/msg/Nope").is_err(),
        "listing still cached"
    );
    src.clear_cache();
    assert_eq!(
        src.lookup("robot_msgs/msg/Nope").unwrap().ros2msg(),
        "int8 x\n"
    );
}

#[test]
fn a_missing_dependency_is_named_with_who_needs_it() {
    let t = Tree::new();
    t.file(
        "p/share/robot_msgs/msg/Outer.msg",
        "# outer\nMiddle m\nint32 x\n",
    )
    .file(
        "p/share/robot_msgs/msg/Middle.msg",
        "nav_like_msgs/Inner i\n",
    )
    .file("p/share/nav_like_msgs/msg/Other.msg", "int8 y\n");
    let src = source(vec![t.prefix("p")]);
    let e = src.lookup("robot_msgs/msg/Outer").unwrap_err();
    match &e {
        DefinitionError::MissingDependency {
            ty,
            needed_by,
            looked_in,
        } => {
            assert_eq!(ty.full(), "nav_like_msgs/msg/Inner");
            assert_eq!(needed_by.full(), "robot_msgs/msg/Middle");
            assert_eq!(
                *looked_in,
                [t.path("p/share/nav_like_msgs/msg/Inner.{msg,idl}")]
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(
        e.to_string().starts_with(
            "type nav_like_msgs/msg/Inner (needed by robot_msgs/msg/Middle) not found; looked in "
        ),
        "{e}"
    );
    // The type itself is fine once the dependency exists.
    t.file("p/share/nav_like_msgs/msg/Inner.msg", "float32 z\n");
    src.clear_cache();
    let def = src.lookup("robot_msgs/Outer").unwrap();
    assert_eq!(def.files().len(), 3);
}

#[test]
fn a_malformed_file_is_named_with_its_line() {
    let t = Tree::new();
    t.file(
        "p/share/robot_msgs/msg/Bad.msg",
        "# a comment\nint32 fine\nint32[<=x] broken\n",
    )
    .file("p/share/robot_msgs/msg/UsesBad.msg", "Bad b\n")
    .file("p/share/robot_msgs/msg/Latin1.msg", "")
    .file(
        "p/share/robot_msgs/srv/Split.srv",
        "int8 a\n---\nint8 b\n---\nint8 c\n",
    );
    std::fs::write(
        t.path("p/share/robot_msgs/msg/Latin1.msg"),
        b"# caf\xe9\nint8 x\n",
    )
    .unwrap();
    let src = source(vec![t.prefix("p")]);
    let bad = t.path("p/share/robot_msgs/msg/Bad.msg");
    for name in ["robot_msgs/msg/Bad", "robot_msgs/msg/UsesBad"] {
        let e = src.lookup(name).unwrap_err();
        assert!(
            matches!(&e, DefinitionError::Invalid { path, .. } if *path == bad),
            "{e:?}"
        );
        assert_eq!(e.line(), Some(3));
        assert_eq!(e.path(), Some(bad.as_path()));
        assert!(
            e.to_string().starts_with(&format!("{}:3: ", bad.display())),
            "{e}"
        );
        assert!(e.to_string().contains("<=x"), "{e}");
    }
    assert!(matches!(
        src.lookup("robot_msgs/msg/Latin1"),
        Err(DefinitionError::NotUtf8 { .. })
    ));
    let e = src.lookup("robot_msgs/srv/Split_Request").unwrap_err();
    assert!(matches!(e, DefinitionError::Invalid { .. }), "{e:?}");
}

#[test]
fn msg_paths_entries_are_checked() {
    let t = Tree::new();
    t.file(
        "ws/src/robot_description/package.xml",
        "<package><name>robot_description</name></package>",
    )
    .file("ws/src/robot_description/urdf/robot.urdf", "<robot/>")
    .file(
        "ws/src/interfaces_repo/package.xml",
        "<package format=\"3\"><name>robot_msgs</name></package>",
    )
    .file("ws/src/interfaces_repo/msg/Ping.msg", "uint64 seq\n")
    .file("ws/src/tools_msgs/srv/Run.srv", "---\n")
    .file("install/share/inst_msgs/action/Go.action", "---\n---\n")
    .file("plainfile", "")
    .file("bad_xml/package.xml", "<package><name>x</package>")
    .file("bad_xml/msg/A.msg", "int8 a\n")
    .file("Bad-Name/msg/A.msg", "int8 a\n")
    .dir("empty");
    let check = |rel: &str| check_msg_path(&t.path(rel));
    // One package, named by its package.xml rather than its folder.
    assert_eq!(
        check("ws/src/interfaces_repo").unwrap().layout,
        RootLayout::Package("robot_msgs".into())
    );
    // No package.xml: the folder's name.
    assert_eq!(
        check("ws/src/tools_msgs").unwrap().layout,
        RootLayout::Package("tools_msgs".into())
    );
    assert_eq!(check("ws/src").unwrap().layout, RootLayout::Share);
    assert_eq!(check("install").unwrap().layout, RootLayout::Prefix);
    assert_eq!(check("install/share").unwrap().layout, RootLayout::Share);

    let e = check("nowhere").unwrap_err();
    assert!(matches!(&e, MsgPathError::NotFound(p) if *p == t.path("nowhere")));
    assert_eq!(
        e.to_string(),
        format!(
            "msg_paths entry {} does not exist",
            t.path("nowhere").display()
        )
    );
    assert!(matches!(
        check("plainfile"),
        Err(MsgPathError::NotADirectory(_))
    ));
    for no_package in ["empty", "ws/src/robot_description"] {
        let e = check(no_package).unwrap_err();
        assert!(
            matches!(e, MsgPathError::NoPackage(_)),
            "{no_package}: {e:?}"
        );
        assert!(
            e.to_string().contains("holds no ROS interface package"),
            "{e}"
        );
    }
    assert!(matches!(
        check("bad_xml"),
        Err(MsgPathError::PackageXml { .. })
    ));
    assert!(matches!(
        check("Bad-Name"),
        Err(MsgPathError::BadPackageName { .. })
    ));

    // A source from configuration: the first bad entry is the error; good ones load.
    let bad = DefinitionSource::from_config(&[t.path("ws/src"), t.path("nowhere")], None);
    assert!(matches!(bad, Err(MsgPathError::NotFound(_))));
    let src = DefinitionSource::from_config(
        &[t.path("ws/src/interfaces_repo"), t.path("install")],
        Some(t.path("absent_prefix").as_os_str()),
    )
    .unwrap();
    assert_eq!(src.roots().len(), 3);
    assert_eq!(
        src.lookup("robot_msgs/msg/Ping").unwrap().ros2msg(),
        "uint64 seq\n"
    );
    assert!(src.lookup("inst_msgs/action/Go_Goal").is_ok());
}

#[test]
fn files_over_the_size_bound_are_refused() {
    let t = Tree::new();
    let limit = Limits::default().max_file_size as usize;
    let mut big = "# padding\n".repeat(limit / 10);
    big.push_str("int8 x\n");
    assert!(big.len() > limit);
    t.file("p/share/big_msgs/msg/Big.msg", &big);
    // Exactly at the bound: read.
    let fits = format!("#{}\nint8 x\n", " ".repeat(limit - 9));
    assert_eq!(fits.len(), limit);
    t.file("p/share/big_msgs/msg/Fits.msg", &fits);
    let src = source(vec![t.prefix("p")]);
    match src.lookup("big_msgs/msg/Big") {
        Err(DefinitionError::TooLarge {
            path,
            size,
            limit: l,
        }) => {
            assert_eq!(path, t.path("p/share/big_msgs/msg/Big.msg"));
            assert_eq!((size, l), (big.len() as u64, limit as u64));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        src.lookup("big_msgs/msg/Fits").unwrap().ros2msg(),
        "int8 x\n"
    );
}

#[test]
fn symlink_loops_and_special_files_end_in_errors() {
    let t = Tree::new();
    t.file("p/share/loop_msgs/msg/Fine.msg", "int8 x\n")
        .dir("p/share/dirloop_msgs");
    symlink("Loop.msg", t.path("p/share/loop_msgs/msg/Loop.msg")).unwrap();
    symlink("msg", t.path("p/share/dirloop_msgs/msg")).unwrap();
    // A link up the tree: walking it would never end; roam never walks.
    symlink("..", t.path("p/share/up")).unwrap();
    symlink("../share", t.path("p/share/share")).unwrap();
    let fifo = t.path("p/share/loop_msgs/msg/Fifo.msg");
    let st = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(st.success());
    let src = source(vec![t.prefix("p")]);
    let e = src.lookup("loop_msgs/msg/Loop").unwrap_err();
    assert!(
        matches!(&e, DefinitionError::Io { path, .. } if *path == t.path("p/share/loop_msgs/msg/Loop.msg")),
        "{e:?}"
    );
    let e = src.lookup("dirloop_msgs/msg/Any").unwrap_err();
    assert!(
        matches!(&e, DefinitionError::Io { path, .. } if path.starts_with(t.path("p/share/dirloop_msgs"))),
        "{e:?}"
    );
    assert!(matches!(
        src.lookup("loop_msgs/msg/Fifo"),
        Err(DefinitionError::NotAFile { .. })
    ));
    assert_eq!(
        src.lookup("loop_msgs/msg/Fine").unwrap().ros2msg(),
        "int8 x\n"
    );
    let listing = src.list();
    let names: Vec<String> = listing.interfaces.iter().map(|i| i.name.full()).collect();
    assert!(
        names.contains(&"loop_msgs/msg/Fine".to_string()),
        "{names:?}"
    );
    assert_eq!(listing.problems.len(), 1, "{:?}", listing.problems);
    assert!(
        listing.problems[0]
            .path()
            .is_some_and(|p| p.starts_with(t.path("p/share/dirloop_msgs"))),
        "{:?}",
        listing.problems
    );
    // A msg_paths entry with the same loops is checked in bounded time too (its `share` link
    // to itself makes it look like a prefix, which serves the same packages); a looping
    // package beside good ones does not make it unusable, but one alone holds nothing.
    let root = check_msg_path(&t.path("p/share")).unwrap();
    assert_eq!(root.layout, RootLayout::Prefix);
    let through = DefinitionSource::new(vec![root]);
    assert_eq!(
        through.lookup("loop_msgs/msg/Fine").unwrap().ros2msg(),
        "int8 x\n"
    );
    std::fs::create_dir(t.path("only_loop")).unwrap();
    symlink(
        t.path("p/share/dirloop_msgs"),
        t.path("only_loop/dirloop_msgs"),
    )
    .unwrap();
    assert!(matches!(
        check_msg_path(&t.path("only_loop")),
        Err(MsgPathError::NoPackage(_))
    ));
    assert!(matches!(
        check_msg_path(&t.path("p/share/dirloop_msgs")),
        Err(MsgPathError::File(DefinitionError::Io { .. }))
    ));
}

#[test]
fn bounds_on_folders_and_dependency_chains() {
    let t = Tree::new();
    for i in 0..10 {
        t.file(&format!("p/share/many_msgs/msg/T{i}.msg"), "int8 x\n");
    }
    t.file("p/share/chain_msgs/msg/A.msg", "B b\n")
        .file("p/share/chain_msgs/msg/B.msg", "C c\n")
        .file("p/share/chain_msgs/msg/C.msg", "int8 x\n")
        .file("p/share/chain_msgs/msg/Self.msg", "Self[] children\n")
        .file(
            "p/share/chain_msgs/msg/Wrong.idl",
            "module chain_msgs { module msg { struct Right { int8 x; }; }; };\n",
        );
    let limits = Limits {
        max_dir_entries: 8,
        max_files: 2,
        ..Limits::default()
    };
    let src = DefinitionSource::with_limits(vec![t.prefix("p")], limits);
    assert!(matches!(
        src.lookup("many_msgs/msg/T1"),
        Err(DefinitionError::TooManyEntries { limit: 8, .. })
    ));
    assert!(matches!(
        src.lookup("chain_msgs/msg/A"),
        Err(DefinitionError::TooManyFiles { limit: 2, .. })
    ));
    assert!(src.lookup("chain_msgs/msg/B").is_ok());
    let e = src.lookup("chain_msgs/msg/Self").unwrap_err();
    assert!(matches!(e, DefinitionError::Unusable { .. }), "{e:?}");
    assert!(e.to_string().contains("contains itself"), "{e}");
    assert!(matches!(
        src.lookup("chain_msgs/msg/Wrong"),
        Err(DefinitionError::FileLacksType { .. })
    ));
}

#[test]
fn earlier_roots_win_by_package_and_msg_wins_over_idl() {
    let t = Tree::new();
    t.file("overlay/share/robot_msgs/msg/Ping.msg", "uint64 seq\n")
        .file(
            "overlay/share/robot_msgs/msg/Ping.idl",
            "module robot_msgs { module msg { struct Ping { int8 stale_idl; }; }; };\n",
        )
        .file(
            "overlay/share/robot_msgs/msg/OnlyIdl.idl",
            "module robot_msgs { module msg { struct OnlyIdl { int16 v; }; }; };\n",
        )
        .file("underlay/share/robot_msgs/msg/Ping.msg", "uint8 old\n")
        .file("underlay/share/robot_msgs/msg/Gone.msg", "uint8 old\n")
        .file("underlay/share/base_msgs/msg/Base.msg", "uint8 b\n")
        .dir("overlay/share/base_msgs/config");
    let src = source(vec![t.prefix("overlay"), t.prefix("underlay")]);
    assert_eq!(
        src.lookup("robot_msgs/msg/Ping").unwrap().ros2msg(),
        "uint64 seq\n"
    );
    assert_eq!(
        src.lookup("robot_msgs/msg/OnlyIdl").unwrap().ros2msg(),
        "int16 v\n"
    );
    // The overlay's robot_msgs hides the underlay's entirely, as a sourced overlay does.
    assert!(matches!(
        src.lookup("robot_msgs/msg/Gone"),
        Err(DefinitionError::Unknown { looked_in, .. })
            if looked_in == [t.path("overlay/share/robot_msgs/msg/Gone.{msg,idl}")]
    ));
    // A package folder without interfaces does not hide one that has them.
    assert_eq!(
        src.lookup("base_msgs/msg/Base").unwrap().ros2msg(),
        "uint8 b\n"
    );
    let reversed = source(vec![t.prefix("underlay"), t.prefix("overlay")]);
    assert_eq!(
        reversed.lookup("robot_msgs/msg/Ping").unwrap().ros2msg(),
        "uint8 old\n"
    );
}
