//! Reaching a router, for a router's own dialers and for client sessions alike: one way to
//! dial a peer (QUIC or TCP+TLS), one backoff policy, and one explanation of failures in
//! words that say what to check.

use std::time::Duration;

use crate::inbound::Inbound;
use crate::link::{Established, LinkConfig, LinkError, LinkId, LocalInfo};
use crate::peer_addr::PeerAddr;
use crate::{mqtt, quic, tcp};
use roam_pki::Identity;

/// Dials `peer` once: a QUIC connection on `ep`, or TCP+TLS with `identity`; the handshake
/// and the Hello exchange complete or fail within the link's handshake timeout.
pub(crate) async fn dial(
    ep: &quinn::Endpoint,
    identity: &Identity,
    peer: &PeerAddr,
    me: &LocalInfo,
    link: &LinkConfig,
    id: LinkId,
    inbound: Inbound,
) -> Result<Established, LinkError> {
    match peer {
        PeerAddr::Quic(addr) => quic::dial(ep, *addr, me, link, id, inbound).await,
        PeerAddr::Tcp(addr) => tcp::dial(identity, *addr, me, link, id, inbound).await,
        PeerAddr::Mqtt(m) => mqtt::dial(identity, m, me, link, id, inbound).await,
    }
}

/// Exponential backoff between attempts: 100 ms, doubling, at most `max`; reset once a link
/// is up.
#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    next: Duration,
    max: Duration,
}

const FIRST_RETRY: Duration = Duration::from_millis(100);

impl Backoff {
    pub(crate) fn new(max: Duration) -> Self {
        Self {
            next: FIRST_RETRY,
            max,
        }
    }

    /// The wait before the next attempt (the one after will be longer).
    pub(crate) fn next_wait(&mut self) -> Duration {
        let w = self.next;
        self.next = (self.next * 2).min(self.max.max(FIRST_RETRY));
        w
    }

    pub(crate) fn reset(&mut self) {
        self.next = FIRST_RETRY;
    }
}

/// The handshake that paces a dialer's attempts: the quickest one to that peer so far (the
/// first is often slow, made while the machine starts everything at once, and a slow one
/// later is the machine's moment, not the path's; a peer that moved farther away gets
/// longer attempts by [`attempt_timeout`]'s doubling).
pub(crate) fn quickest(so_far: Option<Duration>, handshake: Duration) -> Duration {
    so_far.map_or(handshake, |q| q.min(handshake))
}

/// How long one dial attempt waits for an answer. Before the router was ever reached: the
/// link's handshake timeout. Once it was: four times its quickest handshake plus 100 ms, at least
/// 200 ms, doubled after each 8 attempts in a row went unanswered, at most the timeout; an
/// unanswered attempt is followed by the next at once. A router that died and comes back on
/// its address is then reached within about that long (a restart of a second: back within a
/// fifth of one on a LAN), where one attempt left to QUIC's own retransmissions of its first
/// packet (1 s, then 2 s, ...) could wait for seconds more; a far router keeps an attempt as
/// long as its handshake needs, and one slowed down (a loaded machine) gets longer attempts
/// until one is long enough. An attempt costs one small packet (and the peer, once up, a
/// handshake it may abandon), so five a second to a router that is down cost nothing.
pub(crate) fn attempt_timeout(
    quickest_handshake: Option<Duration>,
    timeout: Duration,
    unanswered: u32,
) -> Duration {
    match quickest_handshake {
        None => timeout,
        Some(h) => (h * 4 + Duration::from_millis(100))
            .max(Duration::from_millis(200))
            .saturating_mul(1 << (unanswered / 8).min(6))
            .min(timeout),
    }
}

/// Why a dial failed, in words that say what to check.
pub fn why_unreachable(router: &PeerAddr, e: &LinkError, waited: Duration) -> String {
    match e {
        // QUIC reports it as a failed handshake, TCP as an alert on the stream.
        LinkError::Connect(m) | LinkError::Hello(m) if m.to_ascii_lowercase().contains("revoked") => format!(
            "the certificate was refused as revoked (it is on the CA's revocation list; `roam pki revoke` put it there): {m}"
        ),
        LinkError::Io(io) if io.kind() == std::io::ErrorKind::ConnectionRefused => format!(
            "connection refused: nothing listens on {router} (is the router running, with --listen-tcp for tcp://?)"
        ),
        LinkError::Io(io) => format!("network error: {io}"),
        // quinn's words for a handshake that got no answer.
        LinkError::Connect(m) if m.contains("timed out") => no_answer(router, waited),
        LinkError::Connect(m) => format!("connection failed: {m}"),
        LinkError::Certificate(m) => format!(
            "the router's certificate was refused: {m} (are both ends from the same `roam pki` CA?)"
        ),
        LinkError::Hello(m) => format!("the router refused the link: {m}"),
        // QUIC has no connection before its handshake: silence is all a dialer sees.
        LinkError::HandshakeTimeout(t) if matches!(router, PeerAddr::Quic(_)) => {
            no_answer(router, *t)
        }
        LinkError::HandshakeTimeout(t) => format!(
            "the router accepted the connection but did not complete the handshake within {t:?} (link.handshake_timeout_ms): is it overloaded, or is this port something else?"
        ),
        // Dialers do not bind listeners; kept for completeness.
        e @ LinkError::Bind { .. } => e.to_string(),
    }
}

