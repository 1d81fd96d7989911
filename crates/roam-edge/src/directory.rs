//! The realm directory: what every member offers and imports, so that any member can list the
//! realm (`roam topics`) and gateways can answer "which topics exist". Topic names are HMACs,
//! so a realm cannot be enumerated by its names: each realm has one well-known directory name,
//! and every member seals its [`DirectoryEntry`] on it.
//!
//! - The name is `descriptor(topic = "roam/directory", type = "roam/directory/v1", kind =
//!   topic)` ([`directory_descriptor`]), derived like any data name. Neither field can be a
//!   member's topic: realm-side ROS names start with `/` and raw DDS ones with `dds:`, and the
//!   type is no ROS type. The version in the type names the entry format: a later format gets
//!   a new name, so old and new members never misread each other.
//! - Its type is fixed by its name, so nothing is announced for it (no topic announcement, no
//!   definitions): the directory is a publisher and a subscriber on a name given directly.
//! - A [`DirectoryAnnouncer`] sends its process's entry when it changes and every
//!   [`DIRECTORY_PERIOD`] while anyone listens, and a last, empty entry when it is closed or
//!   dropped (views forget the member at once).
//! - A [`DirectoryView`] keeps every member's latest entry ([`state::Directory`]), forgets a
//!   member silent for [`state::EXPIRY_PERIODS`] of its periods, and lists the realm.
//!
//! In signed mode (the realm requires signatures), an entry must be signed by the member it
//! names: no member can speak for another.

mod announcer;
mod state;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use roam_proto::directory::DirectoryEntry;
use roam_proto::{Name, RealmSecret, TopicDescriptor};
use tokio::sync::watch;
use tracing::warn;

pub use announcer::DirectoryAnnouncer;
pub(crate) use announcer::Entries;
pub use roam_proto::directory::{ItemKind, Role};
pub use state::{
    Directory, Listed, Listing, Party, QosSummary, Refused, EXPIRY_PERIODS, MAX_MEMBERS,
    MAX_RETAINED_BYTES,
};

use crate::edge::{Edge, TopicRef};
use crate::names::data_descriptor;
use crate::realm::Realm;
use crate::ros_names::type_from_dds;
use crate::subscriber::{Event, Subscriber, SubscriberOptions};

/// The reserved realm-side topic of the directory.
pub const DIRECTORY_TOPIC: &str = "roam/directory";
/// The type of the directory name's descriptor: the entry format's version.
pub const DIRECTORY_TYPE: &str = "roam/directory/v1";
/// How often an announcer repeats its entry while anyone listens.
pub const DIRECTORY_PERIOD: Duration = Duration::from_secs(2);
/// Envelopes a view queues before its router link is pushed back on.
const VIEW_DEPTH: usize = 256;

/// The descriptor of a realm's directory name.
pub fn directory_descriptor() -> TopicDescriptor {
    data_descriptor(DIRECTORY_TOPIC, DIRECTORY_TYPE)
}

/// The directory name of the realm with this secret.
pub fn directory_name(secret: &RealmSecret) -> Name {
    directory_descriptor().name(secret)
}

fn directory_topic(realm: Arc<Realm>) -> TopicRef {
    let name = directory_name(&realm.secret);
    TopicRef::raw_name(realm, DIRECTORY_TOPIC, name)
}

