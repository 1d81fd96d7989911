//! Where a router reaches its peers: the addresses a `connect:` entry names.

use std::net::SocketAddr;

/// Where to reach a peer router.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerAddr {
    Quic(SocketAddr),
    Tcp(SocketAddr),
    /// Through an MQTT broker, at a rendezvous (docs/operations.md).
    Mqtt(crate::mqtt::MqttPeer),
}

impl std::str::FromStr for PeerAddr {
    type Err = String;

    /// `quic://HOST:PORT`, `tcp://HOST:PORT`, `HOST:PORT` (QUIC), or
    /// `mqtt[s]://[USER:PASS@]HOST:PORT/RENDEZVOUS`.
    fn from_str(s: &str) -> Result<Self, String> {
        let (tcp, rest) = match s.split_once("://") {
            Some(("quic", r)) => (false, r),
            Some(("tcp", r)) => (true, r),
            Some(("mqtt" | "mqtts", _)) => {
                return crate::mqtt::MqttPeer::parse(s).map(PeerAddr::Mqtt)
            }
            Some((scheme, _)) => {
                return Err(format!(
                    "unknown scheme {scheme:?} in {s:?}: use quic://, tcp:// or mqtt://"
                ))
            }
            None => (false, s),
        };
        let addr = resolve(rest)?;
        Ok(if tcp {
            PeerAddr::Tcp(addr)
        } else {
            PeerAddr::Quic(addr)
        })
    }
}

impl std::fmt::Display for PeerAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerAddr::Quic(a) => write!(f, "quic://{a}"),
            PeerAddr::Tcp(a) => write!(f, "tcp://{a}"),
            PeerAddr::Mqtt(m) => write!(f, "{m}"),
        }
    }
}

/// Resolves `HOST:PORT` (names through the system resolver).
pub fn resolve(s: &str) -> Result<SocketAddr, String> {
    use std::net::ToSocketAddrs;
    s.to_socket_addrs()
        .map_err(|e| format!("cannot resolve {s:?}: {e}"))?
        .next()
        .ok_or_else(|| format!("{s:?} resolves to no address"))
}
