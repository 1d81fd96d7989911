//! Sealing and opening envelopes.
//!
//! Key schedule (HKDF-SHA256 from ring, AES-256-GCM from aws-lc-rs, which seals from the
//! payload's buffer and opens into the receiver's without copying either first):
//!
//! ```text
//! prk         = HKDF-Extract(salt = "roam-v1 envelope", ikm = epoch secret)
//! session key = HKDF-Expand(prk, info = name (32) | session (u64 BE), 32 bytes)
//! nonce       = 0x00000000 | sequence (u64 BE)
//! ```
//!
//! Every sealer draws a fresh random 64-bit session, so each (name, session) pair has its own
//! key and the sequence, which starts at 1 and only grows, never repeats a nonce under a key,
//! across restarts too (a restart is a new session). The receiver keeps one replay window per
//! (name, session) in a bounded LRU.
//!
//! The epoch secret is the realm file's secret in epoch 0 and a rotation's fresh secret after
//! ([`crate::epoch`]); the epoch is in the authenticated header. A sealer built on a realm's
//! shared [`Keys`] follows its rotations: same session, same sequence, the new epoch's key.

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use ring::hkdf;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{Ed25519KeyPair, KeyPair};

use crate::envelope::{
    EnvelopeFlags, EnvelopeHeader, PayloadKind, HEADER_LEN, SIGNATURE_LEN, SIGNER_LEN, TAG_LEN,
};
use crate::epoch::{Epoch, Keys};
use crate::name::Name;
use crate::realm::RealmSecret;

struct KeyLen;

impl hkdf::KeyType for KeyLen {
    fn len(&self) -> usize {
        32
    }
}

fn session_key(prk: &hkdf::Prk, name: &Name, session: u64) -> LessSafeKey {
    let session = session.to_be_bytes();
    let info = [name.as_bytes().as_slice(), session.as_slice()];
    let mut raw = [0u8; 32];
    // Expanding 32 bytes from SHA-256 cannot fail (the limit is 255 * 32).
    let okm = prk
        .expand(&info, KeyLen)
        .expect("32-byte HKDF output is within limits");
    okm.fill(&mut raw)
        .expect("32-byte HKDF output is within limits");
    let key = UnboundKey::new(&AES_256_GCM, &raw).expect("AES-256 key is 32 bytes");
    raw.fill(0);
    LessSafeKey::new(key)
}

fn nonce(seq: u64) -> Nonce {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&seq.to_be_bytes());
    Nonce::assume_unique_for_key(n)
}

/// A key that is not an Ed25519 PKCS#8 document.
#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    /// ring's reason.
    #[error("not an Ed25519 PKCS#8 key: {0}")]
    Rejected(ring::error::KeyRejected),
    #[error("Ed25519 PKCS#8 key without its seed where RFC 8410 puts it")]
    Layout,
}

impl From<ring::error::KeyRejected> for KeyError {
    fn from(e: ring::error::KeyRejected) -> Self {
        Self::Rejected(e)
    }
}

/// The Ed25519 key an identity signs envelopes with (the key of its certificate).
pub struct SigningIdentity {
    key: Ed25519KeyPair,
}

impl SigningIdentity {
    /// From a PKCS#8 v1 or v2 document, as `roam pki issue` writes.
    pub fn from_pkcs8(der: &[u8]) -> Result<Self, KeyError> {
        Ed25519KeyPair::from_pkcs8_maybe_unchecked(der)
            .map(|key| Self { key })
            .map_err(KeyError::Rejected)
    }

    pub fn from_seed(seed: &[u8; 32]) -> Self {
        // A 32-byte seed always makes a valid key pair.
        Self {
            key: Ed25519KeyPair::from_seed_unchecked(seed).expect("32-byte seed"),
        }
    }

    pub fn public_key(&self) -> [u8; 32] {
        let mut pk = [0u8; 32];
        pk.copy_from_slice(self.key.public_key().as_ref());
        pk
    }

    /// An Ed25519 signature of `msg`.
    pub fn sign(&self, msg: &[u8]) -> [u8; 64] {
        let mut sig = [0u8; 64];
        sig.copy_from_slice(self.key.sign(msg).as_ref());
        sig
    }
}

/// Why sealing failed: only when the sequence space of a session is exhausted or the OS RNG
/// fails, both effectively never.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("the operating system's random source failed")]
    Random,
    #[error("sequence numbers exhausted for this session; create a new sealer")]
    Exhausted,
    #[error("encryption failed")]
    Crypto,
}

/// Seals payloads for one name, as one session.
pub struct Sealer {
    name: Name,
    session: u64,
    next_seq: u64,
    keys: std::sync::Arc<Keys>,
    /// The keyring generation `key` was derived at.
    generation: u64,
    epoch: Epoch,
    key: LessSafeKey,
    flags: EnvelopeFlags,
    signer: Option<std::sync::Arc<SigningIdentity>>,
}

