//! The metrics endpoint (`metrics_listen:`): `GET /metrics` answers with a snapshot taken
//! for that request, rendered by [`Exposition`] (OpenMetrics when the client asks for it,
//! as Prometheus does, else the classic text format); any other path is 404.
//!
//! It is a plain HTTP/1.1 listener (hyper), meant for a Prometheus server or `curl` on a
//! trusted network: no TLS, no authentication, like the exporters it sits beside. It holds
//! at most [`MAX_CONNECTIONS`] connections at once and gives a client
//! [`HEADER_TIMEOUT`] to send its request, so a slow or hostile peer cannot pile up memory.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};

use super::prometheus::{
    to_classic_text, Exposition, CLASSIC_CONTENT_TYPE, CONTENT_TYPE as OPENMETRICS,
};
use super::Metrics;

/// Connections served at once; more wait in the kernel's backlog.
pub const MAX_CONNECTIONS: usize = 16;
/// How long a client may take to send its request's headers.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the endpoint could not start.
#[derive(Debug, thiserror::Error)]
pub enum MetricsEndpointError {
    #[error("metrics_listen {addr}: cannot listen: {source}")]
    Bind {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
}

/// A running endpoint; it stops (with every connection it serves) when dropped.
#[derive(Debug)]
pub struct MetricsEndpoint {
    addr: SocketAddr,
    task: JoinHandle<()>,
}

impl MetricsEndpoint {
    /// Listens on `addr` (port 0: any free port; see [`Self::local_addr`]) and serves
    /// `metrics` there until dropped.
    pub async fn bind(
        addr: SocketAddr,
        metrics: Metrics,
        exposition: Exposition,
    ) -> Result<Self, MetricsEndpointError> {
        let bind_err = |source| MetricsEndpointError::Bind { addr, source };
        let listener = TcpListener::bind(addr).await.map_err(bind_err)?;
        let local = listener.local_addr().map_err(bind_err)?;
        let task = tokio::spawn(serve(listener, metrics, exposition));
        Ok(MetricsEndpoint { addr: local, task })
    }

    /// A process's endpoint (`metrics_listen:`), if it has one: the default exposition, and
    /// the address it serves logged.
    pub async fn start(
        listen: Option<SocketAddr>,
        metrics: &Metrics,
    ) -> Result<Option<Self>, MetricsEndpointError> {
        let Some(addr) = listen else { return Ok(None) };
        let ep = Self::bind(addr, metrics.clone(), Exposition::default()).await?;
        tracing::info!(addr = %ep.local_addr(), "serving metrics at /metrics");
        Ok(Some(ep))
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsEndpoint {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(listener: TcpListener, metrics: Metrics, exposition: Exposition) {
    let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    // Owning the connections' tasks: aborting this task (the endpoint dropped) ends them.
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of file descriptors, say: back off rather than spin.
                tracing::warn!("metrics endpoint: cannot accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let metrics = metrics.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let metrics = metrics.clone();
                async move { Ok::<_, Infallible>(respond(&req, &metrics, exposition).await) }
            });
            let served = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .serve_connection(TokioIo::new(stream), service)
                .await;
            if let Err(e) = served {
                tracing::debug!("metrics endpoint: connection ended: {e}");
            }
            drop(slot);
        });
    }
}

/// What a request asks for.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    Metrics,
    /// `/metrics` with a method other than GET or HEAD.
    MethodNotAllowed,
    NotFound,
}

fn route(method: &Method, path: &str) -> Route {
    match (path, method) {
        ("/metrics", &Method::GET | &Method::HEAD) => Route::Metrics,
        ("/metrics", _) => Route::MethodNotAllowed,
        _ => Route::NotFound,
    }
}

/// Prometheus asks for OpenMetrics first (`Accept: application/openmetrics-text;...`);
/// anyone else (curl, promtool, older scrapers) gets the classic text format.
fn wants_openmetrics<B>(req: &Request<B>) -> bool {
    req.headers()
        .get_all(hyper::header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains("application/openmetrics-text"))
}

async fn respond<B>(
    req: &Request<B>,
    metrics: &Metrics,
    exposition: Exposition,
) -> Response<Full<Bytes>> {
    let text = |status, body: &'static str| {
        let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
        *r.status_mut() = status;
        r.headers_mut().insert(
            CONTENT_TYPE,
            HeaderValue::from_static("text/plain; charset=utf-8"),
        );
        r
    };
    match route(req.method(), req.uri().path()) {
        Route::Metrics => {
            let body = exposition.render(&metrics.snapshot().await);
            let (body, content_type) = match wants_openmetrics(req) {
                true => (body, OPENMETRICS),
                false => (to_classic_text(&body), CLASSIC_CONTENT_TYPE),
            };
            let mut r = Response::new(Full::new(Bytes::from(body)));
            r.headers_mut()
                .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
            r
        }
        Route::MethodNotAllowed => {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "use GET /metrics\n");
            r.headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
            r
        }
        Route::NotFound => text(
            StatusCode::NOT_FOUND,
            "not found: the metrics are at /metrics\n",
        ),
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::metrics::ProcessKind;

    #[test]
    fn only_metrics_is_served() {
        assert_eq!(route(&Method::GET, "/metrics"), Route::Metrics);
        assert_eq!(route(&Method::HEAD, "/metrics"), Route::Metrics);
        assert_eq!(route(&Method::POST, "/metrics"), Route::MethodNotAllowed);
        assert_eq!(route(&Method::GET, "/"), Route::NotFound);
        assert_eq!(route(&Method::GET, "/metrics/x"), Route::NotFound);
    }

    async fn get(addr: SocketAddr, path: &str, accept: &str) -> String {
        let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let req = format!(
            "GET {path} HTTP/1.1\r\nHost: x\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
        );
        s.write_all(req.as_bytes()).await.expect("write");
        let mut out = String::new();
        s.read_to_string(&mut out).await.expect("read");
        out
    }

    #[tokio::test]
    async fn serves_a_snapshot_over_http_and_404_elsewhere() {
        let metrics = Metrics::new("edge-1", ProcessKind::Proxy);
        let any: SocketAddr = "127.0.0.1:0".parse().expect("addr");
        let ep = MetricsEndpoint::bind(any, metrics, Exposition::default())
            .await
            .expect("bind");
        let prometheus =
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5";
        let ok = get(ep.local_addr(), "/metrics", prometheus).await;
        assert!(ok.starts_with("HTTP/1.1 200"), "{ok}");
        assert!(
            ok.contains("content-type: application/openmetrics-text"),
            "{ok}"
        );
        assert!(
            ok.contains(r#"roam_process_info{id="edge-1",kind="proxy""#),
            "{ok}"
        );
        assert!(ok.ends_with("# EOF\n"), "{ok}");
        let classic = get(ep.local_addr(), "/metrics", "*/*").await;
        assert!(
            classic.contains("content-type: text/plain; version=0.0.4"),
            "{classic}"
        );
        assert!(
            classic.contains("# TYPE roam_process_cpu_seconds_total counter"),
            "{classic}"
        );
        assert!(!classic.contains("# EOF"), "{classic}");
        let missing = get(ep.local_addr(), "/", "*/*").await;
        assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
    }

    #[tokio::test]
    async fn a_taken_address_is_named() {
        let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = taken.local_addr().expect("addr");
        let metrics = Metrics::new("edge-1", ProcessKind::Router);
        let e = MetricsEndpoint::bind(addr, metrics, Exposition::default())
            .await
            .expect_err("taken");
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!("metrics_listen {addr}: cannot listen: ")),
            "{msg}"
        );
    }
}
