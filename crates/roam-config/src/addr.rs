//! Addresses as users write them (`HOST:PORT`, `quic://HOST:PORT`, `tcp://HOST:PORT`),
//! checked for their shape before anything resolves them, so a mistake says what is wrong
//! (a missing port, a port out of range) instead of the resolver's `invalid socket address`.

use std::net::SocketAddr;

use roam_net::runtime::{self, PeerAddr};

/// The port roam's examples use.
const EXAMPLE_PORT: u16 = 7447;

/// Why an address is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AddrError {
    #[error("missing port in {addr:?} (e.g. {example})")]
    MissingPort { addr: String, example: String },
    #[error(
        "missing host in {0:?} (e.g. 127.0.0.1:7447, or 0.0.0.0:7447 to listen on every interface)"
    )]
    MissingHost(String),
    #[error("port {port:?} in {addr:?} is not a number from {min} to 65535")]
    BadPort {
        addr: String,
        port: String,
        min: u16,
    },
    #[error("unknown scheme {scheme:?} in {addr:?}: use quic://HOST:PORT, tcp://HOST:PORT, HOST:PORT (QUIC) or mqtt://HOST:PORT/RENDEZVOUS")]
    BadScheme { addr: String, scheme: String },
    #[error("{0}")]
    Mqtt(String),
}

/// What an address is for: a listener may take port 0 (any free port), a dialer may not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Use {
    Listen,
    Connect,
}

/// Checks `HOST:PORT` (IPv6 hosts in brackets: `[::1]:7447`) without resolving it.
pub fn check_host_port(s: &str, usage: Use) -> Result<(), AddrError> {
    let missing_port = || AddrError::MissingPort {
        addr: s.into(),
        example: if s.contains(':') && !s.starts_with('[') {
            format!("[{s}]:{EXAMPLE_PORT}")
        } else {
            format!("{s}:{EXAMPLE_PORT}")
        },
    };
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        // [v6]:port
        let (host, after) = rest.split_once(']').ok_or_else(missing_port)?;
        let port = after.strip_prefix(':').ok_or_else(missing_port)?;
        (host, port)
    } else {
        match s.rsplit_once(':') {
            // An IPv6 address without brackets has no room for a port.
            Some((host, _)) if host.contains(':') => return Err(missing_port()),
            Some(hp) => hp,
            None => return Err(missing_port()),
        }
    };
    if host.is_empty() {
        return Err(AddrError::MissingHost(s.into()));
    }
    let min = match usage {
        Use::Listen => 0,
        Use::Connect => 1,
    };
    match port.parse::<u16>() {
        Ok(p) if p >= min => Ok(()),
        _ => Err(AddrError::BadPort {
            addr: s.into(),
            port: port.into(),
            min,
        }),
    }
}

/// Checks a router address: `quic://HOST:PORT`, `tcp://HOST:PORT` or `HOST:PORT` (QUIC).
pub fn check_peer(s: &str) -> Result<(), AddrError> {
    let rest = match s.split_once("://") {
        Some(("quic" | "tcp", rest)) => rest,
        Some(("mqtt" | "mqtts", _)) => {
            return roam_net::mqtt::MqttPeer::parse(s)
                .map(|_| ())
                .map_err(|e| AddrError::Mqtt(e.to_string()))
        }
        Some((scheme, _)) => {
            return Err(AddrError::BadScheme {
                addr: s.into(),
                scheme: scheme.into(),
            })
        }
        None => s,
    };
    check_host_port(rest, Use::Connect)
}

/// An address that is not well-formed, or does not resolve.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    #[error(transparent)]
    Shape(#[from] AddrError),
    #[error(transparent)]
    Resolve(#[from] runtime::AddrError),
}

/// A router address, checked, then resolved.
pub fn parse_peer(s: &str) -> Result<PeerAddr, ResolveError> {
    check_peer(s)?;
    Ok(s.parse()?)
}

/// An address to listen on, checked, then resolved.
pub fn parse_listen(s: &str) -> Result<SocketAddr, ResolveError> {
    check_host_port(s, Use::Listen)?;
    Ok(runtime::resolve(s)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn good_addresses_pass() {
        for ok in [
            "127.0.0.1:7447",
            "quic://cloud.example.com:7447",
            "tcp://[::1]:1",
            "[fe80::1]:65535",
        ] {
            check_peer(ok).unwrap();
        }
        check_host_port("0.0.0.0:0", Use::Listen).unwrap();
    }

    #[test]
    fn mistakes_say_what_is_missing() {
        let e = check_peer("127.0.0.1").unwrap_err().to_string();
        assert_eq!(
            e, "missing port in \"127.0.0.1\" (e.g. 127.0.0.1:7447)",
            "{e}"
        );
        let e = check_peer("quic://cloud").unwrap_err().to_string();
        assert!(
            e.contains("missing port") && e.contains("cloud:7447"),
            "{e}"
        );
        let e = check_peer("::1").unwrap_err().to_string();
        assert!(e.contains("[::1]:7447"), "{e}");
        let e = check_peer("[::1]").unwrap_err().to_string();
        assert!(e.contains("missing port"), "{e}");
        let e = check_peer("127.0.0.1:70000").unwrap_err().to_string();
        assert!(e.contains("\"70000\"") && e.contains("1 to 65535"), "{e}");
        let e = check_peer("127.0.0.1:0").unwrap_err().to_string();
        assert!(e.contains("1 to 65535"), "{e}");
        let e = check_peer("127.0.0.1:http").unwrap_err().to_string();
        assert!(e.contains("not a number"), "{e}");
        let e = check_peer(":7447").unwrap_err().to_string();
        assert!(e.contains("missing host"), "{e}");
        let e = check_peer("udp://a:1").unwrap_err().to_string();
        assert!(e.contains("quic://"), "{e}");
        let e = check_host_port("0.0.0.0:-1", Use::Listen)
            .unwrap_err()
            .to_string();
        assert!(e.contains("0 to 65535"), "{e}");
    }
}