impl Sealer {
    /// A sealer with a fresh random session, always in epoch 0 (the realm file's secret):
    /// for what every member must open whatever epoch it is in (the realm's epoch records).
    pub fn new(
        realm: &RealmSecret,
        name: Name,
        best_effort: bool,
        signer: Option<std::sync::Arc<SigningIdentity>>,
    ) -> Result<Self, SealError> {
        Self::with_keys(&Keys::new(realm), name, best_effort, signer)
    }

    /// A sealer with a fresh random session that seals in whatever epoch `keys` seals in.
    pub fn with_keys(
        keys: &std::sync::Arc<Keys>,
        name: Name,
        best_effort: bool,
        signer: Option<std::sync::Arc<SigningIdentity>>,
    ) -> Result<Self, SealError> {
        let mut s = [0u8; 8];
        SystemRandom::new()
            .fill(&mut s)
            .map_err(|_| SealError::Random)?;
        Ok(Self::with_session_keys(
            keys.clone(),
            name,
            u64::from_be_bytes(s),
            best_effort,
            signer,
        ))
    }

    /// A sealer with a chosen session. The caller must never reuse a session with the same
    /// realm and name: only tests and test vectors should call this.
    pub fn with_session(
        realm: &RealmSecret,
        name: Name,
        session: u64,
        best_effort: bool,
        signer: Option<std::sync::Arc<SigningIdentity>>,
    ) -> Self {
        Self::with_session_keys(Keys::new(realm), name, session, best_effort, signer)
    }

    fn with_session_keys(
        keys: std::sync::Arc<Keys>,
        name: Name,
        session: u64,
        best_effort: bool,
        signer: Option<std::sync::Arc<SigningIdentity>>,
    ) -> Self {
        let mut flags = 0;
        if best_effort {
            flags |= EnvelopeFlags::BEST_EFFORT;
        }
        if signer.is_some() {
            flags |= EnvelopeFlags::SIGNED;
        }
        let generation = keys.generation();
        let ring = keys.current();
        let key = session_key(ring.sealing_prk(), &name, session);
        Self {
            name,
            session,
            next_seq: 1,
            generation,
            epoch: ring.sealing(),
            key,
            keys,
            flags: EnvelopeFlags(flags),
            signer,
        }
    }

    /// The epoch the next envelope will be sealed in.
    pub fn epoch(&self) -> Epoch {
        self.epoch
    }

    /// Follows a rotation of the realm's keys: the same session and sequence, the sealing
    /// epoch's key. One atomic load when nothing changed.
    #[inline]
    fn follow_keys(&mut self) {
        if self.keys.generation() != self.generation {
            self.rekey();
        }
    }

    #[cold]
    #[inline(never)]
    fn rekey(&mut self) {
        let generation = self.keys.generation();
        let ring = self.keys.current();
        if ring.sealing() != self.epoch {
            self.key = session_key(ring.sealing_prk(), &self.name, self.session);
            self.epoch = ring.sealing();
        }
        self.generation = generation;
    }

    /// Integrity only: payloads go in clear text, authenticated by the same key (see
    /// [`EnvelopeFlags::CLEAR`]). For data that is not secret, and to measure what
    /// encryption costs.
    pub fn clear_text(self, clear: bool) -> Self {
        self.with_flag(EnvelopeFlags::CLEAR, clear)
    }

    /// Marks the stream's envelopes as keep latest (see [`EnvelopeFlags::KEEP_LATEST`]): the
    /// publisher keeps only its newest samples while the stream is held back.
    pub fn keep_latest(self, keep_latest: bool) -> Self {
        self.with_flag(EnvelopeFlags::KEEP_LATEST, keep_latest)
    }

    fn with_flag(mut self, flag: u8, on: bool) -> Self {
        if on {
            self.flags.0 |= flag;
        } else {
            self.flags.0 &= !flag;
        }
        self
    }

    pub fn name(&self) -> Name {
        self.name
    }

    pub fn session(&self) -> u64 {
        self.session
    }

    /// The sequence number the next envelope will carry.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// The envelope size for a payload of `len` bytes.
    pub fn sealed_len(&self, len: usize) -> usize {
        let sig = if self.flags.signed() {
            SIGNER_LEN + SIGNATURE_LEN
        } else {
            0
        };
        HEADER_LEN + len + TAG_LEN + sig
    }

    /// Seals `payload` into `out` (its contents replaced). The payload is read once, by the
    /// cipher, which writes the ciphertext straight into `out`.
    pub fn seal(
        &mut self,
        payload: &[u8],
        send_time_us: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), SealError> {
        self.seal_kind(PayloadKind::Data, payload, send_time_us, out)
    }

