//! The rules' `Log "<file>"` action: the messages a Monitor or Display rule matches, written
//! to an MCAP file (the same writer as `roam record`, [`roam_edge::recording`]).
//!
//! Rules are evaluated on DDS threads and in import tasks, so the evaluation only hands a
//! copy of the message to the file's own writer thread through a bounded queue; a full queue
//! (a disk slower than the topic) drops the message for the file and counts it, and never
//! slows the topic. A relative file name is taken from the rules file's folder. Files stay
//! open across reloads while a rule still logs to them; the others are finished (summary and
//! footer written) at the reload, and all of them when the proxy stops (after which a message
//! still on its way is not logged: it must not start a finished file again).

use std::collections::HashMap;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tracing::{info, warn};

use roam_edge::recording::{HoldLimits, Recorder, Sample};

/// Messages waiting for one file's writer.
const QUEUE: usize = 4096;

/// One message for a log file.
struct Entry {
    topic: String,
    dds_type: String,
    definition: Option<Arc<str>>,
    log_ns: u64,
    /// Its publisher's source timestamp, else when it was logged.
    publish_ns: u64,
    cdr: Vec<u8>,
}

/// A message the rules log, as the proxy has it.
pub struct LogMessage<'a> {
    pub topic: &'a str,
    pub dds_type: &'a str,
    /// The type's ros2msg text, the file's schema, when known.
    pub definition: Option<&'a str>,
    pub cdr: &'a [u8],
    /// The publisher's source timestamp (nanoseconds since the Unix epoch), when known.
    pub source_time_ns: Option<u64>,
}

struct LogFile {
    tx: Option<SyncSender<Entry>>,
    thread: Option<std::thread::JoinHandle<()>>,
    dropped: Arc<AtomicU64>,
}

