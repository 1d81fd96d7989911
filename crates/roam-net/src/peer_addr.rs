//! Where a router reaches its peers: the addresses a `connect:` entry names.

use std::net::SocketAddr;

/// Why an address was not taken. Each message quotes the address as written.
#[derive(Debug, thiserror::Error)]
pub enum AddrError {
    #[error("unknown scheme {scheme:?} in {addr:?}: use quic://, tcp:// or mqtt://")]
    UnknownScheme { scheme: String, addr: String },
    #[error("cannot resolve {addr:?}: {source}")]
    Unresolved {
        addr: String,
        source: std::io::Error,
    },
    #[error("{addr:?} resolves to no address")]
    NoAddress { addr: String },
    #[error("{addr:?}: expected mqtt:// or mqtts://")]
    NotMqtt { addr: String },
    #[error("{addr:?}: name the rendezvous after the broker: mqtt://HOST:PORT/RENDEZVOUS")]
    NoRendezvous { addr: String },
    #[error("{addr:?}: the rendezvous must be one word without /, + or #")]
    BadRendezvous { addr: String },
    #[error("{addr:?}: {port:?} is not a port")]
    BadPort { addr: String, port: String },
    #[error("{addr:?}: no broker host")]
    NoHost { addr: String },
}

/// Where to reach a peer router.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PeerAddr {
    Quic(SocketAddr),
    Tcp(SocketAddr),
    /// Through an MQTT broker, at a rendezvous (docs/operations.md).
    Mqtt(crate::mqtt::MqttPeer),
}

impl std::str::FromStr for PeerAddr {
    type Err = AddrError;

    /// `quic://HOST:PORT`, `tcp://HOST:PORT`, `HOST:PORT` (QUIC), or
    /// `mqtt[s]://[USER:PASS@]HOST:PORT/RENDEZVOUS`.
    fn from_str(s: &str) -> Result<Self, AddrError> {
        let (tcp, rest) = match s.split_once("://") {
            Some(("quic", r)) => (false, r),
            Some(("tcp", r)) => (true, r),
            Some(("mqtt" | "mqtts", _)) => {
                return crate::mqtt::MqttPeer::parse(s).map(PeerAddr::Mqtt)
            }
            Some((scheme, _)) => {
                return Err(AddrError::UnknownScheme {
                    scheme: scheme.to_owned(),
                    addr: s.to_owned(),
                })
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
pub fn resolve(s: &str) -> Result<SocketAddr, AddrError> {
    use std::net::ToSocketAddrs;
    let addr = || s.to_owned();
    s.to_socket_addrs()
        .map_err(|source| AddrError::Unresolved {
            addr: addr(),
            source,
        })?
        .next()
        .ok_or_else(|| AddrError::NoAddress { addr: addr() })
}