    /// Like [`Self::seal`], for a payload of the given kind (an instance lifecycle change
    /// carries the instance's serialized key; see [`PayloadKind`]). The kind is in the
    /// authenticated header.
    pub fn seal_kind(
        &mut self,
        kind: PayloadKind,
        payload: &[u8],
        send_time_us: u64,
        out: &mut Vec<u8>,
    ) -> Result<(), SealError> {
        self.seal_at(kind, payload, send_time_us, None, out)
    }

    /// Like [`Self::seal_kind`], with the publisher's own time of the message (a DDS
    /// sample's source timestamp, nanoseconds since the Unix epoch) sealed after the payload
    /// ([`EnvelopeFlags::SOURCE_TIME`]), for [`Opened::source_time_ns`].
    pub fn seal_at(
        &mut self,
        kind: PayloadKind,
        payload: &[u8],
        send_time_us: u64,
        source_time_ns: Option<u64>,
        out: &mut Vec<u8>,
    ) -> Result<(), SealError> {
        if self.next_seq == u64::MAX {
            return Err(SealError::Exhausted);
        }
        self.follow_keys();
        let seq = self.next_seq;
        self.next_seq += 1;
        let source_time = source_time_ns.map(u64::to_be_bytes);
        let extra: &[u8] = match &source_time {
            Some(b) => b,
            None => &[],
        };
        let mut flags = kind.apply(self.flags);
        if source_time.is_some() {
            flags.0 |= EnvelopeFlags::SOURCE_TIME;
        }
        let header = EnvelopeHeader {
            flags,
            epoch: self.epoch,
            name: self.name,
            session: self.session,
            seq,
            send_time_us,
        };
        let body_end = HEADER_LEN + payload.len() + extra.len();
        let tag_end = body_end + TAG_LEN;
        zeroed(out, self.sealed_len(payload.len() + extra.len()));
        out[..HEADER_LEN].copy_from_slice(&header.to_bytes());
        let signer_pk = self.signer.as_ref().map(|s| s.public_key());
        if self.flags.clear() {
            // Header and payload are the associated data; nothing is encrypted. A signature
            // (below) covers the signer key.
            out[HEADER_LEN..HEADER_LEN + payload.len()].copy_from_slice(payload);
            out[HEADER_LEN + payload.len()..body_end].copy_from_slice(extra);
            let tag = self
                .key
                .seal_in_place_separate_tag(nonce(seq), Aad::from(&out[..body_end]), &mut [])
                .map_err(|_| SealError::Crypto)?;
            out[body_end..tag_end].copy_from_slice(tag.as_ref());
        } else {
            self.encrypt(seq, signer_pk.as_ref(), payload, extra, &mut out[..tag_end])?;
        }
        if let (Some(signer), Some(pk)) = (&self.signer, signer_pk) {
            out[tag_end..tag_end + SIGNER_LEN].copy_from_slice(&pk);
            let sig = signer.key.sign(&out[..tag_end + SIGNER_LEN]);
            out[tag_end + SIGNER_LEN..].copy_from_slice(sig.as_ref());
        }
        Ok(())
    }

    /// Encrypts `payload` and then `extra` into `out` after its header, tag last; the header
    /// (and signer key) are the associated data.
    fn encrypt(
        &self,
        seq: u64,
        signer_pk: Option<&[u8; 32]>,
        payload: &[u8],
        extra: &[u8],
        out: &mut [u8],
    ) -> Result<(), SealError> {
        let (head, rest) = out.split_at_mut(HEADER_LEN);
        let (body, extra_and_tag) = rest.split_at_mut(payload.len());
        let mut aad_buf = [0u8; HEADER_LEN + SIGNER_LEN];
        let aad: &[u8] = match signer_pk {
            Some(pk) => {
                aad_buf[..HEADER_LEN].copy_from_slice(head);
                aad_buf[HEADER_LEN..].copy_from_slice(pk);
                &aad_buf
            }
            None => head,
        };
        self.key
            .seal_out_of_place_scatter(
                nonce(seq),
                Aad::from(aad),
                payload,
                body,
                extra,
                extra_and_tag,
            )
            .map_err(|_| SealError::Crypto)
    }

    pub fn seal_to_vec(&mut self, payload: &[u8], send_time_us: u64) -> Result<Vec<u8>, SealError> {
        let mut out = Vec::new();
        self.seal(payload, send_time_us, &mut out)?;
        Ok(out)
    }
}

/// Sets `out` to `len` zero bytes. A buffer too small is replaced by one from zeroed memory
/// (fresh pages need no pass over them), not grown and filled.
fn zeroed(out: &mut Vec<u8>, len: usize) {
    out.clear();
    if out.capacity() < len {
        *out = vec![0; len];
    } else {
        out.resize(len, 0);
    }
}

#[path = "open.rs"]
mod open;
pub use open::{OpenError, OpenStats, Opened, Opener, OpenerConfig};

#[cfg(test)]
#[path = "seal_tests.rs"]
mod tests;
