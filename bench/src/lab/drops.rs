//! Where datagrams were dropped during a run, apart from the emulated path's loss model: by
//! `roam-wan-relay` (its queue or flow channel full) or by the kernel (a link socket's receive
//! buffer full, per process). A QUIC link's lost packets that neither explains were declared
//! lost without being dropped (reordering, a late acknowledgement).

use std::collections::{BTreeMap, HashMap};

use roam_net::quic::{udp_table, UdpTableRow};
use serde::Serialize;
use serde_json::Value;

/// Local ports from here up are links' sockets (roam's QUIC, the relay's, Zenoh's: the lab's
/// fixed ports 32271+ and the kernel's ephemeral range 32768+); below are DDS participants'
/// (7400 + 250 x domain, 22400-23900 for the lab's domains 60-65).
const LINK_PORT_MIN: u16 = 32_000;

/// Socket inodes a process holds (`socket:[N]` links in /proc/PID/fd).
fn socket_inodes(pid: u32) -> Vec<u64> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    dir.filter_map(|e| {
        let target = std::fs::read_link(e.ok()?.path()).ok()?;
        let t = target.to_str()?;
        t.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
    })
    .collect()
}

/// Kernel drops on the link sockets (UDP, port [`LINK_PORT_MIN`] and up) of a run's
/// processes, sampled while they run (a socket's count goes with it when it closes).
#[derive(Default)]
pub struct SocketDrops {
    /// Per process name and socket inode: the highest count seen.
    seen: HashMap<(String, u64), u64>,
}

impl SocketDrops {
    /// Reads the UDP tables once and notes the link sockets of `procs` (name, pid).
    pub fn sample<'a>(&mut self, procs: impl Iterator<Item = (&'a str, u32)>) {
        let mut table = String::new();
        for f in ["/proc/net/udp", "/proc/net/udp6"] {
            if let Ok(t) = std::fs::read_to_string(f) {
                table.push_str(&t);
            }
        }
        let sockets: HashMap<u64, UdpTableRow> = udp_table(&table)
            .filter(|s| s.port >= LINK_PORT_MIN)
            .map(|s| (s.inode, s))
            .collect();
        for (name, pid) in procs {
            for inode in socket_inodes(pid) {
                if let Some(s) = sockets.get(&inode) {
                    let e = self.seen.entry((name.to_string(), inode)).or_default();
                    *e = (*e).max(s.drops);
                }
            }
        }
    }

    /// Drops per process over the run, for processes with any.
    pub fn by_process(&self) -> BTreeMap<String, u64> {
        let mut out = BTreeMap::new();
        for ((name, _), n) in &self.seen {
            if *n > 0 {
                *out.entry(name.clone()).or_default() += n;
            }
        }
        out
    }
}

/// The relay's drops over a run, both directions of every listener.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RelayDrops {
    pub forwarded_packets: u64,
    /// Discarded by the loss model (the path's configured loss).
    pub loss_model_packets: u64,
    /// Discarded because a queue of the relay was full (not part of the emulated path).
    pub overflow_packets: u64,
    /// Discarded at a shared bottleneck's full queue (part of the emulated path).
    pub bottleneck_dropped_packets: u64,
}

impl RelayDrops {
    /// Sums the counters of a `roam-wan-relay --stats-json` file.
    pub fn from_stats(stats: &Value) -> Option<RelayDrops> {
        let mut d = RelayDrops::default();
        for l in stats.get("listeners")?.as_array()? {
            for dir in ["client_to_target", "target_to_client"] {
                let c = &l[dir];
                let n = |k: &str| c[k].as_u64().unwrap_or(0);
                d.forwarded_packets += n("forwarded_packets");
                d.loss_model_packets += n("lost_packets");
                d.overflow_packets += n("overflow_packets");
                d.bottleneck_dropped_packets += n("bottleneck_dropped_packets");
            }
        }
        Some(d)
    }

    /// Reads the file a stopped relay wrote.
    pub fn read(path: &std::path::Path) -> Result<RelayDrops, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let v: Value =
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        RelayDrops::from_stats(&v).ok_or_else(|| format!("{}: no listeners", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn socket_drops_keep_each_sockets_highest_count() {
        let mut d = SocketDrops::default();
        d.seen.insert(("proxy-b".into(), 1), 5);
        d.seen.insert(("proxy-b".into(), 2), 7);
        d.seen.insert(("wan-relay".into(), 3), 0);
        assert_eq!(
            d.by_process().into_iter().collect::<Vec<_>>(),
            vec![("proxy-b".to_string(), 12)]
        );
    }

    #[test]
    fn a_full_socket_of_this_process_is_seen() {
        use socket2::{Domain, Socket, Type};
        let rx = Socket::new(Domain::IPV4, Type::DGRAM, None).unwrap();
        rx.set_recv_buffer_size(4096).unwrap();
        rx.bind(
            &"127.0.0.1:0"
                .parse::<std::net::SocketAddr>()
                .unwrap()
                .into(),
        )
        .unwrap();
        let rx: std::net::UdpSocket = rx.into();
        let to = rx.local_addr().unwrap();
        assert!(to.port() >= LINK_PORT_MIN, "an ephemeral port: {to}");
        let tx = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        for _ in 0..200 {
            tx.send_to(&[0u8; 1000], to).unwrap();
        }
        let mut d = SocketDrops::default();
        d.sample([("me", std::process::id())].into_iter());
        let me = d.by_process().get("me").copied().unwrap_or(0);
        assert!(me > 100, "drops seen: {me}");
    }

    #[test]
    fn relay_drops_sum_both_directions_of_every_listener() {
        let stats = serde_json::json!({
            "listeners": [
                {"client_to_target": {"forwarded_packets": 10, "lost_packets": 1, "overflow_packets": 2},
                 "target_to_client": {"forwarded_packets": 5, "lost_packets": 0, "overflow_packets": 3,
                                      "bottleneck_dropped_packets": 4}},
                {"client_to_target": {"forwarded_packets": 1}, "target_to_client": {}}
            ]
        });
        assert_eq!(
            RelayDrops::from_stats(&stats),
            Some(RelayDrops {
                forwarded_packets: 16,
                loss_model_packets: 1,
                overflow_packets: 5,
                bottleneck_dropped_packets: 4,
            })
        );
        assert_eq!(RelayDrops::from_stats(&serde_json::json!({})), None);
    }
}
