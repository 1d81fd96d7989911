//! Real handshakes on loopback: tokio-rustls over TCP, and a quinn endpoint pair.

use std::net::SocketAddr;
use std::time::Duration as StdDuration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::test_dir::TempDir;
use roam_pki::{init_ca, issue, load_identity, Validity};

const TIMEOUT: StdDuration = StdDuration::from_secs(10);

/// A deployment with routers r1, r2, client robot, an expired client, and a second CA's
/// router and client.
struct Fixture {
    _ours: TempDir,
    _theirs: TempDir,
    r1: Identity,
    r2: Identity,
    robot: Identity,
    expired: Identity,
    foreign_router: Identity,
    /// Another CA's client that trusts our CA: the server alone has to refuse it.
    foreign_client: Identity,
}

fn fixture() -> Fixture {
    let ours = TempDir::new("tls-ours");
    let theirs = TempDir::new("tls-theirs");
    let (o, t) = (ours.path(), theirs.path());
    init_ca(o).unwrap();
    init_ca(t).unwrap();
    issue(o, "r1", Role::Router, Validity::default()).unwrap();
    issue(o, "r2", Role::Router, Validity::default()).unwrap();
    issue(o, "robot", Role::Client, Validity::default()).unwrap();
    let now = time::OffsetDateTime::now_utc();
    let past = Validity {
        not_before: now - time::Duration::days(30),
        not_after: now - time::Duration::days(1),
    };
    issue(o, "expired", Role::Client, past).unwrap();
    issue(t, "r1", Role::Router, Validity::default()).unwrap();
    issue(t, "robot", Role::Client, Validity::default()).unwrap();
    Fixture {
        r1: load_identity(o, "r1").unwrap(),
        r2: load_identity(o, "r2").unwrap(),
        robot: load_identity(o, "robot").unwrap(),
        expired: load_identity(o, "expired").unwrap(),
        foreign_router: load_identity(t, "r1").unwrap(),
        foreign_client: Identity {
            ca: load_identity(o, "r1").unwrap().ca,
            ..load_identity(t, "robot").unwrap()
        },
        _ours: ours,
        _theirs: theirs,
    }
}

/// A dialer that trusts `ca` but presents no certificate.
fn anonymous_client(ca: &Identity) -> Arc<rustls::ClientConfig> {
    let mut roots = RootCertStore::empty();
    roots.add(ca.ca.clone()).unwrap();
    let mut c = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    c.alpn_protocols = vec![ALPN.to_vec()];
    Arc::new(c)
}

/// A server presenting `id`'s certificate whatever its role (to test that dialers refuse it).
fn any_server(id: &Identity) -> Arc<rustls::ServerConfig> {
    let mut s = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(id.cert_chain.clone(), id.key.clone_key())
        .unwrap();
    s.alpn_protocols = vec![ALPN.to_vec()];
    Arc::new(s)
}

type Side = Result<PeerIdentity, rustls::Error>;

fn rustls_error(e: std::io::Error) -> rustls::Error {
    match e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) {
        Some(r) => r.clone(),
        None => rustls::Error::General(e.to_string()),
    }
}

/// One TCP+TLS handshake; returns (what the server saw, what the client saw).
async fn tcp(server: Arc<rustls::ServerConfig>, client: Arc<rustls::ClientConfig>) -> (Side, Side) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server_side = tokio::spawn(async move {
        let (sock, _) = listener.accept().await.unwrap();
        let mut tls = tokio_rustls::TlsAcceptor::from(server)
            .accept(sock)
            .await
            .map_err(rustls_error)?;
        let peer = peer_identity(tls.get_ref().1.peer_certificates().unwrap_or_default())
            .map(who)
            .map_err(|e| rustls::Error::General(e.to_string()))?;
        tls.write_all(b"k").await.map_err(rustls_error)?;
        tls.flush().await.map_err(rustls_error)?;
        Ok(peer)
    });
    let client_side = async move {
        let sock = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut tls = tokio_rustls::TlsConnector::from(client)
            .connect(router_server_name(), sock)
            .await
            .map_err(rustls_error)?;
        // TLS 1.3: the server judges our certificate after our handshake is done; its
        // verdict arrives as the first record (data, or an alert).
        let mut b = [0u8; 1];
        tls.read_exact(&mut b).await.map_err(rustls_error)?;
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(ALPN));
        peer_identity(tls.get_ref().1.peer_certificates().unwrap_or_default())
            .map(who)
            .map_err(|e| rustls::Error::General(e.to_string()))
    };
    let client_res = tokio::time::timeout(TIMEOUT, client_side)
        .await
        .expect("client timed out");
    let server_res = tokio::time::timeout(TIMEOUT, server_side)
        .await
        .expect("server timed out")
        .unwrap();
    (server_res, client_res)
}

