//! `mqtt://[USER:PASS@]HOST:PORT/RENDEZVOUS` (`mqtts://` for TLS to the broker): where a
//! router listens through a broker, and where a dialer finds it.
//!
//! The broker sees only topics derived from the rendezvous by a hash, so two deployments can
//! share a broker without seeing each other's names, and the rendezvous string itself (which
//! may name a site) never appears on the broker.

use std::fmt;

use crate::peer_addr::AddrError;

/// A router reached through an MQTT broker.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct MqttPeer {
    pub host: String,
    pub port: u16,
    pub tls: bool,
    pub user: Option<(String, String)>,
    pub rendezvous: String,
}

impl fmt::Debug for MqttPeer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

impl fmt::Display for MqttPeer {
    /// The address without the password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scheme = if self.tls { "mqtts" } else { "mqtt" };
        let user = match &self.user {
            Some((u, _)) => format!("{u}@"),
            None => String::new(),
        };
        write!(
            f,
            "{scheme}://{user}{}:{}/{}",
            self.host, self.port, self.rendezvous
        )
    }
}

impl MqttPeer {
    /// Parses `mqtt://` and `mqtts://` addresses (the scheme included).
    pub fn parse(s: &str) -> Result<Self, AddrError> {
        let addr = || s.to_owned();
        let (tls, rest) = if let Some(r) = s.strip_prefix("mqtts://") {
            (true, r)
        } else if let Some(r) = s.strip_prefix("mqtt://") {
            (false, r)
        } else {
            return Err(AddrError::NotMqtt { addr: addr() });
        };
        let (authority, rendezvous) = rest
            .split_once('/')
            .ok_or_else(|| AddrError::NoRendezvous { addr: addr() })?;
        if rendezvous.is_empty() || rendezvous.contains(['/', '+', '#', '\0']) {
            return Err(AddrError::BadRendezvous { addr: addr() });
        }
        let (user, hostport) = match authority.rsplit_once('@') {
            Some((userinfo, hp)) => {
                let (u, p) = userinfo.split_once(':').unwrap_or((userinfo, ""));
                (Some((u.to_string(), p.to_string())), hp)
            }
            None => (None, authority),
        };
        let (host, port) = match hostport.rsplit_once(':') {
            Some((h, p)) => (
                h,
                p.parse::<u16>().map_err(|_| AddrError::BadPort {
                    addr: addr(),
                    port: p.to_owned(),
                })?,
            ),
            None => (hostport, if tls { 8883 } else { 1883 }),
        };
        if host.is_empty() {
            return Err(AddrError::NoHost { addr: addr() });
        }
        Ok(MqttPeer {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
            port,
            tls,
            user,
            rendezvous: rendezvous.to_string(),
        })
    }

    /// `roam/<32 hex digits>`: the topics of this rendezvous live under it.
    pub fn base_topic(&self) -> String {
        let d = ring::digest::digest(
            &ring::digest::SHA256,
            format!("roam/mqtt-link/1/{}", self.rendezvous).as_bytes(),
        );
        format!("roam/{}", hex::encode(&d.as_ref()[..16]))
    }

    /// Where dialers ask for a tunnel.
    pub fn accept_topic(&self) -> String {
        format!("{}/accept", self.base_topic())
    }

    /// A tunnel's two directions: (dialer -> listener, listener -> dialer).
    pub fn tunnel_topics(&self, session: &[u8; 16]) -> (String, String) {
        let b = format!("{}/{}", self.base_topic(), hex::encode(session));
        (format!("{b}/c"), format!("{b}/s"))
    }

    /// The broker, as the connection to it is shared: one per broker and credentials.
    pub fn broker_key(&self) -> (String, u16, bool, Option<(String, String)>) {
        (self.host.clone(), self.port, self.tls, self.user.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_and_print_without_the_password() {
        let p = MqttPeer::parse("mqtts://robot:s3cret@broker.example:8884/site-a").unwrap();
        assert_eq!(
            (p.host.as_str(), p.port, p.tls, p.rendezvous.as_str()),
            ("broker.example", 8884, true, "site-a")
        );
        assert_eq!(p.user, Some(("robot".into(), "s3cret".into())));
        assert_eq!(p.to_string(), "mqtts://robot@broker.example:8884/site-a");
        assert_eq!(MqttPeer::parse("mqtt://b/x").unwrap().port, 1883);
        for bad in [
            "mqtt://b:1883",
            "mqtt://b:1883/",
            "mqtt://b:x/y",
            "mqtt://:1/y",
            "mqtt://b/a/b",
            "tcp://b/x",
        ] {
            assert!(MqttPeer::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn topics_hide_the_rendezvous() {
        let p = MqttPeer::parse("mqtt://b/warehouse-7").unwrap();
        let base = p.base_topic();
        assert!(base.starts_with("roam/") && base.len() == 5 + 32, "{base}");
        assert!(!p.accept_topic().contains("warehouse"));
        let (c, s) = p.tunnel_topics(&[0xab; 16]);
        assert!(c.ends_with("/c") && s.ends_with("/s") && c.contains(&"ab".repeat(16)));
        assert_ne!(
            base,
            MqttPeer::parse("mqtt://b/warehouse-8")
                .unwrap()
                .base_topic()
        );
    }
}
