//! Checks of what a configuration names on this machine: network interfaces that exist.
//! (Identity files: `roam_pki::check_files`; realm files: `roam_edge::realm::load`.)

/// What a file names that this machine does not have.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot list the network interfaces: {0}")]
    List(String),
    #[error("no network interface {name:?} on this machine (interfaces here: {}; `ip link` lists them)", known.join(", "))]
    NoInterface { name: String, known: Vec<String> },
}

/// The names of this machine's network interfaces, from the OS.
pub fn interface_names() -> Result<Vec<String>, HostError> {
    #[cfg(unix)]
    {
        let list = nix::net::if_::if_nameindex().map_err(|e| HostError::List(e.to_string()))?;
        let mut names: Vec<String> = list
            .iter()
            .map(|i| i.name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }
    #[cfg(not(unix))]
    Err(HostError::List("supported on Unix only".into()))
}

/// Checks that `name` is one of `known`, naming the interfaces that exist.
pub fn check_interface(name: &str, known: &[String]) -> Result<(), HostError> {
    if known.iter().any(|k| k == name) {
        return Ok(());
    }
    Err(HostError::NoInterface {
        name: name.to_owned(),
        known: known.to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interfaces_are_checked_against_the_os() {
        let here = interface_names().unwrap();
        assert!(here.iter().any(|i| i == "lo"), "{here:?}");
        check_interface("lo", &here).unwrap();
        let e = check_interface("roam-no-such0", &here)
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"roam-no-such0\"") && e.contains("lo"), "{e}");
    }
}
