//! Realm epochs: the keys a member seals and opens a realm's envelopes with.
//!
//! A realm's names always derive from its realm file's secret, so routes, streams and replay
//! windows survive a rotation untouched. What envelopes are sealed with is the secret of an
//! *epoch*: epoch 0 is the realm file's secret itself (what every envelope was sealed with
//! before epochs existed, bit for bit), and each rotation (`roam realm rotate`) starts epoch
//! N+1 with a fresh random secret that only the remaining members receive
//! ([`crate::epoch_record`]). The epoch is bytes 2..4 of the envelope header, authenticated
//! with the rest of it.
//!
//! [`Keys`] is one realm's keyring as a process holds it, shared by every sealer and opener of
//! the realm: a member installs a new epoch for opening as soon as it has the secret, seals
//! with it a moment later (so that every online member can open it by then), and retires the
//! old epoch after a grace period (so that what was in flight still opens, and a removed
//! member's old key stops working). Sealers and openers notice a change with one atomic load
//! per envelope.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, RwLock};

use ring::hkdf;

use crate::realm::RealmSecret;

/// An epoch number: 0 for the realm file's secret, one more for each rotation.
pub type Epoch = u16;

/// The HKDF salt of envelope keys, for every epoch (see [`crate::seal`]).
const SALT: &[u8] = b"roam-v1 envelope";

/// The envelope key material of one epoch.
pub(crate) fn epoch_prk(secret: &RealmSecret) -> hkdf::Prk {
    hkdf::Salt::new(hkdf::HKDF_SHA256, SALT).extract(secret.as_bytes())
}

/// The epochs a member holds at one moment: the one it seals with and every one it opens
/// (the sealing one among them).
#[derive(Clone)]
pub struct Keyring {
    sealing: (Epoch, Arc<hkdf::Prk>),
    open: Vec<(Epoch, Arc<hkdf::Prk>)>,
}

impl Keyring {
    /// The epoch new envelopes are sealed in.
    pub fn sealing(&self) -> Epoch {
        self.sealing.0
    }

    /// The key material of an epoch this member opens, if it holds it.
    pub(crate) fn prk(&self, epoch: Epoch) -> Option<&Arc<hkdf::Prk>> {
        self.open.iter().find(|(e, _)| *e == epoch).map(|(_, p)| p)
    }

    pub(crate) fn sealing_prk(&self) -> &Arc<hkdf::Prk> {
        &self.sealing.1
    }

    /// The epochs this member opens, oldest first.
    pub fn epochs(&self) -> Vec<Epoch> {
        let mut v: Vec<Epoch> = self.open.iter().map(|(e, _)| *e).collect();
        v.sort_unstable();
        v
    }
}

/// Why a keyring change was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyringError {
    #[error("epoch {0} is not held: install its secret first")]
    NotHeld(Epoch),
    #[error("epoch {0} is the one this member seals with; switch to another before retiring it")]
    Sealing(Epoch),
}

/// One realm's keyring, shared by its sealers and openers in a process.
pub struct Keys {
    generation: AtomicU64,
    ring: RwLock<Arc<Keyring>>,
}

impl Keys {
    /// A keyring holding only epoch 0, the realm file's secret.
    pub fn new(realm: &RealmSecret) -> Arc<Self> {
        let prk = Arc::new(epoch_prk(realm));
        Arc::new(Self {
            generation: AtomicU64::new(0),
            ring: RwLock::new(Arc::new(Keyring {
                sealing: (0, prk.clone()),
                open: vec![(0, prk)],
            })),
        })
    }

    /// Changes with every change of the keyring: what sealers and openers check per envelope.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The keyring as it is now.
    pub fn current(&self) -> Arc<Keyring> {
        self.ring.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn change(
        &self,
        f: impl FnOnce(&mut Keyring) -> Result<(), KeyringError>,
    ) -> Result<(), KeyringError> {
        let mut guard = self.ring.write().unwrap_or_else(|p| p.into_inner());
        let mut next = (**guard).clone();
        f(&mut next)?;
        *guard = Arc::new(next);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// Opens envelopes of `epoch` from now on (replacing its key if it was held, the sealing
    /// key too when it is the sealing epoch).
    pub fn install(&self, epoch: Epoch, secret: &RealmSecret) {
        let prk = Arc::new(epoch_prk(secret));
        let _ = self.change(|k| {
            k.open.retain(|(e, _)| *e != epoch);
            k.open.push((epoch, prk.clone()));
            if k.sealing.0 == epoch {
                k.sealing.1 = prk;
            }
            Ok(())
        });
    }

    /// Seals new envelopes in `epoch`, which must be held.
    pub fn seal_with(&self, epoch: Epoch) -> Result<(), KeyringError> {
        self.change(|k| {
            let prk = k.prk(epoch).ok_or(KeyringError::NotHeld(epoch))?.clone();
            k.sealing = (epoch, prk);
            Ok(())
        })
    }

    /// Stops opening `epoch`'s envelopes. Retiring an epoch that is not held does nothing.
    pub fn retire(&self, epoch: Epoch) -> Result<(), KeyringError> {
        self.change(|k| {
            if k.sealing.0 == epoch {
                return Err(KeyringError::Sealing(epoch));
            }
            k.open.retain(|(e, _)| *e != epoch);
            Ok(())
        })
    }

    /// Retires every held epoch older than `epoch` other than the sealing one.
    pub fn retire_before(&self, epoch: Epoch) {
        let _ = self.change(|k| {
            let sealing = k.sealing.0;
            k.open.retain(|(e, _)| *e >= epoch || *e == sealing);
            Ok(())
        });
    }
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ring = self.current();
        f.debug_struct("Keys")
            .field("sealing", &ring.sealing.0)
            .field("open", &ring.epochs())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rotation_installs_switches_and_retires() {
        let keys = Keys::new(&RealmSecret::from_bytes([1; 32]));
        assert_eq!(keys.current().epochs(), vec![0]);
        let g0 = keys.generation();
        assert_eq!(keys.seal_with(1), Err(KeyringError::NotHeld(1)));
        keys.install(1, &RealmSecret::from_bytes([2; 32]));
        assert!(keys.generation() > g0);
        assert_eq!(keys.current().sealing(), 0);
        assert_eq!(keys.current().epochs(), vec![0, 1]);
        assert_eq!(keys.retire(0), Err(KeyringError::Sealing(0)));
        keys.seal_with(1).unwrap();
        keys.retire(0).unwrap();
        let ring = keys.current();
        assert_eq!((ring.sealing(), ring.epochs()), (1, vec![1]));
        assert!(ring.prk(0).is_none() && ring.prk(1).is_some());
        keys.install(3, &RealmSecret::from_bytes([3; 32]));
        keys.retire_before(3);
        assert_eq!(keys.current().epochs(), vec![1, 3]);
    }
}