impl LogFile {
    fn finish(&mut self) {
        self.tx.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The Log files of a proxy's rules.
pub struct LogFiles {
    base: PathBuf,
    files: Mutex<HashMap<PathBuf, LogFile>>,
    /// Set once the files are finished for good (the process stops): a message still on its
    /// way must not start (and so truncate) a finished file again.
    closed: std::sync::atomic::AtomicBool,
}

impl LogFiles {
    /// Log files named relative to `base` (the rules file's folder).
    pub fn new(base: &Path) -> LogFiles {
        LogFiles {
            base: base.to_path_buf(),
            files: Mutex::new(HashMap::new()),
            closed: std::sync::atomic::AtomicBool::new(false),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.base.join(name)
    }

    /// Hands one message to each of `files` (as the rules name them).
    pub fn write(&self, files: &[String], m: &LogMessage) {
        let log_ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let mut open = self.files.lock().unwrap_or_else(|p| p.into_inner());
        if self.closed.load(Ordering::Relaxed) {
            return;
        }
        for name in files {
            let path = self.path(name);
            let file = open
                .entry(path.clone())
                .or_insert_with(|| start(path.clone()));
            let Some(tx) = &file.tx else { continue };
            let entry = Entry {
                topic: m.topic.to_string(),
                dds_type: m.dds_type.to_string(),
                definition: m.definition.map(Arc::from),
                log_ns,
                publish_ns: m.source_time_ns.unwrap_or(log_ns),
                cdr: m.cdr.to_vec(),
            };
            match tx.try_send(entry) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    if file.dropped.fetch_add(1, Ordering::Relaxed) == 0 {
                        warn!(target: "roam::rules", file = %path.display(), "Log: the file is written slower than messages come; dropping for it (counted)");
                    }
                }
                Err(TrySendError::Disconnected(_)) => {
                    // The writer failed (and said why); nothing more goes to this file.
                    file.tx = None;
                }
            }
        }
    }

    /// Finishes the files no rule of `keep` logs to any more (after a reload).
    pub fn retain(&self, keep: &[String]) {
        let keep: Vec<PathBuf> = keep.iter().map(|n| self.path(n)).collect();
        let mut open = self.files.lock().unwrap_or_else(|p| p.into_inner());
        let gone: Vec<PathBuf> = open.keys().filter(|p| !keep.contains(p)).cloned().collect();
        for p in gone {
            if let Some(mut f) = open.remove(&p) {
                f.finish();
            }
        }
    }

    /// Finishes every file for good (the process stops): later messages are not logged.
    pub fn finish_all(&self) {
        {
            // Under the files' lock, so no write is half way through starting a file.
            let _open = self.files.lock().unwrap_or_else(|p| p.into_inner());
            self.closed.store(true, Ordering::Relaxed);
        }
        self.retain(&[]);
    }
}

impl Drop for LogFiles {
    fn drop(&mut self) {
        self.finish_all();
    }
}

fn start(path: PathBuf) -> LogFile {
    let (tx, rx) = sync_channel(QUEUE);
    let dropped = Arc::new(AtomicU64::new(0));
    let d = dropped.clone();
    let thread = std::thread::Builder::new()
        .name("roam-rules-log".into())
        .spawn(move || writer(path, rx, d))
        .ok();
    LogFile {
        tx: Some(tx),
        thread,
        dropped,
    }
}

/// How often a writer gives up waiting for definitions (see [`Recorder::expire`]).
const EXPIRE_EVERY: Duration = Duration::from_secs(1);

fn writer(path: PathBuf, rx: Receiver<Entry>, dropped: Arc<AtomicU64>) {
    let file = match std::fs::File::create(&path) {
        Ok(f) => f,
        Err(e) => {
            warn!(target: "roam::rules", file = %path.display(), "Log: cannot create the file: {e}; nothing is logged to it");
            return;
        }
    };
    let mut rec = match Recorder::new(BufWriter::new(file), HoldLimits::default()) {
        Ok(r) => r,
        Err(e) => {
            warn!(target: "roam::rules", file = %path.display(), "Log: {e}");
            return;
        }
    };
    info!(target: "roam::rules", file = %path.display(), "Log: recording to MCAP");
    loop {
        let entry = match rx.recv_timeout(EXPIRE_EVERY) {
            Ok(e) => Some(e),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let r = match entry {
            Some(e) => {
                let mut r = Ok(());
                if let Some(text) = e.definition.as_deref() {
                    if !rec.is_open(&e.topic) {
                        r = rec.definition(&e.topic, &e.dds_type, text);
                    }
                }
                r.and_then(|()| {
                    rec.message(
                        &e.topic,
                        &e.dds_type,
                        Sample {
                            log_time_ns: e.log_ns,
                            publish_time_ns: e.publish_ns,
                            cdr: &e.cdr,
                        },
                        Instant::now(),
                    )
                })
            }
            None => rec.expire(Instant::now()).map(|_| ()),
        };
        if let Err(e) = r {
            warn!(target: "roam::rules", file = %path.display(), "Log: {e}; nothing more is logged to it");
            return;
        }
    }
    match rec.finish() {
        Ok(s) => info!(
            target: "roam::rules",
            file = %path.display(),
            messages = s.messages,
            bytes = s.bytes,
            dropped = dropped.load(Ordering::Relaxed),
            "Log: file finished"
        ),
        Err(e) => {
            warn!(target: "roam::rules", file = %path.display(), "Log: finishing the file: {e}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_after_the_files_are_finished_does_not_start_them_again() {
        let dir = std::env::temp_dir().join(format!("roam-rules-log-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let logs = LogFiles::new(&dir);
        let cdr = [0u8, 1, 0, 0, 2, 0, 0, 0, b'a', 0];
        let files = vec!["t.mcap".to_string()];
        let msg = |source_time_ns| LogMessage {
            topic: "/t",
            dds_type: "std_msgs::msg::dds_::String_",
            definition: Some("string data\n"),
            cdr: &cdr,
            source_time_ns,
        };
        // With a source timestamp it is the publish time; without, the log time is.
        logs.write(&files, &msg(Some(42)));
        logs.write(&files, &msg(None));
        logs.write(&files, &msg(Some(43)));
        logs.finish_all();
        let before = std::fs::read(dir.join("t.mcap")).unwrap();
        logs.write(&files, &msg(Some(44)));
        drop(logs);
        let after = std::fs::read(dir.join("t.mcap")).unwrap();
        assert_eq!(before, after, "a late message rewrote the finished file");
        let times: Vec<(u64, u64)> = mcap::MessageStream::new(&after)
            .unwrap()
            .map(|m| {
                let m = m.unwrap();
                (m.log_time, m.publish_time)
            })
            .collect();
        assert_eq!(times.len(), 3);
        assert_eq!((times[0].1, times[2].1), (42, 43));
        assert!(times[0].0 > 1_600_000_000_000_000_000, "{times:?}");
        assert_eq!(times[1].1, times[1].0, "{times:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