type QSide = Result<PeerIdentity, String>;

fn quic_peer(conn: &quinn::Connection) -> QSide {
    let certs = conn
        .peer_identity()
        .and_then(|any| any.downcast::<Vec<CertificateDer<'static>>>().ok())
        .ok_or("no peer certificates")?;
    peer_identity(&certs).map(who).map_err(|e| e.to_string())
}

/// One QUIC handshake; errors are [`explain_quic`] texts.
async fn quic(server: quinn::ServerConfig, client: quinn::ClientConfig) -> (QSide, QSide) {
    let loopback: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let server_ep = quinn::Endpoint::server(server, loopback).unwrap();
    let addr = server_ep.local_addr().unwrap();
    let server_side = tokio::spawn(async move {
        let incoming = server_ep.accept().await.ok_or("endpoint closed")?;
        let conn = incoming.await.map_err(|e| explain_quic(&e))?;
        let peer = quic_peer(&conn)?;
        let mut s = conn.open_uni().await.map_err(|e| explain_quic(&e))?;
        s.write_all(b"k").await.map_err(|e| e.to_string())?;
        s.finish().map_err(|e| e.to_string())?;
        // Wait for the client to read it and close.
        let _ = tokio::time::timeout(TIMEOUT, conn.closed()).await;
        server_ep.wait_idle().await;
        Ok::<_, String>(peer)
    });
    let mut client_ep = quinn::Endpoint::client(loopback).unwrap();
    client_ep.set_default_client_config(client);
    let client_side = async {
        let conn = client_ep
            .connect(addr, ROUTER_SERVER_NAME)
            .map_err(|e| e.to_string())?
            .await
            .map_err(|e| explain_quic(&e))?;
        let mut s = conn.accept_uni().await.map_err(|e| explain_quic(&e))?;
        let got = s.read_to_end(16).await.map_err(|e| e.to_string())?;
        assert_eq!(got, b"k");
        let hs = conn
            .handshake_data()
            .and_then(|h| h.downcast::<quinn::crypto::rustls::HandshakeData>().ok());
        assert_eq!(hs.and_then(|h| h.protocol), Some(ALPN.to_vec()));
        let peer = quic_peer(&conn);
        conn.close(0u32.into(), b"done");
        peer
    };
    let client_res = tokio::time::timeout(TIMEOUT, client_side)
        .await
        .expect("client timed out");
    let server_res = tokio::time::timeout(TIMEOUT, server_side)
        .await
        .expect("server timed out")
        .unwrap();
    client_ep.wait_idle().await;
    (server_res, client_res)
}

fn transport() -> Arc<quinn::TransportConfig> {
    Arc::new(quinn::TransportConfig::default())
}

fn qserver(id: &Identity) -> quinn::ServerConfig {
    quinn_server_config(id, transport()).unwrap()
}

fn qclient(id: &Identity) -> quinn::ClientConfig {
    quinn_client_config(id, transport()).unwrap()
}

fn qclient_raw(c: Arc<rustls::ClientConfig>) -> quinn::ClientConfig {
    quinn::ClientConfig::new(Arc::new(
        quinn::crypto::rustls::QuicClientConfig::try_from(c).unwrap(),
    ))
}

fn qserver_raw(s: Arc<rustls::ServerConfig>) -> quinn::ServerConfig {
    quinn::ServerConfig::with_crypto(Arc::new(
        quinn::crypto::rustls::QuicServerConfig::try_from(s).unwrap(),
    ))
}

/// Who the peer is, without which of its certificates it showed.
fn peer(name: &str, role: Role) -> PeerIdentity {
    PeerIdentity {
        name: name.into(),
        role,
        serial: Vec::new(),
        not_after: 0,
    }
}

fn who(p: PeerIdentity) -> PeerIdentity {
    peer(&p.name, p.role)
}

#[track_caller]
fn assert_contains(res: &QSide, needle: &str) {
    match res {
        Err(e) => assert!(e.contains(needle), "expected {needle:?} in {e:?}"),
        Ok(p) => panic!("expected a failure with {needle:?}, got {p:?}"),
    }
}

// ---- TCP + TLS ----

#[tokio::test]
async fn tcp_router_to_router() {
    let f = fixture();
    let (s, c) = tcp(server_config(&f.r1).unwrap(), client_config(&f.r2).unwrap()).await;
    assert_eq!(s.unwrap(), peer("r2", Role::Router));
    assert_eq!(c.unwrap(), peer("r1", Role::Router));
}

#[tokio::test]
async fn tcp_client_to_router() {
    let f = fixture();
    let (s, c) = tcp(
        server_config(&f.r1).unwrap(),
        client_config(&f.robot).unwrap(),
    )
    .await;
    assert_eq!(s.unwrap(), peer("robot", Role::Client));
    assert_eq!(c.unwrap(), peer("r1", Role::Router));
}

#[tokio::test]
async fn tcp_rejects_client_without_certificate() {
    let f = fixture();
    let (s, c) = tcp(server_config(&f.r1).unwrap(), anonymous_client(&f.r1)).await;
    let s = s.unwrap_err();
    assert_eq!(s, rustls::Error::NoCertificatesPresented);
    assert!(TlsError::Handshake(s)
        .to_string()
        .contains("presented no certificate"));
    let c = c.unwrap_err();
    assert_eq!(
        c,
        rustls::Error::AlertReceived(AlertDescription::CertificateRequired)
    );
    assert!(
        explain(&c).contains("requires our certificate"),
        "{}",
        explain(&c)
    );
}

#[tokio::test]
async fn tcp_rejects_client_from_another_ca() {
    let f = fixture();
    let (s, c) = tcp(
        server_config(&f.r1).unwrap(),
        client_config(&f.foreign_client).unwrap(),
    )
    .await;
    let s = s.unwrap_err();
    assert_eq!(
        s,
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)
    );
    let text = TlsError::Handshake(s).to_string();
    assert!(
        text.contains("not issued by this deployment's CA") && text.contains("rustls:"),
        "{text}"
    );
    let c = c.unwrap_err();
    assert_eq!(c, rustls::Error::AlertReceived(AlertDescription::UnknownCA));
    assert!(
        explain(&c).contains("not issued by the peer's CA"),
        "{}",
        explain(&c)
    );
}

