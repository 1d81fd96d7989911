//! In-process endpoints of a router: any number of publishers and subscribers per name (a
//! proxy's export and import of one topic, several gateway clients on it), each with its own
//! id, released on its own. The routing core sees one local publisher or subscriber per name
//! for as long as at least one exists.

use std::collections::HashMap;
use std::time::Instant;

use roam_proto::Name;
use tokio::sync::watch;

use crate::envelope_queue::QueueSender;

use super::Runtime;

/// Identifies one in-process publication or subscription of a router.
pub type LocalId = u64;

/// The in-process endpoints of every name.
#[derive(Default)]
pub(super) struct Local {
    names: HashMap<Name, Endpoints>,
}

#[derive(Default)]
struct Endpoints {
    subs: Vec<(LocalId, QueueSender)>,
    pubs: Vec<(LocalId, watch::Sender<bool>)>,
    /// The last demand the core reported for the name.
    wanted: bool,
}

impl Local {
    /// The subscribers of `name`, to deliver to.
    pub(super) fn subscribers(&self, name: &Name) -> &[(LocalId, QueueSender)] {
        self.names.get(name).map_or(&[], |e| &e.subs)
    }

    pub(super) fn subscriber(&self, name: &Name, id: LocalId) -> Option<&QueueSender> {
        self.subscribers(name)
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, tx)| tx)
    }

    fn forget_if_empty(&mut self, name: &Name) {
        if self
            .names
            .get(name)
            .is_some_and(|e| e.subs.is_empty() && e.pubs.is_empty())
        {
            self.names.remove(name);
        }
    }
}

impl Runtime {
    pub(super) fn local_publish(
        &mut self,
        now: Instant,
        name: Name,
        id: LocalId,
        demand: watch::Sender<bool>,
    ) {
        let e = self.local.names.entry(name).or_default();
        demand.send_replace(e.wanted);
        let first = e.pubs.is_empty();
        e.pubs.push((id, demand));
        if first {
            self.core.publish_local(now, name);
        }
    }

    pub(super) fn local_unpublish(&mut self, now: Instant, name: Name, id: LocalId) {
        let Some(e) = self.local.names.get_mut(&name) else {
            return;
        };
        let before = e.pubs.len();
        e.pubs.retain(|(i, _)| *i != id);
        if before > 0 && e.pubs.is_empty() {
            e.wanted = false;
            self.core.unpublish_local(now, name);
        }
        self.local.forget_if_empty(&name);
    }

    pub(super) fn local_subscribe(
        &mut self,
        now: Instant,
        name: Name,
        id: LocalId,
        tx: QueueSender,
    ) {
        let e = self.local.names.entry(name).or_default();
        let first = e.subs.is_empty();
        e.subs.push((id, tx));
        if first {
            self.core.subscribe_local(now, name);
        }
    }

    pub(super) fn local_unsubscribe(&mut self, now: Instant, name: Name, id: LocalId) {
        let Some(e) = self.local.names.get_mut(&name) else {
            return;
        };
        let before = e.subs.len();
        e.subs.retain(|(i, _)| *i != id);
        let last = before > 0 && e.subs.is_empty();
        if let Some(st) = self.local_stalls.remove(&(name, id)) {
            self.local_dropped += st.queue.len() as u64;
            self.resume_if_unstalled(name);
        }
        if last {
            self.core.unsubscribe_local(now, name);
        }
        self.local.forget_if_empty(&name);
    }

    /// The core says whether anyone in the network wants `name`: tell its publishers.
    pub(super) fn local_demand(&mut self, name: Name, wanted: bool) {
        if let Some(e) = self.local.names.get_mut(&name) {
            e.wanted = wanted;
            for (_, tx) in &e.pubs {
                tx.send_replace(wanted);
            }
        }
    }
}
