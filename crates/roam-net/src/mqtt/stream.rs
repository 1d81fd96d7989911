//! A tunnel's byte stream (AsyncRead + AsyncWrite) over two MQTT topics, for the TLS
//! session of an MQTT link: writes become numbered segments published with QoS 1, reads
//! take the other direction's segments in order ([`super::tunnel`]).
//!
//! Back-pressure goes all the way: when the broker connection is busy, the segment writer
//! waits, the stream's small queue fills and writes wait, and so do the link's lanes above.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use roam_mqtt::params::MqttQos;
use roam_mqtt::PublishError;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;

use super::broker::Broker;
use super::tunnel::{Incoming, Reassembler, Segmenter, SEGMENT};

/// Segments queued for the broker connection per tunnel.
const QUEUED: usize = 16;

type Reserve = Pin<
    Box<dyn Future<Output = Result<mpsc::OwnedPermit<Bytes>, mpsc::error::SendError<()>>> + Send>,
>;

pub struct TunnelStream {
    broker: Arc<Broker>,
    in_topic: String,
    inbox: mpsc::Receiver<Bytes>,
    reasm: Reassembler,
    pending: Bytes,
    eof: bool,
    out: mpsc::Sender<Bytes>,
    reserve: Option<Reserve>,
    seg: Segmenter,
    writer: tokio::task::JoinHandle<()>,
}

impl TunnelStream {
    /// A stream reading `in_topic` (already routed: `inbox`) and writing `out_topic`.
    pub fn new(
        broker: Arc<Broker>,
        in_topic: String,
        inbox: mpsc::Receiver<Bytes>,
        out_topic: String,
    ) -> Self {
        let (out, rx) = mpsc::channel(QUEUED);
        let writer = tokio::spawn(write_segments(broker.clone(), out_topic, rx));
        Self {
            broker,
            in_topic,
            inbox,
            reasm: Reassembler::default(),
            pending: Bytes::new(),
            eof: false,
            out,
            reserve: None,
            seg: Segmenter::default(),
            writer,
        }
    }
}

impl TunnelStream {
    /// The listener's side: tells the dialer the tunnel is read (an empty first segment).
    pub fn accept_now(&mut self) {
        let seg = self.seg.data(&[]);
        let _ = self.out.try_send(seg);
    }

    /// The dialer's side: waits for the listener's empty first segment.
    pub async fn accepted(&mut self) -> io::Result<()> {
        let seg = self.inbox.recv().await.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::ConnectionReset,
                "the MQTT broker session was lost",
            )
        })?;
        match self.reasm.accept(seg) {
            Ok(Incoming::Data(b)) if b.is_empty() => Ok(()),
            Ok(_) => Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "not a tunnel's answer",
            )),
            Err(e) => Err(io::Error::new(io::ErrorKind::InvalidData, e)),
        }
    }
}

/// Publishes a tunnel's segments in order; ends when the broker session is gone.
async fn write_segments(broker: Arc<Broker>, topic: String, mut rx: mpsc::Receiver<Bytes>) {
    while let Some(seg) = rx.recv().await {
        loop {
            match broker
                .client
                .try_publish(&topic, seg.clone(), MqttQos::AtLeastOnce)
            {
                Ok(()) => break,
                Err(PublishError::Busy) => tokio::time::sleep(Duration::from_millis(1)).await,
                Err(PublishError::Offline) => return,
            }
        }
    }
}

impl Drop for TunnelStream {
    fn drop(&mut self) {
        self.broker.unroute(&self.in_topic);
        self.writer.abort();
    }
}

impl AsyncRead for TunnelStream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            if !self.pending.is_empty() {
                let n = self.pending.len().min(buf.remaining());
                let chunk = self.pending.split_to(n);
                buf.put_slice(&chunk);
                return Poll::Ready(Ok(()));
            }
            if self.eof {
                return Poll::Ready(Ok(()));
            }
            let seg = match self.inbox.poll_recv(cx) {
                Poll::Ready(Some(seg)) => seg,
                Poll::Ready(None) => {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::ConnectionReset,
                        "the MQTT broker session was lost",
                    )))
                }
                Poll::Pending => return Poll::Pending,
            };
            match self.reasm.accept(seg) {
                Ok(Incoming::Data(b)) => self.pending = b,
                Ok(Incoming::Repeat) => {}
                Ok(Incoming::Fin) => self.eof = true,
                Err(e) => return Poll::Ready(Err(io::Error::new(io::ErrorKind::InvalidData, e))),
            }
        }
    }
}

impl AsyncWrite for TunnelStream {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.reserve.is_none() {
            let out = self.out.clone();
            self.reserve = Some(Box::pin(out.reserve_owned()));
        }
        let Some(r) = self.reserve.as_mut() else {
            return Poll::Pending;
        };
        match r.as_mut().poll(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(_)) => {
                self.reserve = None;
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "the MQTT broker session was lost",
                )))
            }
            Poll::Ready(Ok(permit)) => {
                self.reserve = None;
                let n = buf.len().min(SEGMENT);
                let seg = self.seg.data(&buf[..n]);
                permit.send(seg);
                Poll::Ready(Ok(n))
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let fin = self.seg.fin();
        let _ = self.out.try_send(fin);
        Poll::Ready(Ok(()))
    }
}
