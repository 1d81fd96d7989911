//! Writing imported samples to the local DDS domain without stalling the async runtime.

use std::sync::Arc;
use std::time::Duration;

use roam_dds::Writer;
use tracing::warn;

/// Most samples an import writes before it flushes them to the local readers: bounds how
/// long the first of a burst waits in the writer's outgoing packet.
pub const IMPORT_BATCH: usize = 64;

/// Samples up to this size are written on the async worker that received them (queued and
/// sent in microseconds); a larger one takes milliseconds to copy and send, and goes to a
/// blocking thread so the router's tasks keep running meanwhile.
const INLINE_WRITE_MAX: usize = 256 << 10;

/// How long an import keeps retrying a reliable write that the readers are not ready for
/// before it gives the sample up (a reader that stopped reading).
const WRITE_PATIENCE: Duration = Duration::from_secs(10);

/// Writes one sample (the writer never blocks: see [`INLINE_WRITE_MAX`] and
/// [`write_patiently`]) with its publisher's source timestamp when the envelope carried one;
/// hands the buffer back for reuse, and whether the write succeeded.
pub async fn write_import(
    writer: &Arc<Writer>,
    cdr: Vec<u8>,
    source_time_ns: Option<u64>,
    local: &str,
) -> (Vec<u8>, bool) {
    if cdr.len() <= INLINE_WRITE_MAX {
        match writer.write_cdr_at(&cdr, source_time_ns) {
            Ok(()) => return (cdr, true),
            Err(e) if !e.is_timeout() => {
                warn!(topic = %local, "DDS write failed: {e}");
                return (cdr, false);
            }
            // The readers are not ready: wait for them off the async workers.
            Err(_) => {}
        }
    }
    let w = writer.clone();
    let done = tokio::task::spawn_blocking(move || {
        let r = write_patiently(&w, &cdr, source_time_ns);
        (cdr, r)
    });
    match done.await {
        Ok((cdr, Ok(()))) => (cdr, true),
        Ok((cdr, Err(e))) => {
            warn!(topic = %local, "DDS write failed: {e}");
            (cdr, false)
        }
        Err(e) => {
            warn!(topic = %local, "DDS write task failed: {e}");
            (Vec::new(), false)
        }
    }
}

/// Writes a sample with a non-blocking writer, retrying while CycloneDDS reports
/// back-pressure (a timeout: slow readers, not failure), with growing pauses (a retry copies
/// the sample again). Gives up after [`WRITE_PATIENCE`].
fn write_patiently(
    writer: &Writer,
    cdr: &[u8],
    source_time_ns: Option<u64>,
) -> Result<(), roam_dds::DdsError> {
    let deadline = std::time::Instant::now() + WRITE_PATIENCE;
    let mut pause = Duration::from_micros(50);
    loop {
        match writer.write_cdr_at(cdr, source_time_ns) {
            Err(e) if e.is_timeout() && std::time::Instant::now() < deadline => {
                // What earlier batched writes queued must go out for the readers to ack it.
                let _ = writer.flush();
                std::thread::sleep(pause);
                pause = (pause * 2).min(Duration::from_millis(5));
            }
            r => return r,
        }
    }
}
