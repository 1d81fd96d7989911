//! A link endpoint's QUIC set-up: transport parameters (windows, MTU search, congestion
//! control), the UDP socket and its buffers, and the bounds on connection attempts.

use std::net::SocketAddr;
use std::sync::Arc;

use tracing::warn;

use crate::link::{Congestion, LinkConfig, LinkError};
use crate::tls;
use roam_pki::Identity;

/// The least receive window a link grants, whatever UDP buffer the kernel gave: below this a
/// wide-area path crawls (a window per round trip), which costs more than the rare datagram
/// a too-small buffer drops (the warning of [`udp_socket`] says how to raise it).
const MIN_RECEIVE_WINDOW: usize = 2 << 20;

/// One stream may hold at most this fraction of the connection's window. A stream that cannot
/// move (its topic paused, or its data waiting behind a lost packet) then leaves the rest of
/// the connection's credit, at both ends, to the other topics: with one stream allowed the
/// whole window, a 13 MB image stream over a path losing 1% held it, and the small topics next
/// to it got nothing through (lab E12). The sender's writes stop at the peer's stream window
/// too, so neither can one stream fill the send window.
const STREAM_SHARE: usize = 4;

/// QUIC transport parameters for roam links whose UDP socket holds `socket_buffer` bytes.
///
/// Every window is `cfg.window_bytes` (see [`LinkConfig::window_bytes`]; a stream's receive
/// window a [`STREAM_SHARE`] of it), the receive windows no larger than the socket buffer: a peer may then have no more stream data in flight than
/// the socket can hold while this endpoint is busy, so a fast sender (loopback, a LAN) fills
/// the window instead of overflowing the socket and losing datagrams.
pub fn transport_config(cfg: &LinkConfig, socket_buffer: usize) -> Arc<quinn::TransportConfig> {
    let mut t = quinn::TransportConfig::default();
    t.max_concurrent_uni_streams(((cfg.max_lanes * 2 + 16) as u32).into());
    t.max_concurrent_bidi_streams(0u32.into());
    let receive = receive_window(cfg.window_bytes, socket_buffer);
    let varint = |n: usize| quinn::VarInt::from_u64(n as u64).unwrap_or(quinn::VarInt::MAX);
    t.stream_receive_window(varint(receive / STREAM_SHARE));
    t.receive_window(varint(receive));
    t.send_window(cfg.window_bytes as u64);
    t.keep_alive_interval(Some(cfg.keepalive));
    t.max_idle_timeout(cfg.idle_timeout.try_into().ok());
    t.datagram_receive_buffer_size(Some(4 << 20));
    t.datagram_send_buffer_size(1 << 20);
    let mut mtu = quinn::MtuDiscoveryConfig::default();
    mtu.upper_bound(cfg.max_udp_payload);
    t.mtu_discovery_config(Some(mtu));
    if cfg.ack_every > 0 {
        t.ack_frequency_config(Some(ack_frequency(cfg)));
    }
    let window = cfg.initial_window_bytes;
    let cubic = || {
        let mut c = quinn::congestion::CubicConfig::default();
        c.initial_window(window);
        c
    };
    match cfg.congestion {
        Congestion::Tolerant => {
            t.congestion_controller_factory(Arc::new(crate::congestion::TolerantConfig::new(
                cubic(),
            )));
        }
        Congestion::Cubic => {
            t.congestion_controller_factory(Arc::new(cubic()));
        }
        Congestion::NewReno => {
            let mut reno = quinn::congestion::NewRenoConfig::default();
            reno.initial_window(window);
            t.congestion_controller_factory(Arc::new(reno));
        }
        Congestion::Bbr => {
            let mut bbr = quinn::congestion::BbrConfig::default();
            bbr.initial_window(window);
            t.congestion_controller_factory(Arc::new(bbr));
        }
    }
    Arc::new(t)
}

