//! How the client commands (`roam pub`, `roam sub`, `roam topics`) reach a realm: a client
//! session on a router, and the edge over it.

use std::sync::Arc;
use std::time::Duration;

use roam_edge::{Edge, Port};
use roam_net::client::{Client, ClientConfig, ClientEvent};
use roam_net::link::LinkConfig;
use roam_proto::SigningIdentity;
use tokio::sync::watch;

use super::ConnectArgs;
use roam_config::addr;
use roam_config::link::LinkFile;

/// The client session's settings from the command line.
pub fn client_config(conn: &ConnectArgs) -> Result<ClientConfig, String> {
    // The address first: its mistakes need no PKI to be reported.
    let router = addr::parse_peer(&conn.connect).map_err(|e| format!("--connect: {e}"))?;
    let identity = roam_pki::load_identity(&conn.pki, &conn.id).map_err(|e| e.to_string())?;
    let link = LinkFile {
        max_message_bytes: conn.max_message_bytes,
        ..LinkFile::default()
    }
    .apply(LinkConfig::default())
    .map_err(|e| format!("--max-message-bytes: {}", e.message))?;
    Ok(ClientConfig {
        identity: Arc::new(identity),
        router,
        link,
        // Retrying a router that is down costs one packet a second; finding it back within
        // a second of its return is worth that.
        max_backoff: Duration::from_secs(1),
    })
}

/// A client session on the router and the edge over it.
pub struct ClientEdge {
    pub edge: Edge,
    pub client: Arc<Client>,
    /// Whether the session is connected to its router now.
    pub connected: watch::Receiver<bool>,
}

/// Starts a client session and the edge over it, announcing itself as `id`. Its connection
/// events are logged (`connected` is what scripts and tests wait for: "subscribed through"
/// for `roam sub`).
pub fn client_edge(
    cfg: ClientConfig,
    id: &str,
    connected: &'static str,
    signer: Option<Arc<SigningIdentity>>,
) -> Result<ClientEdge, String> {
    let mut client = Client::start(cfg).map_err(|e| e.to_string())?;
    let (up, up_rx) = watch::channel(false);
    if let Some(mut events) = client.take_events() {
        tokio::spawn(async move {
            while let Some(ev) = events.recv().await {
                match ev {
                    ClientEvent::Connected { router } => {
                        tracing::info!("{connected} {router}");
                        up.send_replace(true);
                    }
                    ClientEvent::Disconnected { .. } => {
                        up.send_replace(false);
                    }
                    _ => {}
                }
            }
        });
    }
    let client = Arc::new(client);
    let port = Port::Client(client.clone());
    let edge = match signer {
        Some(s) => Edge::signed(port, id, s),
        None => Edge::new(port, id),
    };
    Ok(ClientEdge {
        edge,
        client,
        connected: up_rx,
    })
}

/// Follows `realm`'s epochs as `identity` for as long as the returned handle lives (see
/// [`roam_edge::epochs`]): what every member process does before it seals anything.
pub async fn follow_epochs(
    edge: &Edge,
    realm: &Arc<roam_edge::Realm>,
    identity: &roam_pki::Identity,
) -> Result<roam_edge::epochs::EpochFollower, String> {
    let key = roam_proto::epoch_record::MemberKey::from_pkcs8(&identity.signing_pkcs8)
        .map_err(|e| format!("{}: {e}", identity.name))?;
    roam_edge::epochs::follow(edge, realm, key)
        .await
        .map_err(|e| e.to_string())
}
