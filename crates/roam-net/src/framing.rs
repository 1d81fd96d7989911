//! Reading and writing length-prefixed frames on byte streams (QUIC streams, TLS over TCP).

use bytes::{Bytes, BytesMut};
use roam_proto::frame::{data_header, frame_len, LEN_PREFIX};
use roam_proto::{Frame, FrameError, RouterId};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Why a stream of frames ended.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("peer sent a bad frame: {0}")]
    Frame(#[from] FrameError),
    #[error("stream error: {0}")]
    Io(#[from] std::io::Error),
}

/// Reads one frame; `Ok(None)` at a clean end of stream between frames.
/// The length is checked against `limit` before any buffer is allocated for the body.
pub async fn read_frame<R: AsyncRead + Unpin>(
    r: &mut R,
    limit: usize,
) -> Result<Option<Frame>, ReadError> {
    Ok(read_frame_counted(r, limit).await?.map(|(frame, _)| frame))
}

/// [`read_frame`], with the bytes the frame took on the wire (prefix included): where the
/// next frame starts.
pub async fn read_frame_counted<R: AsyncRead + Unpin>(
    r: &mut R,
    limit: usize,
) -> Result<Option<(Frame, usize)>, ReadError> {
    let mut prefix = [0u8; LEN_PREFIX];
    match r.read_exact(&mut prefix[..1]).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    r.read_exact(&mut prefix[1..]).await?;
    let len = frame_len(prefix, limit)?;
    let mut body = BytesMut::zeroed(len);
    r.read_exact(&mut body).await?;
    Ok(Some((Frame::decode(body.freeze())?, LEN_PREFIX + len)))
}

/// Writes one frame. Data envelopes are written from their own buffer, not copied into a frame.
pub async fn write_frame<W: AsyncWrite + Unpin>(w: &mut W, frame: &Frame) -> std::io::Result<()> {
    match frame {
        Frame::Data { origin, envelope } => write_data(w, *origin, envelope).await,
        other => w.write_all(&other.encode()).await,
    }
}

pub async fn write_data<W: AsyncWrite + Unpin>(
    w: &mut W,
    origin: RouterId,
    envelope: &Bytes,
) -> std::io::Result<()> {
    w.write_all(&data_header(origin, envelope.len())).await?;
    w.write_all(envelope).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use roam_proto::frame::Role;

    #[tokio::test]
    async fn frames_round_trip_over_a_pipe() {
        let (mut a, mut b) = tokio::io::duplex(1 << 16);
        let frames = vec![
            Frame::Hello {
                version: 1,
                role: Role::Router,
                id: 7,
                name: "r1".into(),
            },
            Frame::Data {
                origin: 9,
                envelope: Bytes::from(vec![1u8; 100_000]),
            },
            Frame::Subscribe(vec![roam_proto::Name([3; 32])]),
        ];
        let sent = frames.clone();
        let w = tokio::spawn(async move {
            for f in &sent {
                write_frame(&mut a, f).await.unwrap();
            }
        });
        for f in &frames {
            assert_eq!(read_frame(&mut b, 1 << 20).await.unwrap().as_ref(), Some(f));
        }
        w.await.unwrap();
        assert!(read_frame(&mut b, 1 << 20).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn oversized_frame_is_refused_before_allocation() {
        let (mut a, mut b) = tokio::io::duplex(64);
        a.write_all(&u32::MAX.to_be_bytes()).await.unwrap();
        let err = read_frame(&mut b, 1 << 20).await.unwrap_err();
        assert!(
            matches!(err, ReadError::Frame(FrameError::TooLarge { .. })),
            "{err}"
        );
    }
}