/// What a link asks of its peer's acknowledgements ([`LinkConfig::ack_every`]). Packets out
/// of order are still acknowledged at once (the extension's reordering threshold, QUIC's
/// packet threshold minus one), so loss is detected as quickly as without it.
fn ack_frequency(cfg: &LinkConfig) -> quinn::AckFrequencyConfig {
    let mut a = quinn::AckFrequencyConfig::default();
    a.ack_eliciting_threshold(cfg.ack_every.saturating_sub(1).into());
    a.max_ack_delay(Some(cfg.max_ack_delay));
    a
}

/// The receive window for `window` bytes asked and a socket holding `socket_buffer`.
fn receive_window(window: usize, socket_buffer: usize) -> usize {
    window.min(socket_buffer.max(MIN_RECEIVE_WINDOW))
}

/// A QUIC endpoint that listens for peers (routers) or only dials (clients, edge routers).
pub fn endpoint(
    id: &Identity,
    cfg: &LinkConfig,
    listen: Option<SocketAddr>,
) -> Result<quinn::Endpoint, LinkError> {
    let addr = listen.unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0)));
    let (socket, socket_buffer) =
        udp_socket(addr, cfg.udp_buffer_bytes).map_err(|source| match listen {
            Some(addr) => LinkError::Bind {
                what: "QUIC (UDP)",
                addr,
                source,
            },
            None => LinkError::Io(source),
        })?;
    let transport = transport_config(cfg, socket_buffer);
    let client = tls::quinn_client_config(id, transport.clone())
        .map_err(|e| LinkError::Connect(e.to_string()))?;
    let server = match listen {
        Some(_) => {
            let mut server = tls::quinn_server_config(id, transport)
                .map_err(|e| LinkError::Connect(e.to_string()))?;
            limit_incoming(&mut server, cfg);
            Some(server)
        }
        None => None,
    };
    if tokio::runtime::Handle::try_current().is_err() {
        return Err(LinkError::Connect("no async runtime for QUIC".into()));
    }
    let runtime = super::timer::EarlyTimerRuntime::new(cfg.max_udp_payload);
    // Tokens its previous life handed out: a restart on the same address resets the peers'
    // stale connections instead of leaving them to the idle timeout (see [`super::reset_key`]).
    let mut ep_cfg = match id.signing_pkcs8.is_empty() {
        // No secret to derive from: quinn's random keys, valid for this life only.
        true => quinn::EndpointConfig::default(),
        false => {
            let secret = &id.signing_pkcs8;
            let mut c =
                quinn::EndpointConfig::new(Arc::new(super::reset_key::ResetKey::derive(secret)));
            let cid_key = super::reset_key::cid_key(secret);
            c.cid_generator(move || {
                Box::new(quinn_proto::HashedConnectionIdGenerator::from_key(cid_key))
            });
            c
        }
    };
    let _ = ep_cfg.max_udp_payload_size(cfg.max_udp_payload);
    let mut ep = quinn::Endpoint::new(ep_cfg, server, socket, runtime)?;
    ep.set_default_client_config(client);
    Ok(ep)
}

/// What quinn holds for connection attempts the router has not looked at yet, bounded like
/// the attempts it has (see [`crate::admission`]): quinn's defaults (65,536 attempts and
/// 100 MiB of their packets) are far above what a router admits. Attempts beyond these are
/// refused by quinn itself. A connection's first flight is a few kilobytes; 64 KiB each is
/// room to spare (roam sends no 0-RTT data).
fn limit_incoming(server: &mut quinn::ServerConfig, cfg: &LinkConfig) {
    const PER_ATTEMPT: u64 = 64 << 10;
    let attempts = cfg.max_unauthenticated.max(1);
    server
        .max_incoming(attempts)
        .incoming_buffer_size(PER_ATTEMPT)
        .incoming_buffer_size_total(PER_ATTEMPT * attempts as u64);
}

