//! The publishers and subscribers of a client session, by name: what to declare to a router
//! when a link comes up, what to withdraw when the last of a name goes, and where the router's
//! data and demand for a name go.

use std::collections::BTreeMap;

use roam_proto::Name;
use tokio::sync::watch;

use crate::envelope_queue::QueueSender;

use super::EndpointId;

#[derive(Default)]
pub(super) struct Endpoints {
    pubs: BTreeMap<Name, Vec<(EndpointId, watch::Sender<bool>)>>,
    subs: BTreeMap<Name, Vec<(EndpointId, QueueSender)>>,
}

/// What a change of the endpoints asks of the router link.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Declare {
    Nothing,
    Publish(Name),
    Unpublish(Name),
    Subscribe(Name),
    Unsubscribe(Name),
}

impl Endpoints {
    /// Adds a publisher; the first of its name is declared to the router.
    pub(super) fn publish(
        &mut self,
        name: Name,
        id: EndpointId,
        demand: watch::Sender<bool>,
    ) -> Declare {
        let list = self.pubs.entry(name).or_default();
        // Others of the name already know the demand: the newcomer starts with it.
        if let Some((_, first)) = list.first() {
            demand.send_replace(*first.borrow());
        }
        list.push((id, demand));
        if list.len() == 1 {
            Declare::Publish(name)
        } else {
            Declare::Nothing
        }
    }

    pub(super) fn unpublish(&mut self, name: Name, id: EndpointId) -> Declare {
        let Some(list) = self.pubs.get_mut(&name) else {
            return Declare::Nothing;
        };
        list.retain(|(i, _)| *i != id);
        if list.is_empty() {
            self.pubs.remove(&name);
            Declare::Unpublish(name)
        } else {
            Declare::Nothing
        }
    }

    pub(super) fn subscribe(&mut self, name: Name, id: EndpointId, tx: QueueSender) -> Declare {
        let list = self.subs.entry(name).or_default();
        list.push((id, tx));
        if list.len() == 1 {
            Declare::Subscribe(name)
        } else {
            Declare::Nothing
        }
    }

    pub(super) fn unsubscribe(&mut self, name: Name, id: EndpointId) -> Declare {
        let Some(list) = self.subs.get_mut(&name) else {
            return Declare::Nothing;
        };
        list.retain(|(i, _)| *i != id);
        if list.is_empty() {
            self.subs.remove(&name);
            Declare::Unsubscribe(name)
        } else {
            Declare::Nothing
        }
    }

    /// Every published name (to declare on a new link).
    pub(super) fn published(&self) -> Vec<Name> {
        self.pubs.keys().copied().collect()
    }

    /// Every subscribed name (to declare on a new link).
    pub(super) fn subscribed(&self) -> Vec<Name> {
        self.subs.keys().copied().collect()
    }

    /// The subscribers of `name`.
    pub(super) fn subscribers(&self, name: &Name) -> Vec<QueueSender> {
        self.subs
            .get(name)
            .map(|l| l.iter().map(|(_, tx)| tx.clone()).collect())
            .unwrap_or_default()
    }

    /// The router says whether anyone wants `name`.
    pub(super) fn demand(&self, name: &Name, wanted: bool) {
        if let Some(list) = self.pubs.get(name) {
            for (_, tx) in list {
                tx.send_replace(wanted);
            }
        }
    }

    /// No router link: nobody wants anything we publish.
    pub(super) fn no_demand(&self) {
        for list in self.pubs.values() {
            for (_, tx) in list {
                tx.send_replace(false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_and_last_endpoint_of_a_name_are_declared() {
        let mut e = Endpoints::default();
        let n = Name([1; 32]);
        let (a, _ra) = watch::channel(false);
        let (b, rb) = watch::channel(false);
        assert_eq!(e.publish(n, 1, a), Declare::Publish(n));
        e.demand(&n, true);
        assert_eq!(e.publish(n, 2, b), Declare::Nothing);
        assert!(
            *rb.borrow(),
            "a second publisher starts with the known demand"
        );
        assert_eq!(e.unpublish(n, 1), Declare::Nothing);
        assert_eq!(e.unpublish(n, 2), Declare::Unpublish(n));
        assert_eq!(e.unpublish(n, 2), Declare::Nothing);

        let (t1, _r1) = crate::envelope_queue::channel(1, 1 << 20);
        let (t2, _r2) = crate::envelope_queue::channel(1, 1 << 20);
        assert_eq!(e.subscribe(n, 3, t1), Declare::Subscribe(n));
        assert_eq!(e.subscribe(n, 4, t2), Declare::Nothing);
        assert_eq!(e.subscribers(&n).len(), 2);
        assert_eq!(e.unsubscribe(n, 3), Declare::Nothing);
        assert_eq!(e.unsubscribe(n, 4), Declare::Unsubscribe(n));
        assert!(e.subscribed().is_empty());
    }
}
