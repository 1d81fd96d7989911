//! What a router process is configured with, and the routing core's settings from it.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use roam_proto::RouterId;

use super::PeerAddr;
use crate::link::LinkConfig;
use roam_pki::Identity;

/// Timers of the routing core.
#[derive(Debug, Clone)]
pub struct RoutingTimers {
    pub lsa_refresh: Duration,
    pub advert_refresh: Duration,
    pub sub_refresh: Duration,
}

impl Default for RoutingTimers {
    fn default() -> Self {
        Self {
            lsa_refresh: Duration::from_secs(10),
            advert_refresh: Duration::from_secs(30),
            sub_refresh: Duration::from_secs(30),
        }
    }
}

/// Everything a router process needs.
#[derive(Clone)]
pub struct RouterConfig {
    pub identity: Arc<Identity>,
    pub listen: Option<SocketAddr>,
    pub listen_tcp: Option<SocketAddr>,
    /// Rendezvous in MQTT brokers where dialers find this router.
    pub listen_mqtt: Vec<crate::mqtt::MqttPeer>,
    pub connect: Vec<PeerAddr>,
    pub link: LinkConfig,
    pub timers: RoutingTimers,
    /// Longest wait between reconnection attempts.
    pub max_backoff: Duration,
    /// How long a reliable topic waits for a full subscriber link before that link loses
    /// the waiting messages (so one stuck subscriber cannot stop a topic for everyone).
    pub stall_timeout: Duration,
}

pub(super) fn routing_config(
    id: RouterId,
    t: &RoutingTimers,
    client_max_names: usize,
) -> roam_routing::Config {
    let now_us = crate::latency::now_us().max(1);
    roam_routing::Config {
        router_id: id,
        initial_seq: now_us,
        lsa_refresh: t.lsa_refresh,
        lsa_lifetime: t.lsa_refresh * 4,
        advert_refresh: t.advert_refresh,
        advert_lifetime: t.advert_refresh * 3,
        sub_refresh: t.sub_refresh,
        sub_lifetime: t.sub_refresh * 3,
        query_ttl: 16,
        withdraw_linger: Duration::from_secs(2),
        client_max_names,
    }
}
