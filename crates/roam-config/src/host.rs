//! Checks of what a configuration names on this machine: network interfaces that exist.
//! (Identity files: `roam_pki::check_files`; realm files: `roam_edge::realm::load`.)

/// The names of this machine's network interfaces, from the OS.
pub fn interface_names() -> Result<Vec<String>, String> {
    #[cfg(unix)]
    {
        let list = nix::net::if_::if_nameindex()
            .map_err(|e| format!("cannot list the network interfaces: {e}"))?;
        let mut names: Vec<String> = list
            .iter()
            .map(|i| i.name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }
    #[cfg(not(unix))]
    Err("listing network interfaces is supported on Unix only".into())
}

/// Checks that `name` is one of `known`, naming the interfaces that exist.
pub fn check_interface(name: &str, known: &[String]) -> Result<(), String> {
    if known.iter().any(|k| k == name) {
        return Ok(());
    }
    Err(format!(
        "no network interface {name:?} on this machine (interfaces here: {}; `ip link` lists them)",
        known.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interfaces_are_checked_against_the_os() {
        let here = interface_names().unwrap();
        assert!(here.iter().any(|i| i == "lo"), "{here:?}");
        check_interface("lo", &here).unwrap();
        let e = check_interface("roam-no-such0", &here).unwrap_err();
        assert!(e.contains("\"roam-no-such0\"") && e.contains("lo"), "{e}");
    }
}
