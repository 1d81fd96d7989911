//! The proxy file's checks: every mistake named with its file, line and field.

use super::*;

const GOOD: &str = "\
id: robot-7
pki: ./pki
upstream: [quic://127.0.0.1:7447]
dds: {domain: 3, interfaces: [lo], peers: [127.0.0.1]}
realms: {warehouse: ./w.realm}
exports:
  - topic: /chatter
    realm: warehouse
    as: /robot7/chatter
  - allow: ['^/camera/.*']
    deny: ['^/camera/debug']
    realm: warehouse
  - service: /add_two_ints
    realm: warehouse
imports:
  - topic: /cloud/plan
    realm: warehouse
    as: /plan
";

#[test]
fn a_gateway_section_opens_only_the_doors_it_lists_in_a_known_realm() {
    let with = |g: &str| format!("{GOOD}gateway:\n{g}");
    let c = ProxyConfig::parse(
        &with("  realm: warehouse\n  rosbridge: {listen: 127.0.0.1:9090}\n"),
        "robot.yaml",
    )
    .unwrap();
    let g = c.gateway.unwrap();
    assert_eq!(g.realm, "warehouse");
    assert_eq!(g.doors.rosbridge.unwrap().to_string(), "127.0.0.1:9090");
    assert!(g.doors.grpc.is_none() && g.doors.tokens.is_none());
    for (g, want) in [
        (
            "  realm: nowhere\n  grpc: {}\n",
            "r.yaml: line 20: gateway.realm: unknown realm \"nowhere\"",
        ),
        ("  realm: warehouse\n", "r.yaml: line 20: gateway: no door"),
        (
            "  realm: warehouse\n  grpc: {}\n  limits: {max_clients: 0}\n",
            "r.yaml: line 22: gateway.limits.max_clients: 0 allows nothing",
        ),
        (
            "  realm: warehouse\n  grpc: {}\n  tls: {pki: true, client_certs: required}\n",
            "r.yaml: line 22: gateway.tls.client_certs: client certificates name identities",
        ),
    ] {
        let e = err(&with(g));
        assert!(e.starts_with(want), "{g}\n got  {e}\n want {want}");
    }
}

#[test]
fn a_full_file_parses_and_maps() {
    let c = ProxyConfig::parse(GOOD, "robot.yaml").unwrap();
    assert_eq!(c.dds.domain, 3);
    assert_eq!(
        c.export_of("/chatter"),
        Some(("warehouse".into(), "/robot7/chatter".into()))
    );
    assert_eq!(
        c.export_of("/camera/front"),
        Some(("warehouse".into(), "/camera/front".into()))
    );
    assert_eq!(c.export_of("/camera/debug"), None);
    assert_eq!(
        c.export_of("/private/map"),
        None,
        "unlisted topics stay private"
    );
    assert_eq!(c.exports[1].what, What::Service);
    assert_eq!(c.imports[0].local, "/plan");
    assert_eq!(c.imports[0].remote, "/cloud/plan");
}

fn err(text: &str) -> String {
    ProxyConfig::parse(text, "r.yaml").unwrap_err().to_string()
}

#[test]
fn mistakes_say_where_and_what() {
    let e = err(&GOOD.replace(
        "realm: warehouse\n    as: /robot7",
        "realm: wharehouse\n    as: /robot7",
    ));
    assert!(
        e.starts_with("r.yaml: line 8: exports[0].realm: unknown realm \"wharehouse\""),
        "{e}"
    );
    let e = err(&GOOD.replace("'^/camera/.*'", "'^/camera/(.*'"));
    assert!(
        e.starts_with("r.yaml: line 10: exports[1].allow[0]: bad regex"),
        "{e}"
    );
    let e = err(&GOOD.replace("as: /plan", "as: /pl-an"));
    assert!(e.starts_with("r.yaml: line 18: imports[0].as:"), "{e}");
    let e = err(&GOOD.replace("domain: 3", "domain: three"));
    assert!(e.starts_with("r.yaml: line 4"), "{e}");
    let e = err(&GOOD.replace(
        "  - service: /add_two_ints\n",
        "  - service: /add_two_ints\n    topic: /x\n",
    ));
    assert!(
        e.contains("line 13: exports[2]: expected exactly one of"),
        "{e}"
    );
    let e = err("id: x\npki: p\nrealms: {}\n");
    assert!(e.contains("nothing to do"), "{e}");
}

#[test]
fn relative_names_are_made_full_as_everywhere_in_roam() {
    let c = ProxyConfig::parse(
        &GOOD
            .replace("as: /plan", "as: plan")
            .replace("topic: /chatter", "topic: chatter"),
        "r.yaml",
    )
    .unwrap();
    assert_eq!(c.imports[0].local, "/plan");
    assert_eq!(
        c.export_of("/chatter"),
        Some(("warehouse".into(), "/robot7/chatter".into()))
    );
}

#[test]
fn a_topic_exported_or_imported_twice_is_refused_at_its_line() {
    let twice = GOOD.replace(
        "  - service: /add_two_ints\n",
        "  - topic: /chatter\n    realm: warehouse\n  - service: /add_two_ints\n",
    );
    let e = err(&twice);
    assert!(
        e.starts_with(
            "r.yaml: line 13: exports[2].topic: topic /chatter is already exported by exports[0]"
        ),
        "{e}"
    );
    let merged = "id: r\npki: p\nrealms: {w: w.realm}\nexports:\n  - topic: /a\n    realm: w\n    as: /same\n  - topic: /b\n    realm: w\n    as: /same\n";
    let e = err(merged);
    assert_eq!(
            e,
            "r.yaml: line 10: exports[1].as: \"/same\" is already the realm name of exports[0] (/a); two topics cannot share one realm name: give each its own `as`"
        );
    // Without `as`, a topic exported under another's new name is found at its own key.
    let e = err("id: r\npki: p\nrealms: {w: w.realm}\nexports:\n  - {topic: /a, realm: w, as: /b}\n  - {topic: /b, realm: w}\n");
    assert!(e.starts_with("r.yaml: line 6: exports[1].topic:"), "{e}");
    let e = err(&format!(
        "{GOOD}  - topic: /cloud/plan\n    realm: warehouse\n    as: /plan2\n"
    ));
    assert!(
            e.starts_with("r.yaml: line 19: imports[1].topic: topic /cloud/plan of realm warehouse is already imported by imports[0]"),
            "{e}"
        );
    let e = err(&format!(
        "{GOOD}  - topic: /cloud/other\n    realm: warehouse\n    as: /plan\n"
    ));
    assert!(
        e.starts_with(
            "r.yaml: line 21: imports[1].as: \"/plan\" is already the local name of imports[0]"
        ),
        "{e}"
    );
}

#[test]
fn values_that_cannot_work_are_refused_at_their_line() {
    let e = err(&format!("{GOOD}link:\n  max_message_bytes: 0\n"));
    assert!(
        e.starts_with("r.yaml: line 20: link.max_message_bytes: 0 cannot carry a message"),
        "{e}"
    );
    let e = err(&format!("{GOOD}link:\n  idle_timeout_ms: 0\n"));
    assert!(
        e.starts_with("r.yaml: line 20: link.idle_timeout_ms: 0 is not a usable idle timeout")
            && !e.contains("keepalive"),
        "{e}"
    );
    let e = err(&GOOD.replace("domain: 3", "domain: 300"));
    assert!(
        e.starts_with("r.yaml: line 4: dds.domain: 300 is out of range: DDS domains are 0 to 232"),
        "{e}"
    );
    ProxyConfig::parse(&GOOD.replace("domain: 3", "domain: 232"), "r.yaml").unwrap();
    let bulk = |list: &str| {
        GOOD.replace(
            "peers: [127.0.0.1]}",
            &format!("peers: [127.0.0.1], bulk_types: {list}}}"),
        )
    };
    let e = err(&bulk("[sensor_msgs/msg/Image, 'camera image']"));
    assert!(
        e.starts_with(
            "r.yaml: line 4: dds.bulk_types[1]: \"camera image\" is not a ROS message type"
        ),
        "{e}"
    );
    let c = ProxyConfig::parse(&bulk("[my_msgs/Scan3d]"), "r.yaml").unwrap();
    assert_eq!(c.dds.bulk_types, Some(vec!["my_msgs/Scan3d".to_string()]));
    let c = ProxyConfig::parse(&bulk("[]"), "r.yaml").unwrap();
    assert_eq!(c.dds.bulk_types, Some(vec![]));
    let e = err(&GOOD.replace("quic://127.0.0.1:7447", "quic://127.0.0.1"));
    assert!(
        e.starts_with(
            "r.yaml: line 3: upstream[0]: missing port in \"127.0.0.1\" (e.g. 127.0.0.1:7447)"
        ),
        "{e}"
    );
    let e = err(&GOOD.replace("id: robot-7\n", "id: robot-7\nlisten: 0.0.0.0:123456\n"));
    assert!(e.starts_with("r.yaml: line 2: listen: port"), "{e}");
    let e = err(&GOOD.replace("id: robot-7\n", "id: robot-7\nmetrics_listen: :9464x\n"));
    assert!(e.starts_with("r.yaml: line 2: metrics_listen: "), "{e}");
    let e = err(&GOOD.replace("id: robot-7", "id: Robot_7"));
    assert!(
        e.starts_with("r.yaml: line 1: id: invalid identity name"),
        "{e}"
    );
}

#[test]
fn dds_xml_must_be_well_formed_and_not_silently_override() {
    let with_xml = |xml: &str| {
        GOOD.replace(
            "dds: {domain: 3, interfaces: [lo], peers: [127.0.0.1]}",
            &format!("dds:\n  domain: 3\n  config_xml: |\n{xml}"),
        )
    };
    ProxyConfig::parse(
        &with_xml("    <General><AllowMulticast>false</AllowMulticast></General>\n"),
        "r.yaml",
    )
    .unwrap();
    let e = err(&with_xml(
        "    <General>\n      <AllowMulticast>false</AllowMulticas>\n    </General>\n",
    ));
    assert!(
        e.starts_with("r.yaml: line 6: dds.config_xml: not well-formed XML at its line 2"),
        "{e}"
    );
    let e = err(&GOOD.replace(
        "peers: [127.0.0.1]}",
        "peers: [127.0.0.1], config_xml: '<General/>'}",
    ));
    assert!(
            e.starts_with("r.yaml: line 4: dds.config_xml: config_xml replaces the configuration roam writes from dds.interfaces, dds.peers"),
            "{e}"
        );
}

/// A directory with a CA, the proxy's identity and a realm, for `load`'s machine checks.
struct Machine(std::path::PathBuf);

impl Machine {
    fn new(tag: &str) -> Self {
        let d = std::env::temp_dir().join(format!("roam-cfg-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let pki = d.join("pki");
        roam_pki::init_ca(&pki).unwrap();
        roam_pki::issue(
            &pki,
            "robot-7",
            roam_proto::frame::Role::Router,
            roam_pki::Validity::default(),
        )
        .unwrap();
        roam_edge::realm::create(&d.join("w.realm"), "warehouse").unwrap();
        Self(d)
    }

    /// Writes GOOD with this directory's paths, edited by `edit`, and loads it.
    fn load(&self, edit: impl Fn(String) -> String) -> Result<ProxyConfig, String> {
        let text = edit(
            GOOD.replace(
                "pki: ./pki",
                &format!("pki: {}", self.0.join("pki").display()),
            )
            .replace("./w.realm", &self.0.join("w.realm").display().to_string()),
        );
        let path = self.0.join("robot.yaml");
        std::fs::write(&path, text).unwrap();
        ProxyConfig::load(&path).map_err(|e| e.to_string())
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn files_and_interfaces_the_config_names_must_exist() {
    let m = Machine::new("machine");
    m.load(|t| t).unwrap();
    let e = m.load(|t| t.replace("/pki", "/no-pki")).unwrap_err();
    assert!(
        e.contains("robot.yaml: line 2: pki: PKI directory") && e.contains("roam pki init --dir"),
        "{e}"
    );
    let e = m.load(|t| t.replace("robot-7", "robot-8")).unwrap_err();
    assert!(
        e.contains("line 2: pki: identity \"robot-8\"")
            && e.contains("robot-8.pem is missing")
            && e.contains("roam pki issue robot-8 --dir"),
        "{e}"
    );
    let e = m.load(|t| t.replace("w.realm", "x.realm")).unwrap_err();
    assert!(
        e.contains("line 5: realms.warehouse: realm file")
            && e.contains("does not exist (create it with `roam realm new"),
        "{e}"
    );
    std::fs::write(m.0.join("bad.realm"), "realm: x\nsecret: [\n").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            m.0.join("bad.realm"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
    }
    let e = m.load(|t| t.replace("w.realm", "bad.realm")).unwrap_err();
    assert!(
        e.contains("line 5: realms.warehouse: realm file") && e.contains("bad.realm"),
        "{e}"
    );
    let e = m
        .load(|t| t.replace("interfaces: [lo]", "interfaces: [lo, roam-no-such0]"))
        .unwrap_err();
    assert!(
            e.contains("line 4: dds.interfaces[1]: no network interface \"roam-no-such0\" on this machine (interfaces here: ")
                && e.contains("lo"),
            "{e}"
        );
}

#[test]
fn an_imported_topic_is_never_exported_back() {
    let text = GOOD
        .replace("'^/camera/.*'", "'.*'")
        .replace("deny: ['^/camera/debug']", "deny: []");
    let c = ProxyConfig::parse(&text, "r.yaml").unwrap();
    assert_eq!(c.export_of("/plan"), None);
    assert!(c.export_of("/anything").is_some());
    let looped = GOOD
        .replace("topic: /cloud/plan", "topic: /robot7/chatter")
        .replace("as: /plan", "as: /chatter");
    let e = err(&looped);
    assert!(
        e.contains("line 18: imports[0].as:") && e.contains("loop"),
        "{e}"
    );
}

#[test]
fn an_mqtt_section_takes_mqtt_clients_keys_and_points_at_its_mistakes() {
    let with = |m: &str| format!("{GOOD}mqtt:\n{m}");
    let c = ProxyConfig::parse(
        &with("  broker: {host: 127.0.0.1, port: 1884}\n  node_name: bridge\n  bridge:\n    mqtt2ros:\n      mqtt_topics: [a/b]\n      a/b: {ros_topic: /ab, realm: warehouse}\n"),
        "/etc/roam/robot.yaml",
    )
    .unwrap();
    let m = c.mqtt.unwrap();
    assert_eq!(m.node, "/bridge");
    assert_eq!(m.params.broker.port, 1884);
    assert_eq!(m.params.mqtt2ros[0].realm.as_deref(), Some("warehouse"));
    for (m, want) in [
        (
            "  bridge:\n    mqtt2ros:\n      mqtt_topics: [a/b]\n      a/b: {ros_topic: /ab, advanced: {mqtt: {qos: 7}}}\n",
            "mqtt.bridge.mqtt2ros.a/b.advanced.mqtt.qos: expected a whole number from 0 to 2",
        ),
        (
            "  bridge:\n    ros2mqtt:\n      ros_topics: [/x]\n      /x: {mqtt_topic: x, realm: nowhere}\n",
            "mqtt.bridge.ros2mqtt./x.realm: unknown realm \"nowhere\"",
        ),
        (
            "  params: missing.yaml\n",
            "mqtt.params: cannot read missing.yaml",
        ),
        ("  node_name: 'a b'\n  params: x.yaml\n", "mqtt.node_name: expected a ROS node name"),
    ] {
        let e = ProxyConfig::parse(&with(m), "robot.yaml").unwrap_err().to_string();
        assert!(
            e.starts_with("robot.yaml: line ") && e.contains(want),
            "{m}\n got: {e}\nwant: {want}"
        );
    }
}

#[test]
fn a_service_says_where_its_endpoints_carry_call_identities_and_only_services_do() {
    use super::super::convention::Setting;
    let c = ProxyConfig::parse(GOOD, "robot.yaml").unwrap();
    assert_eq!(c.exports[1].convention, Setting::Auto);
    let fast = GOOD.replace(
        "  - service: /add_two_ints\n    realm: warehouse\n",
        "  - service: /add_two_ints\n    realm: warehouse\n    convention: fastdds\n",
    );
    let c = ProxyConfig::parse(&fast, "robot.yaml").unwrap();
    assert_eq!(c.exports[1].convention, Setting::Fast);
    let e = err(&GOOD.replace(
        "  - service: /add_two_ints\n    realm: warehouse\n",
        "  - service: /add_two_ints\n    realm: warehouse\n    convention: fastrtps\n",
    ));
    assert!(e.contains("line 15") && e.contains("fastdds"), "{e}");
    let e = err(&GOOD.replace(
        "    as: /plan\n",
        "    as: /plan\n    convention: cyclonedds\n",
    ));
    assert!(
        e.contains("imports[0].convention: `convention` applies to services and actions only"),
        "{e}"
    );
}

#[test]
fn a_namespace_prefixes_every_realm_side_name_and_no_local_one() {
    let text = format!(
        "{GOOD}  - service: /map_server/get_map\n    realm: warehouse\n  - dds_topic: DDSPerfRDataKS\n    realm: warehouse\nnamespace: /robot7\n"
    );
    let c = ProxyConfig::parse(&text, "robot.yaml").unwrap();
    assert_eq!(c.namespace.as_deref(), Some("/robot7"));
    let pairs = |ms: &[Mapping]| -> Vec<(String, String)> {
        ms.iter()
            .map(|m| (m.local.clone(), m.remote.clone()))
            .collect()
    };
    assert_eq!(
        pairs(&c.exports),
        [
            ("/chatter".into(), "/robot7/robot7/chatter".into()),
            ("/add_two_ints".into(), "/robot7/add_two_ints".into()),
        ]
    );
    assert_eq!(
        pairs(&c.imports),
        [
            ("/plan".into(), "/robot7/cloud/plan".into()),
            (
                "/map_server/get_map".into(),
                "/robot7/map_server/get_map".into()
            ),
            // A raw DDS topic is not a ROS name: no namespace.
            ("DDSPerfRDataKS".into(), "DDSPerfRDataKS".into()),
        ]
    );
    // Topics exported by pattern get it too.
    assert_eq!(
        c.export_of("/camera/image"),
        Some(("warehouse".into(), "/robot7/camera/image".into()))
    );
    // Relative is made full, as everywhere; a bad namespace is refused where it is.
    let c = ProxyConfig::parse(&format!("{GOOD}namespace: robot7\n"), "robot.yaml").unwrap();
    assert_eq!(c.namespace.as_deref(), Some("/robot7"));
    let e = err(&format!("{GOOD}namespace: /robot 7\n"));
    assert!(
        e.contains("namespace") && e.contains("not a ROS namespace"),
        "{e}"
    );
    // Without one, nothing changes.
    let c = ProxyConfig::parse(GOOD, "robot.yaml").unwrap();
    assert_eq!(c.namespace, None);
    assert_eq!(c.exports[0].remote, "/robot7/chatter");
}

#[test]
fn an_action_entry_is_its_three_services_and_two_topics_renamed_and_namespaced_together() {
    use super::super::convention::Setting;
    let text = format!(
        "{GOOD}  - action: fibonacci\n    realm: warehouse\n    as: /arm/fib\n    convention: fastdds\nnamespace: /robot7\n"
    );
    let text = text.replace(
        "  - service: /add_two_ints\n    realm: warehouse\n",
        "  - service: /add_two_ints\n    realm: warehouse\n  - action: /navigate\n    realm: warehouse\n",
    );
    let c = ProxyConfig::parse(&text, "robot.yaml").unwrap();
    let parts = |ms: &[Mapping], from: usize| -> Vec<(What, String, String, Setting)> {
        ms[from..]
            .iter()
            .map(|m| (m.what, m.local.clone(), m.remote.clone(), m.convention))
            .collect()
    };
    let nav = |p: &str| format!("/navigate/_action/{p}");
    let expected = |local: &dyn Fn(&str) -> String, remote: &dyn Fn(&str) -> String, c| {
        [
            (What::Service, "send_goal", c),
            (What::Service, "cancel_goal", c),
            (What::Service, "get_result", c),
            (What::Topic, "feedback", Setting::Auto),
            (What::Topic, "status", Setting::Auto),
        ]
        .map(|(w, p, c)| (w, local(p), remote(p), c))
        .to_vec()
    };
    assert_eq!(
        parts(&c.exports, 2)[..5],
        expected(&nav, &|p| format!("/robot7{}", nav(p)), Setting::Auto)[..]
    );
    // Imported: realm-side names from the entry (in the namespace), local ones from `as`.
    assert_eq!(
        parts(&c.imports, 1),
        expected(
            &|p| format!("/arm/fib/_action/{p}"),
            &|p| format!("/robot7/fibonacci/_action/{p}"),
            Setting::Fast
        )
    );
    // One kind per entry; a part named twice is refused where the second names it.
    let e = err(&GOOD.replace(
        "  - service: /add_two_ints\n",
        "  - service: /add_two_ints\n    action: /fibonacci\n",
    ));
    assert!(
        e.contains("exactly one of `topic`, `service`, `action`"),
        "{e}"
    );
    let e = err(&format!(
        "{GOOD}  - topic: /fibonacci/_action/status\n    realm: warehouse\n  - action: /fibonacci\n    realm: warehouse\n"
    ));
    assert!(
        e.contains("imports[2].action") && e.contains("/fibonacci/_action/status"),
        "{e}"
    );
    let e = err(&format!(
        "{GOOD}  - action: /fibo nacci\n    realm: warehouse\n"
    ));
    assert!(e.contains("imports[1].action"), "{e}");
}

#[test]
fn allow_and_deny_take_a_list_or_patterns_per_kind_and_say_where_a_kind_belongs() {
    let with = |exports: &str, imports: &str| {
        format!(
            "id: r\npki: ./pki\nrealms: {{w: ./w.realm}}\nexports:\n{exports}imports:\n{imports}"
        )
    };
    let topic = "  - topic: /plan\n    realm: w\n";
    let c = ProxyConfig::parse(
        &with(
            "  - allow: {publishers: ['^/camera/']}\n    deny: {publishers: ['debug']}\n    realm: w\n",
            "  - allow: ['^/robot/']\n    deny: {subscribers: ['^/robot/secret$']}\n    realm: w\n",
        ),
        "r.yaml",
    )
    .unwrap();
    assert_eq!(
        c.export_of("/camera/image").map(|e| e.1).as_deref(),
        Some("/camera/image")
    );
    assert_eq!(c.export_of("/camera/debug"), None);
    assert_eq!(
        c.pattern_import_of("/robot/status"),
        Some(("w".into(), "/robot/status".into()))
    );
    assert_eq!(c.pattern_import_of("/robot/secret"), None);
    assert_eq!(c.pattern_import_of("/elsewhere"), None);
    // A topic imported by name is not imported again, nor one this proxy exports.
    let c = ProxyConfig::parse(
        &(with(
            "  - allow: ['^/robot/odom$']\n    realm: w\n",
            &format!(
                "  - topic: /robot/plan\n    realm: w\n  - allow: ['.*']\n    realm: w\n{topic}"
            ),
        ) + "namespace: /r7\n"),
        "r.yaml",
    )
    .unwrap();
    assert_eq!(c.pattern_import_of("/robot/plan"), None);
    assert_eq!(c.pattern_import_of("/robot/odom"), None);
    assert_eq!(
        c.pattern_import_of("/cmd_vel"),
        Some(("w".into(), "/r7/cmd_vel".into())),
        "in the namespace"
    );
    // Each kind where it belongs.
    let e = err(&with(
        topic,
        "  - allow: {publishers: ['.*']}\n    realm: w\n",
    ));
    assert!(
        e.contains("imports[0].allow.publishers: `publishers` belongs in `exports:`"),
        "{e}"
    );
    let e = err(&with(
        "  - allow: {service_clients: ['.*']}\n    realm: w\n",
        topic,
    ));
    assert!(
        e.contains("exports[0].allow.service_clients: `service_clients` belongs in `imports:` (the services this network's clients call)"),
        "{e}"
    );
    let e = err(&with(
        topic,
        "  - allow: {subscriber: ['.*']}\n    realm: w\n",
    ));
    assert!(e.contains("unknown kind `subscriber`"), "{e}");
    let e = err(&with(topic, "  - deny: ['x']\n    realm: w\n"));
    assert!(
        e.contains("imports[0].deny: deny without allow imports nothing"),
        "{e}"
    );
    let e = err(&with(topic, "  - allow: ['(']\n    realm: w\n"));
    assert!(e.contains("imports[0].allow[0]: bad regex"), "{e}");
    let e = err(&with(topic, "  - allow: ['x']\n    as: /y\n    realm: w\n"));
    assert!(
        e.contains("imports[0].as: allow/deny patterns import topics, services and actions under their own names"),
        "{e}"
    );
    let e = err(&with(
        topic,
        "  - allow: ['x']\n    topic: /y\n    realm: w\n",
    ));
    assert!(e.contains("expected exactly one of"), "{e}");
}

#[test]
fn service_and_action_kinds_select_what_local_servers_and_clients_use_unless_named() {
    use super::super::convention::Setting;
    use super::super::patterns::Side::{Exports, Imports};
    let text = "id: r\npki: ./pki\nrealms: {w: ./w.realm, v: ./v.realm}\nnamespace: /r7\n\
exports:
  - service: /add_two_ints
    realm: w
  - allow: {publishers: ['^/tf$'], service_servers: ['^/map/', '^/add'], action_servers: ['^/nav']}
    deny: {service_servers: ['secret']}
    realm: w
imports:
  - action: /fibonacci
    realm: w
  - allow: {service_clients: ['.*'], action_clients: ['^/dock$', '^/fib']}
    realm: v
";
    let c = ProxyConfig::parse(text, "r.yaml").unwrap();
    // A service: as its own `service:` entry, convention auto, realm-side in the namespace.
    let get_map = Mapping {
        what: What::Service,
        local: "/map/get".into(),
        remote: "/r7/map/get".into(),
        realm: "w".into(),
        convention: Setting::Auto,
    };
    assert_eq!(c.service_pattern(Exports, "/map/get"), Some(get_map));
    assert_eq!(c.service_pattern(Exports, "/map/secret"), None, "denied");
    assert_eq!(c.service_pattern(Exports, "/other"), None, "not allowed");
    assert_eq!(
        c.service_pattern(Imports, "/other")
            .map(|m| (m.realm, m.remote)),
        Some(("v".into(), "/r7/other".into()))
    );
    // Named entries win, on either side; a name a DDS topic gives that is not a ROS name
    // is not taken.
    assert_eq!(c.service_pattern(Exports, "/add_two_ints"), None);
    assert_eq!(c.service_pattern(Imports, "/add_two_ints"), None);
    assert_eq!(c.service_pattern(Imports, "/map/bad name"), None);
    // An action's parts are the action kinds': never a service pattern's.
    assert_eq!(c.service_pattern(Exports, "/map/x/_action/send_goal"), None);
    assert_eq!(c.service_pattern(Imports, "/dock/_action/get_result"), None);
    // An action: its five parts, as an `action:` entry has them.
    let nav = c.action_pattern(Exports, "/navigate").unwrap();
    let parts: Vec<(What, &str, &str)> = nav
        .iter()
        .map(|m| (m.what, m.local.as_str(), m.remote.as_str()))
        .collect();
    assert_eq!(
        parts,
        [
            (
                What::Service,
                "/navigate/_action/send_goal",
                "/r7/navigate/_action/send_goal"
            ),
            (
                What::Service,
                "/navigate/_action/cancel_goal",
                "/r7/navigate/_action/cancel_goal"
            ),
            (
                What::Service,
                "/navigate/_action/get_result",
                "/r7/navigate/_action/get_result"
            ),
            (
                What::Topic,
                "/navigate/_action/feedback",
                "/r7/navigate/_action/feedback"
            ),
            (
                What::Topic,
                "/navigate/_action/status",
                "/r7/navigate/_action/status"
            ),
        ]
    );
    assert!(nav
        .iter()
        .all(|m| m.realm == "w" && m.convention == Setting::Auto));
    // Each side's kind on its own side; the named action is not taken again.
    assert_eq!(c.action_pattern(Exports, "/dock"), None);
    assert_eq!(c.action_pattern(Imports, "/dock").map(|m| m.len()), Some(5));
    assert_eq!(c.action_pattern(Imports, "/fibonacci"), None);
    assert_eq!(c.action_pattern(Imports, "/fib2").map(|m| m.len()), Some(5));
    // Topics are the publishers' kind only.
    assert!(c.export_of("/tf").is_some());
    assert_eq!(c.export_of("/map/get"), None);
    // An action one of whose parts is named is not taken by a pattern either.
    let c = ProxyConfig::parse(
        &text.replace(
            "  - action: /fibonacci\n",
            "  - topic: /fib3/_action/status\n",
        ),
        "r.yaml",
    )
    .unwrap();
    assert_eq!(c.action_pattern(Imports, "/fib3"), None);
    assert_eq!(
        c.action_pattern(Imports, "/fibonacci").map(|m| m.len()),
        Some(5)
    );

    // Mistakes, where they are.
    let with =
        |exports: &str| format!("id: r\npki: ./pki\nrealms: {{w: ./w.realm}}\nexports:\n{exports}");
    let e = err(&with(
        "  - allow: {publishers: ['.*']}\n    deny: {service_servers: ['x']}\n    realm: w\n",
    ));
    assert!(
        e.contains(
            "exports[0].deny.service_servers: deny without allow selects no service_servers"
        ),
        "{e}"
    );
    let e = err(&with("  - allow: {action_clients: ['.*']}\n    realm: w\n"));
    assert!(
        e.contains("exports[0].allow.action_clients: `action_clients` belongs in `imports:`"),
        "{e}"
    );
    let e = err(&with("  - allow: {service_servers: ['(']}\n    realm: w\n"));
    assert!(
        e.contains("exports[0].allow.service_servers[0]: bad regex"),
        "{e}"
    );
    let e = err(&with(
        "  - allow: {service_servers: ['.*']}\n    convention: fastdds\n    realm: w\n",
    ));
    assert!(
        e.contains("exports[0].convention: `convention` is `auto` for the services and actions patterns select"),
        "{e}"
    );
    let e = err(&with("  - allow: {service_server: ['.*']}\n    realm: w\n"));
    assert!(
        e.contains("unknown kind `service_server`: in `exports:` patterns select `publishers`, `service_servers`, `action_servers`"),
        "{e}"
    );
}

#[test]
fn worker_threads_are_one_to_1024() {
    let ok = ProxyConfig::parse(&format!("{GOOD}worker_threads: 2\n"), "r.yaml");
    assert!(ok.is_ok(), "{:?}", ok.err());
    let e = err(&format!("{GOOD}worker_threads: 0\n"));
    assert!(
        e.starts_with("r.yaml: line 19: worker_threads: 0 async worker threads; give 1 to 1024"),
        "{e}"
    );
    let e = err(&format!("{GOOD}worker_threads: many\n"));
    assert!(e.contains("line 19") && e.contains("worker_threads"), "{e}");
}
