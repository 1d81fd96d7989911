//! How many datagrams the kernel dropped at this process's QUIC sockets because their receive
//! buffer was full: the loss a link's peer sees that no network caused (a buffer smaller than
//! a burst, a process that reads too slowly). Linux keeps the count per socket in
//! /proc/net/udp (and udp6), found by the socket's inode; the host-wide `RcvbufErrors` also
//! counts every DDS participant's sockets, which drop and repair fragments of their own.
//!
//! Every QUIC endpoint's socket is registered when it is made; [`udp_receive_drops`] sums their
//! counts, and keeps the last count of a socket that has since closed, so the total never goes
//! back (it is a Prometheus counter).

use std::collections::HashMap;
use std::sync::Mutex;

/// Sockets watched at once; beyond this, the oldest closed ones are folded into a total.
const MAX_SOCKETS: usize = 64;

#[derive(Default)]
struct Registry {
    /// Inode -> the highest drop count seen for it.
    sockets: HashMap<u64, u64>,
    /// Drops of sockets no longer watched.
    forgotten: u64,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

/// Watches `socket` from now on (Linux; elsewhere nothing is counted).
pub(super) fn register(socket: &std::net::UdpSocket) {
    let Some(inode) = inode_of(socket) else {
        return;
    };
    let mut guard = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    let r = guard.get_or_insert_with(Registry::default);
    if r.sockets.len() >= MAX_SOCKETS {
        // Fold the sockets that have closed into the total, so the map stays bounded.
        let open = open_sockets();
        let closed: Vec<u64> = r
            .sockets
            .keys()
            .filter(|i| !open.contains_key(i))
            .copied()
            .collect();
        for i in closed {
            r.forgotten += r.sockets.remove(&i).unwrap_or(0);
        }
    }
    if r.sockets.len() < MAX_SOCKETS {
        r.sockets.insert(inode, 0);
    }
}

/// Datagrams dropped at this process's QUIC sockets for a full receive buffer, since they were
/// made; `None` when none is watched (no QUIC endpoint yet, or not Linux).
pub fn udp_receive_drops() -> Option<u64> {
    let mut guard = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    let r = guard.as_mut().filter(|r| !r.sockets.is_empty())?;
    let now = open_sockets();
    let mut total = r.forgotten;
    for (inode, seen) in r.sockets.iter_mut() {
        if let Some(&d) = now.get(inode) {
            *seen = (*seen).max(d);
        }
        total += *seen;
    }
    Some(total)
}

/// Drop counts of the host's UDP sockets (this network namespace's), by inode.
fn open_sockets() -> HashMap<u64, u64> {
    let mut out = HashMap::new();
    for table in ["/proc/net/udp", "/proc/net/udp6"] {
        if let Ok(t) = std::fs::read_to_string(table) {
            out.extend(udp_table(&t).map(|r| (r.inode, r.drops)));
        }
    }
    out
}

/// One row of /proc/net/udp (or udp6): a socket's inode, local port and kernel drop count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpTableRow {
    pub inode: u64,
    pub port: u16,
    pub drops: u64,
}

/// The rows of a /proc/net/udp table: `sl local rem st tx:rx tr:when retrnsmt uid timeout
/// inode ref pointer drops`, after a header line; malformed rows are skipped.
pub fn udp_table(table: &str) -> impl Iterator<Item = UdpTableRow> + '_ {
    table.lines().skip(1).filter_map(|l| {
        let mut f = l.split_whitespace();
        let port = f.nth(1)?.rsplit(':').next()?;
        let port = u16::from_str_radix(port, 16).ok()?;
        let inode = f.nth(7)?.parse().ok()?;
        let drops = f.nth(2)?.parse().ok()?;
        Some(UdpTableRow { inode, port, drops })
    })
}

/// The socket's inode, from what its descriptor links to (`socket:[N]`).
#[cfg(target_os = "linux")]
fn inode_of(socket: &std::net::UdpSocket) -> Option<u64> {
    use std::os::fd::AsRawFd;
    let link = std::fs::read_link(format!("/proc/self/fd/{}", socket.as_raw_fd())).ok()?;
    link.to_str()?
        .strip_prefix("socket:[")?
        .strip_suffix(']')?
        .parse()
        .ok()
}

#[cfg(not(target_os = "linux"))]
fn inode_of(_: &std::net::UdpSocket) -> Option<u64> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_udp_table_gives_each_sockets_port_inode_and_drops() {
        let table = "   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops\n\
            \x20 12: 0100007F:7E0F 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 21781 2 0000000000000000 5066\n\
            \x20 13: 00000000:5889 00000000:0000 07 00000000:00011300 00:00000000 00000000     0        0 21143 2 0000000000000000 0\n\
            short line\n";
        let row = |inode, port, drops| UdpTableRow { inode, port, drops };
        assert_eq!(
            udp_table(table).collect::<Vec<_>>(),
            vec![row(21781, 32271, 5066), row(21143, 22665, 0)]
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn drops_at_a_full_registered_socket_are_counted() {
        use socket2::{Domain, Socket, Type};
        let rx = Socket::new(Domain::IPV4, Type::DGRAM, None).unwrap();
        rx.set_recv_buffer_size(4096).unwrap();
        rx.bind(&std::net::SocketAddr::from(([127, 0, 0, 1], 0)).into())
            .unwrap();
        let rx: std::net::UdpSocket = rx.into();
        // Other tests of this binary register endpoints too: look at the change.
        register(&rx);
        let before = udp_receive_drops().expect("a socket is registered");
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        for _ in 0..200 {
            tx.send_to(&[0u8; 1000], rx.local_addr().unwrap()).unwrap();
        }
        let after = udp_receive_drops().unwrap();
        assert!(after >= before + 100, "{before} -> {after}");
        // Closed, its count stays in the total.
        drop(rx);
        assert!(udp_receive_drops().unwrap() >= after);
    }
}