#[tokio::test]
async fn tcp_rejects_expired_client() {
    let f = fixture();
    let (s, c) = tcp(
        server_config(&f.r1).unwrap(),
        client_config(&f.expired).unwrap(),
    )
    .await;
    let s = s.unwrap_err();
    assert!(
        matches!(
            s,
            rustls::Error::InvalidCertificate(
                CertificateError::Expired | CertificateError::ExpiredContext { .. }
            )
        ),
        "{s:?}"
    );
    assert!(explain(&s).contains("expired"), "{}", explain(&s));
    let c = c.unwrap_err();
    assert_eq!(
        c,
        rustls::Error::AlertReceived(AlertDescription::CertificateExpired)
    );
    assert!(explain(&c).contains("has expired"));
}

#[tokio::test]
async fn tcp_dialer_refuses_client_certificate_as_server() {
    let f = fixture();
    let (_, c) = tcp(any_server(&f.robot), client_config(&f.r2).unwrap()).await;
    let c = c.unwrap_err();
    assert!(
        matches!(
            c,
            rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName
                    | CertificateError::NotValidForNameContext { .. }
                    | CertificateError::InvalidPurpose
                    | CertificateError::InvalidPurposeContext { .. }
            )
        ),
        "{c:?}"
    );
}

#[tokio::test]
async fn tcp_dialer_refuses_server_from_another_ca() {
    let f = fixture();
    let (_, c) = tcp(
        server_config(&f.foreign_router).unwrap(),
        client_config(&f.robot).unwrap(),
    )
    .await;
    assert_eq!(
        c.unwrap_err(),
        rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer)
    );
}

#[test]
fn client_identity_cannot_serve() {
    let f = fixture();
    let err = server_config(&f.robot).unwrap_err();
    assert!(matches!(err, TlsError::NotARouter { .. }), "{err}");
    assert!(quinn_server_config(&f.robot, transport()).is_err());
}

// ---- QUIC ----

#[tokio::test]
async fn quic_router_to_router() {
    let f = fixture();
    let (s, c) = quic(qserver(&f.r1), qclient(&f.r2)).await;
    assert_eq!(s.unwrap(), peer("r2", Role::Router));
    assert_eq!(c.unwrap(), peer("r1", Role::Router));
}

#[tokio::test]
async fn quic_client_to_router() {
    let f = fixture();
    let (s, c) = quic(qserver(&f.r1), qclient(&f.robot)).await;
    assert_eq!(s.unwrap(), peer("robot", Role::Client));
    assert_eq!(c.unwrap(), peer("r1", Role::Router));
}

