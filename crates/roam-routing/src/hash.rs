//! A seeded, deterministic hasher for the routing tables.
//!
//! std's `RandomState` would make table iteration order (and so the order of emitted frames)
//! differ between runs, which breaks reproducible simulations. Names are HMAC outputs, so a
//! fast folded-multiply mix is enough; the seed comes from the router's config so that tables
//! of different routers do not share a layout.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};

const K: u64 = 0x9E37_79B9_7F4A_7C15;

/// Builds [`Mix`] hashers from a fixed seed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seeded(pub u64);

impl BuildHasher for Seeded {
    type Hasher = Mix;
    fn build_hasher(&self) -> Mix {
        Mix(self.0)
    }
}

pub(crate) struct Mix(u64);

#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let m = (a as u128).wrapping_mul(b as u128);
    (m as u64) ^ ((m >> 64) as u64)
}

impl Mix {
    #[inline]
    fn add(&mut self, v: u64) {
        self.0 = fold(self.0 ^ v, K);
    }
}

impl Hasher for Mix {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            self.add(u64::from_le_bytes(b));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut b = [0u8; 8];
            b[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(b) ^ ((rest.len() as u64) << 56));
        }
    }
    #[inline]
    fn write_u8(&mut self, v: u8) {
        self.add(v as u64);
    }
    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.add(v as u64);
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.add(v);
    }
    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.add(v as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        fold(self.0, K ^ 0x5851_F42D_4C95_7F2D)
    }
}

pub(crate) type Map<K, V> = HashMap<K, V, Seeded>;
pub(crate) type Set<K> = HashSet<K, Seeded>;

/// Mixes two words into one, for ids derived from (router id, counter).
pub(crate) fn mix64(a: u64, b: u64) -> u64 {
    fold(a ^ K, b ^ 0xD6E8_FEB8_6659_FD93) ^ a.rotate_left(17)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn same_seed_same_hash_different_seed_differs() {
        let a = Seeded(1).hash_one([7u8; 32]);
        assert_eq!(a, Seeded(1).hash_one([7u8; 32]));
        assert_ne!(a, Seeded(2).hash_one([7u8; 32]));
        assert_ne!(a, Seeded(1).hash_one([8u8; 32]));
    }

    #[test]
    fn mix64_spreads_small_ids() {
        let mut seen = std::collections::HashSet::new();
        for id in 0..50u64 {
            for c in 0..50u64 {
                assert!(seen.insert(mix64(id, c)));
            }
        }
    }
}
