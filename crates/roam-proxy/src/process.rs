//! What the proxy process does besides forwarding: its entry in `ros_discovery_info` (as a ROS
//! 2 node), its entries in the realms' directories, its signing key, the Display rules'
//! figures. The process itself is wired in the `roam` binary (`proxy_run.rs`), which also
//! starts what a proxy embeds (gateway doors, the MQTT bridge, the dashboard, metrics).

use std::collections::BTreeMap;
use std::sync::Arc;

use roam_dds::{ros_discovery_info, DiscoveryEvent, Endpoint, Participant};
use roam_edge::ros_names::ros_endpoint;
use roam_edge::Edge;
use tracing::{info, warn};

use crate::config::ProxyConfig;
use crate::error::StartError;
use crate::fast_services::Views;
use crate::forwarding::{self, exportable, Forwarding};

/// Logs the Display rules' figures every status interval (never with 0: only at exit).
pub fn display_ticker(
    rules: Arc<crate::rules::ProxyRules>,
    secs: u64,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        if secs == 0 {
            return;
        }
        let mut every = tokio::time::interval(std::time::Duration::from_secs(secs));
        every.tick().await;
        loop {
            every.tick().await;
            rules.log_figures(false);
        }
    })
}

/// The proxy's entries in its realms' directories ([`crate::directory`]): its exports as
/// [`exportable`] decides them for each local publication (looked at again when a pattern
/// adds exports), and its imports.
pub async fn announce_directory(
    cfg: &Arc<ProxyConfig>,
    forwarding: &Forwarding,
    edge: &Edge,
    participant: &Participant,
    realms: &BTreeMap<String, Arc<roam_edge::Realm>>,
) -> Result<crate::directory::ProxyDirectory, StartError> {
    let (c, shared) = (cfg.clone(), forwarding.shared());
    // The directory lists every local server and client of an exported service, whichever
    // convention it speaks.
    let exported = Box::new(move |me: &Participant, ep: &Endpoint| {
        exportable(&c, &forwarding::read(&shared), me, ep, None)
    });
    let imports = crate::directory::imports(cfg);
    let (c, shared) = (cfg.clone(), forwarding.shared());
    let pattern_imported = Box::new(move |dds_topic: &str| {
        forwarding::pattern_imported(&c, &forwarding::read(&shared), dds_topic)
    });
    crate::directory::start(
        edge,
        participant,
        realms,
        imports,
        pattern_imported,
        exported,
        forwarding.changed(),
    )
    .await
}

/// Announces the proxy as a ROS 2 node in `ros_discovery_info`, listing the readers and
/// writers its participant owns, so `ros2 node list` and `ros2 topic info -v` show it. The
/// readers of its second participant (bulk topics, [`crate::intake`]) are a node of their own,
/// `roam_proxy_NAME_bulk`, announced by that participant: rmw finds an endpoint's node through
/// the endpoint's own participant.
pub struct NodeAnnouncer {
    main: ros_discovery_info::NodeAnnouncer,
    /// Made when the second participant's first endpoint appears.
    bulk: Option<ros_discovery_info::NodeAnnouncer>,
    name: String,
    gid: ros_discovery_info::GidSize,
}

impl NodeAnnouncer {
    pub fn new(participant: &Participant, cfg: &ProxyConfig) -> Result<Self, StartError> {
        let name: String = cfg
            .id
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let name = format!("roam_proxy_{name}");
        let gid = ros_discovery_info::GidSize::for_distro(cfg.dds.ros_distro.as_deref());
        let main = ros_discovery_info::NodeAnnouncer::new(participant, "/", &name, gid).map_err(
            |source| StartError::Dds {
                what: "DDS ros_discovery_info",
                source,
            },
        )?;
        Ok(NodeAnnouncer {
            main,
            bulk: None,
            name,
            gid,
        })
    }

    /// Tracks our own ROS endpoints (the RustDDS participant's too); republishes when they
    /// change.
    pub fn observe(&mut self, participant: &Participant, views: &Views, ev: &DiscoveryEvent) {
        let ep = ev.endpoint();
        let ours = participant.owns(ep) || views.is_own(&ep.guid);
        if !ours || ros_endpoint(&ep.topic_name).is_none() {
            return;
        }
        let writer = matches!(ev, DiscoveryEvent::Publication(_));
        let on_sibling = participant.owns(ep) && ep.participant_guid != participant.guid();
        // A reliable write may wait briefly for local readers: keep it off the async workers.
        let res = tokio::task::block_in_place(|| {
            let announcer = if on_sibling {
                self.bulk_announcer(participant)?
            } else {
                &mut self.main
            };
            announcer.set_endpoint(ep.guid, writer, ep.alive)
        });
        if let Err(e) = res {
            warn!("cannot announce the proxy in ros_discovery_info: {e}");
        }
    }

    /// The second participant's announcer, made on first use (the participant exists: one of
    /// its endpoints was seen).
    fn bulk_announcer(
        &mut self,
        participant: &Participant,
    ) -> Result<&mut ros_discovery_info::NodeAnnouncer, roam_dds::DdsError> {
        match self.bulk {
            Some(ref mut made) => Ok(made),
            None => {
                let sibling = participant.sibling()?;
                let name = format!("{}_bulk", self.name);
                let made = ros_discovery_info::NodeAnnouncer::new(&sibling, "/", &name, self.gid)?;
                Ok(self.bulk.insert(made))
            }
        }
    }
}

/// The key the proxy signs its envelopes with, if it signs: `sign:` as configured, else
/// whenever one of its realms refuses unsigned envelopes (its members could not read this
/// proxy otherwise). A signing proxy whose key is not among a signed realm's members is
/// refused by every receiver there, so that is said at start.
pub fn signing_identity(
    cfg: &ProxyConfig,
    realms: &BTreeMap<String, Arc<roam_edge::realm::Realm>>,
) -> Result<Option<Arc<roam_proto::SigningIdentity>>, StartError> {
    let sign = cfg
        .sign
        .unwrap_or_else(|| realms.values().any(|r| r.require_signed));
    if !sign {
        return Ok(None);
    }
    let id = roam_pki::load_identity(&cfg.pki, &cfg.id)?;
    let signer = roam_proto::SigningIdentity::from_pkcs8(&id.signing_pkcs8)?;
    for (name, realm) in realms {
        if realm.require_signed && !realm.members.contains_key(&signer.public_key()) {
            warn!(
                realm = %name,
                "this proxy signs, but its key is not among the realm's members: receivers there refuse what it sends (roam realm add-member {} --realm FILE --pki DIR)",
                cfg.id
            );
        }
    }
    info!("signing every envelope as {}", cfg.id);
    Ok(Some(Arc::new(signer)))
}