#[tokio::test]
async fn quic_rejects_client_without_certificate() {
    let f = fixture();
    let (s, c) = quic(qserver(&f.r1), qclient_raw(anonymous_client(&f.r1))).await;
    assert_contains(&s, "the peer presented no certificate");
    assert_contains(&c, "requires our certificate");
}

#[tokio::test]
async fn quic_rejects_client_from_another_ca() {
    let f = fixture();
    let (s, c) = quic(qserver(&f.r1), qclient(&f.foreign_client)).await;
    assert_contains(&s, "not issued by this deployment's CA");
    assert_contains(&c, "not issued by the peer's CA");
}

#[tokio::test]
async fn quic_rejects_expired_client() {
    let f = fixture();
    let (s, c) = quic(qserver(&f.r1), qclient(&f.expired)).await;
    assert_contains(&s, "the peer certificate has expired");
    assert_contains(&c, "has expired");
}

#[tokio::test]
async fn quic_dialer_refuses_client_certificate_as_server() {
    let f = fixture();
    let (s, c) = quic(qserver_raw(any_server(&f.robot)), qclient(&f.r2)).await;
    assert_contains(&c, "client certificate used as a router");
    assert!(s.is_err(), "{s:?}");
}

#[tokio::test]
async fn quic_dialer_refuses_server_from_another_ca() {
    let f = fixture();
    let (_, c) = quic(qserver(&f.foreign_router), qclient(&f.robot)).await;
    assert_contains(&c, "not issued by this deployment's CA");
}

// ---- identities ----

#[test]
fn router_id_is_stable_and_distinct() {
    assert_eq!(router_id("r1"), router_id("r1"));
    assert_ne!(router_id("r1"), router_id("r2"));
    // First 8 bytes of SHA-256("roam-router-id" || "r1"), computed independently.
    let d = ring::digest::digest(&ring::digest::SHA256, b"roam-router-idr1");
    assert_eq!(router_id("r1").to_be_bytes(), d.as_ref()[..8]);
}

#[test]
fn peer_identity_needs_a_certificate() {
    assert!(matches!(
        peer_identity(&[]),
        Err(TlsError::NoPeerCertificate)
    ));
    let junk = CertificateDer::from(vec![1, 2, 3]);
    assert!(matches!(
        peer_identity(&[junk]),
        Err(TlsError::NotAnIdentity(_))
    ));
}

// ---- revocation ----

/// Revokes `name` with the fixture's CA and has every identity loaded from its directory
/// read the new list, as a router's watch of the file does.
fn revoke(f: &Fixture, name: &str) {
    roam_pki::revoke(
        f._ours.path(),
        &roam_pki::Target::Name(name.into()),
        roam_pki::Reason::KeyCompromise,
    )
    .unwrap();
    for id in [&f.r1, &f.r2, &f.robot] {
        id.revoked.reload().unwrap();
    }
}

#[tokio::test]
async fn a_revoked_client_is_refused_by_a_server_built_before_the_revocation() {
    let f = fixture();
    let server = server_config(&f.r1).unwrap();
    let qs = || qserver(&f.r1);
    let (s, _) = tcp(server.clone(), client_config(&f.robot).unwrap()).await;
    assert_eq!(s.unwrap(), peer("robot", Role::Client), "accepted before");

    revoke(&f, "robot");
    let (s, c) = tcp(server, client_config(&f.robot).unwrap()).await;
    let s = s.unwrap_err();
    assert_eq!(
        s,
        rustls::Error::InvalidCertificate(CertificateError::Revoked)
    );
    assert!(explain(&s).contains("revoked"), "{}", explain(&s));
    let c = c.unwrap_err();
    assert!(explain(&c).contains("revoked"), "{}", explain(&c));

    let (s, c) = quic(qs(), qclient(&f.robot)).await;
    assert!(s.unwrap_err().contains("revoked"));
    assert!(c.unwrap_err().contains("revoked"));
    // Others are still let in.
    let (s, _) = quic(qs(), qclient(&f.r2)).await;
    assert_eq!(s.unwrap(), peer("r2", Role::Router));
}

#[tokio::test]
async fn a_dialer_refuses_a_revoked_router() {
    let f = fixture();
    revoke(&f, "r1");
    let (_, c) = tcp(server_config(&f.r1).unwrap(), client_config(&f.r2).unwrap()).await;
    assert_eq!(
        c.unwrap_err(),
        rustls::Error::InvalidCertificate(CertificateError::Revoked)
    );
}