/// A UDP socket bound to `addr` with receive and send buffers of `buffer` bytes, as far as
/// the kernel allows, and the receive buffer it got. Root (CAP_NET_ADMIN) may go above
/// `net.core.rmem_max`, so that is asked first; says once how to raise the limit if the
/// kernel gave less than half.
fn udp_socket(addr: SocketAddr, buffer: usize) -> std::io::Result<(std::net::UdpSocket, usize)> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if buffer > 0 && force_buffers(&s, buffer).is_err() {
        let _ = s.set_recv_buffer_size(buffer);
        let _ = s.set_send_buffer_size(buffer);
    }
    // Linux reports twice the size it was given (bookkeeping included).
    let got = s.recv_buffer_size().unwrap_or(0) / 2;
    if buffer > 0 && got < buffer / 2 {
        warn_small_buffer(got, buffer);
    }
    s.bind(&addr.into())?;
    let s: std::net::UdpSocket = s.into();
    super::socket_drops::register(&s);
    Ok((s, got))
}

/// SO_RCVBUFFORCE and SO_SNDBUFFORCE: the sizes regardless of `net.core.rmem_max` and
/// `wmem_max`; refused (EPERM) without CAP_NET_ADMIN.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn force_buffers(s: &socket2::Socket, buffer: usize) -> nix::Result<()> {
    use nix::sys::socket::{setsockopt, sockopt};
    setsockopt(s, sockopt::RcvBufForce, &buffer)?;
    setsockopt(s, sockopt::SndBufForce, &buffer)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn force_buffers(_: &socket2::Socket, _: usize) -> Result<(), ()> {
    Err(())
}

fn warn_small_buffer(got: usize, wanted: usize) {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        warn!(
            "the kernel gave QUIC links a {} KiB UDP receive buffer instead of {} KiB; large \
             messages may lose packets and slow down. Raise the limit: sysctl -w \
             net.core.rmem_max={wanted} net.core.wmem_max={wanted}",
            got >> 10,
            wanted >> 10
        )
    });
}

#[cfg(test)]
mod tests {
    use super::{receive_window, udp_socket, MIN_RECEIVE_WINDOW};

    fn sysctl(name: &str) -> Option<usize> {
        std::fs::read_to_string(format!("/proc/sys/net/core/{name}"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    #[test]
    fn the_endpoint_socket_gets_the_buffers_asked_for_as_far_as_the_kernel_allows() {
        let (Some(rmem_max), Some(wmem_max)) = (sysctl("rmem_max"), sysctl("wmem_max")) else {
            return; // not Linux: the sizes are the platform's business
        };
        // Above the kernel's limit: only root (CAP_NET_ADMIN) gets all of it.
        let wanted = rmem_max.max(wmem_max) + (1 << 20);
        let (socket, got) = udp_socket("127.0.0.1:0".parse().unwrap(), wanted).unwrap();
        let s = socket2::Socket::from(socket);
        // Linux doubles the size it was given (room for its bookkeeping).
        let (recv, send) = (s.recv_buffer_size().unwrap(), s.send_buffer_size().unwrap());
        assert_eq!(
            got,
            recv / 2,
            "the buffer reported is the one the socket has"
        );
        let forced = recv == 2 * wanted && send == 2 * wanted;
        let capped = recv == 2 * rmem_max && send == 2 * wmem_max;
        assert!(forced || capped, "recv {recv}, send {send} for {wanted}");
    }

    #[test]
    fn a_link_grants_no_more_than_its_socket_holds_nor_less_than_the_floor() {
        let mib = 1 << 20;
        assert_eq!(receive_window(8 * mib, 16 * mib), 8 * mib);
        assert_eq!(receive_window(8 * mib, 4 * mib), 4 * mib);
        assert_eq!(receive_window(8 * mib, 208 << 10), MIN_RECEIVE_WINDOW);
        assert_eq!(
            receive_window(mib, 208 << 10),
            mib,
            "never above what was asked"
        );
    }
}