/// What no answer at all means, by transport.
pub fn no_answer(router: &PeerAddr, waited: Duration) -> String {
    match router {
        PeerAddr::Quic(a) => format!(
            "no answer within {waited:?}: is a router listening on UDP {a}? (QUIC needs UDP; where a network blocks it, use tcp://)"
        ),
        PeerAddr::Tcp(a) => format!(
            "no answer within {waited:?}: is the address {a} right, and does a firewall let it through?"
        ),
        PeerAddr::Mqtt(m) => format!(
            "no answer within {waited:?}: is the broker {}:{} up, and a router listening at {m} (listen_mqtt)?",
            m.host, m.port
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_maximum_and_resets() {
        let mut b = Backoff::new(Duration::from_millis(500));
        let waits: Vec<u64> = (0..5).map(|_| b.next_wait().as_millis() as u64).collect();
        assert_eq!(waits, [100, 200, 400, 500, 500]);
        b.reset();
        assert_eq!(b.next_wait(), Duration::from_millis(100));
    }

    #[test]
    fn attempts_follow_the_last_handshake_within_bounds() {
        let ms = Duration::from_millis;
        let t = ms(3000);
        assert_eq!(attempt_timeout(None, t, 0), t);
        // Loopback or a LAN: a fifth of a second.
        assert_eq!(attempt_timeout(Some(ms(2)), t, 0), ms(200));
        // A 150 ms WAN handshake: 700 ms; a satellite's 900 ms: the whole timeout.
        assert_eq!(attempt_timeout(Some(ms(150)), t, 0), ms(700));
        assert_eq!(attempt_timeout(Some(ms(900)), t, 0), t);
        // Never longer than the timeout.
        assert_eq!(attempt_timeout(Some(ms(1)), ms(200), 0), ms(200));
        // Unanswered again and again: twice as long after each 8, up to the timeout.
        let n: Vec<u64> = [7, 8, 16, 24, 32, 1000]
            .map(|u| attempt_timeout(Some(ms(2)), t, u).as_millis() as u64)
            .into();
        assert_eq!(n, [200, 400, 800, 1600, 3000, 3000]);
    }

    #[test]
    fn attempts_are_paced_by_the_quickest_handshake_so_far() {
        let ms = Duration::from_millis;
        // A first handshake made while the machine was busy starting, then quicker ones.
        let mut q = quickest(None, ms(120));
        assert_eq!(q, ms(120));
        q = quickest(Some(q), ms(10));
        q = quickest(Some(q), ms(40));
        assert_eq!(q, ms(10));
        assert_eq!(attempt_timeout(Some(q), ms(3000), 0), ms(200));
    }

    #[test]
    fn failures_say_what_to_check() {
        let quic = PeerAddr::Quic("127.0.0.1:9".parse().unwrap());
        let tcp = PeerAddr::Tcp("127.0.0.1:9".parse().unwrap());
        let t = Duration::from_secs(10);
        let refused = LinkError::Io(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
        assert!(why_unreachable(&tcp, &refused, t)
            .starts_with("connection refused: nothing listens on tcp://127.0.0.1:9"));
        let timed_out = LinkError::Connect("timed out".into());
        let m = why_unreachable(&quic, &timed_out, t);
        assert!(
            m.contains("no answer within 10s") && m.contains("UDP 127.0.0.1:9"),
            "{m}"
        );
        let m = why_unreachable(&quic, &LinkError::HandshakeTimeout(t), t);
        assert!(m.contains("no answer within 10s"), "{m}");
        let m = why_unreachable(&tcp, &LinkError::HandshakeTimeout(t), t);
        assert!(m.contains("did not complete the handshake"), "{m}");
        let m = why_unreachable(
            &quic,
            &LinkError::Connect("invalid peer certificate: Revoked".into()),
            t,
        );
        assert!(m.contains("refused as revoked"), "{m}");
        let m = why_unreachable(&quic, &LinkError::Certificate("unknown issuer".into()), t);
        assert!(
            m.contains("certificate") && m.contains("unknown issuer"),
            "{m}"
        );
    }
}
