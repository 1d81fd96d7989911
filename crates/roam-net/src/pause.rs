//! Per-topic back-pressure inside a router.
//!
//! When a reliable lane toward some link is full, the runtime pauses that topic: every link
//! reader holding a frame of it waits before handing it on, so QUIC flow control slows the
//! topic's stream back to its publisher, while every other topic keeps flowing.

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use roam_proto::Name;
use tokio::sync::Notify;

#[derive(Default)]
pub struct Pauses {
    /// Number of paused names: lets the common case (nothing paused) skip the lock.
    count: AtomicUsize,
    names: Mutex<HashSet<Name>>,
    resumed: Notify,
}

impl Pauses {
    pub fn pause(&self, name: Name) {
        if let Ok(mut n) = self.names.lock() {
            if n.insert(name) {
                self.count.fetch_add(1, Ordering::AcqRel);
            }
        }
    }

    pub fn resume(&self, name: Name) {
        if let Ok(mut n) = self.names.lock() {
            if n.remove(&name) {
                self.count.fetch_sub(1, Ordering::AcqRel);
            }
        }
        self.resumed.notify_waiters();
    }

    pub fn is_paused(&self, name: &Name) -> bool {
        self.count.load(Ordering::Acquire) > 0
            && self.names.lock().map(|n| n.contains(name)).unwrap_or(false)
    }

    /// Returns once `name` is not paused.
    pub async fn wait(&self, name: &Name) {
        loop {
            let resumed = self.resumed.notified();
            tokio::pin!(resumed);
            // Register before checking, so a resume between the check and the await is seen.
            resumed.as_mut().enable();
            if !self.is_paused(name) {
                return;
            }
            resumed.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn waits_only_for_the_paused_name() {
        let p = Arc::new(Pauses::default());
        let (a, b) = (Name([1; 32]), Name([2; 32]));
        p.pause(a);
        p.wait(&b).await;
        let waiter = {
            let p = p.clone();
            tokio::spawn(async move { p.wait(&a).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(!waiter.is_finished());
        p.resume(a);
        tokio::time::timeout(Duration::from_secs(1), waiter)
            .await
            .unwrap()
            .unwrap();
        assert!(!p.is_paused(&a));
    }
}
