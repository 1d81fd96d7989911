//! Any text through the definition parsers (.msg, .srv, .action, ros2msg, .idl): never panics;
//! what parses writes back to text that parses to the same definition.
#![no_main]

use libfuzzer_sys::fuzz_target;
use roam_msg::TypeRegistry;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut reg = TypeRegistry::new();
    if reg.add_msg("p/msg/T", text).is_ok() {
        let def = reg.get("p/msg/T").expect("just added").clone();
        let mut again = TypeRegistry::new();
        again
            .add_msg("p/msg/T", &def.to_msg_text())
            .expect("written text parses");
        assert_eq!(again.get("p/msg/T"), Some(&def));
        let _ = reg.resolve("p/msg/T");
        let _ = reg.to_ros2msg("p/msg/T");
    }
    let _ = reg.add_srv("p/srv/S", text);
    let _ = reg.add_action("p/action/A", text);
    let _ = reg.add_ros2msg("p/msg/R", text);
    if let Ok(names) = TypeRegistry::new().add_idl(text) {
        for n in names {
            let _ = reg.resolve(&n.full());
        }
    }
});
