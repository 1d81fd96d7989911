//! Client sessions without a router: what is refused before anything is sent.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use roam_proto::frame::Role;

use super::*;
use crate::test_dir::TempDir;
use roam_pki::Identity;
use roam_pki::{init_ca, issue, load_identity, Validity};

fn identity(dir: &TempDir) -> Arc<Identity> {
    init_ca(dir.path()).unwrap();
    issue(dir.path(), "c", Role::Client, Validity::default()).unwrap();
    Arc::new(load_identity(dir.path(), "c").unwrap())
}

#[tokio::test]
async fn an_envelope_over_the_link_limit_is_refused_before_it_is_sent() {
    let dir = TempDir::new("client-limit");
    let link = LinkConfig {
        max_frame: 1000,
        ..LinkConfig::default()
    };
    let c = Client::start(ClientConfig {
        identity: identity(&dir),
        // Nobody listens: the session stays offline, which is enough here.
        router: PeerAddr::Quic("127.0.0.1:9".parse().unwrap()),
        link,
        max_backoff: Duration::from_millis(100),
    })
    .unwrap();
    assert_eq!(c.max_envelope_len(), 991);
    let e = c.send(Bytes::from(vec![0; 992])).await.unwrap_err();
    assert_eq!(
        e,
        SendError::TooLarge {
            len: 992,
            limit: 991
        }
    );
    assert!(e.to_string().contains("992 bytes"), "{e}");
    c.send(Bytes::from(vec![0; 991])).await.unwrap();
    c.finish().await;
    assert_eq!(c.stats().sent, 0);
}