/// A ROS 2 service's type from the DDS type of its request or reply topic:
/// `example_interfaces::srv::dds_::AddTwoInts_Response_` -> `example_interfaces/srv/AddTwoInts`.
/// Other names as [`type_from_dds`] gives them.
pub fn service_type_from_dds(dds: &str) -> String {
    match dds
        .strip_suffix("_Request_")
        .or_else(|| dds.strip_suffix("_Response_"))
    {
        Some(base) => type_from_dds(&format!("{base}_")),
        None => type_from_dds(dds),
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// How far a view has got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Entries read since the view started (changed or not).
    pub heard: u64,
    /// Entries refused (malformed, forged, over the view's bounds).
    pub refused: u64,
    /// Bumped whenever the listing changes.
    pub version: u64,
}

/// A realm's directory, followed: every member's latest entry. Dropping it unsubscribes.
pub struct DirectoryView {
    directory: Arc<Mutex<Directory>>,
    progress: watch::Receiver<Progress>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for DirectoryView {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Edge {
    /// Starts following `realm`'s directory. Every announcer sends its entry as soon as it
    /// learns someone listens, and again every [`DIRECTORY_PERIOD`].
    pub async fn directory_view(&self, realm: Arc<Realm>) -> DirectoryView {
        let options = SubscriberOptions {
            depth: VIEW_DEPTH,
            ..SubscriberOptions::default()
        };
        let sub = self.subscriber(&directory_topic(realm), options).await;
        let directory = Arc::new(Mutex::new(Directory::default()));
        let (tx, progress) = watch::channel(Progress::default());
        let task = tokio::spawn(follow(sub, directory.clone(), tx));
        DirectoryView {
            directory,
            progress,
            task,
        }
    }
}

impl DirectoryView {
    /// Every topic, service and action of the realm now, with who offers and imports it.
    pub fn listing(&self) -> Listing {
        lock(&self.directory).listing()
    }

    /// Every member's latest entry now.
    pub fn entries(&self) -> Vec<DirectoryEntry> {
        lock(&self.directory).entries().cloned().collect()
    }

    /// How far the view has got, and its changes (to wait for the first entry, or for the
    /// listing to change).
    pub fn progress(&self) -> watch::Receiver<Progress> {
        self.progress.clone()
    }
}

/// Reads the directory's envelopes into `directory` and expires silent members, until the
/// view is dropped (its task is aborted) or the edge goes.
async fn follow(
    mut sub: Subscriber,
    directory: Arc<Mutex<Directory>>,
    progress: watch::Sender<Progress>,
) {
    let mut plain = Vec::new();
    let mut warned = std::collections::HashSet::new();
    loop {
        let expiry = lock(&directory).poll_timeout();
        // A subscriber on a name given directly reads with no await but its queue's: taking
        // the timer branch instead loses nothing.
        let ev = tokio::select! {
            ev = sub.recv(&mut plain) => ev,
            _ = sleep_until(expiry) => {
                if lock(&directory).handle_timeout(Instant::now()) {
                    progress.send_modify(|p| p.version += 1);
                }
                continue;
            }
        };
        let received = match ev {
            Some(Event::Message(r)) => r,
            Some(_) => continue,
            None => return,
        };
        let outcome = match DirectoryEntry::decode(&plain) {
            Ok(e) if received.signer.as_ref().is_some_and(|s| *s != e.member) => Err(format!(
                "an entry signed by {} names another member, {}",
                received.signer.as_deref().unwrap_or_default(),
                e.member
            )),
            Ok(e) => lock(&directory)
                .handle_entry(Instant::now(), e, plain.len())
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        progress.send_modify(|p| match outcome {
            Ok(changed) => {
                p.heard += 1;
                p.version += u64::from(changed);
            }
            Err(ref why) => {
                p.refused += 1;
                if warned.len() < 64 && warned.insert(why.clone()) {
                    warn!("refused a directory entry: {why}");
                }
            }
        });
    }
}

async fn sleep_until(t: Option<Instant>) {
    match t {
        Some(t) => tokio::time::sleep_until(t.into()).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_directory_name_follows_the_descriptor_conventions() {
        let d = directory_descriptor();
        assert_eq!(
            d,
            TopicDescriptor::topic("roam/directory", "roam/directory/v1")
        );
        let realm = RealmSecret::from_bytes([0x42; 32]);
        // The vector published in docs/protocol.md (checked there with Python's hmac).
        assert_eq!(
            directory_name(&realm).to_hex(),
            "25684c99e3d85725c61eb53d17627247c585e552cc5d304c4f68a0ba0d907947"
        );
    }

    #[test]
    fn service_types_come_from_either_topic() {
        for dds in [
            "example_interfaces::srv::dds_::AddTwoInts_Request_",
            "example_interfaces::srv::dds_::AddTwoInts_Response_",
        ] {
            assert_eq!(
                service_type_from_dds(dds),
                "example_interfaces/srv/AddTwoInts"
            );
        }
        assert_eq!(service_type_from_dds("Plain"), "Plain");
    }
}
