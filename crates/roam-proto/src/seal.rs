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

use std::collections::HashMap;

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM};
use lru::LruCache;
use ring::hkdf;
use ring::rand::{SecureRandom, SystemRandom};
use ring::signature::{self, Ed25519KeyPair, KeyPair};

use crate::envelope::{
    EnvelopeError, EnvelopeFlags, EnvelopeHeader, PayloadKind, HEADER_LEN, SIGNATURE_LEN,
    SIGNER_LEN, SOURCE_TIME_LEN, TAG_LEN,
};
use crate::epoch::{Epoch, Keyring, Keys};
use crate::name::Name;
use crate::realm::RealmSecret;
use crate::replay::{ReplayVerdict, ReplayWindow};

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

/// How an [`Opener`] judges envelopes.
#[derive(Debug, Clone)]
pub struct OpenerConfig {
    /// How many (name, session) replay windows to keep; least recently used are forgotten.
    pub max_sessions: usize,
    /// Refuse envelopes that carry no signature.
    pub require_signed: bool,
    /// Signers accepted in signed envelopes: Ed25519 public key -> member name.
    pub members: HashMap<[u8; 32], String>,
    /// When set, the first envelope of an unknown session must carry a send time within this
    /// many microseconds of the receiver's clock. Off by default: robots often lack a set clock.
    pub max_new_session_skew_us: Option<u64>,
}

impl Default for OpenerConfig {
    fn default() -> Self {
        Self {
            max_sessions: 4096,
            require_signed: false,
            members: HashMap::new(),
            max_new_session_skew_us: None,
        }
    }
}

/// Why an envelope was dropped. Each is counted in [`OpenStats`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Malformed(#[from] EnvelopeError),
    #[error("authentication failed: forged, corrupted, or sealed with another realm's secret")]
    Forged,
    #[error("replayed envelope (sequence {0} already seen)")]
    Replayed(u64),
    #[error("envelope too old for the replay window (sequence {0})")]
    TooOld(u64),
    #[error("unsigned envelope where signatures are required")]
    Unsigned,
    #[error("signature by a key that is not a realm member")]
    UnknownSigner,
    #[error("bad signature")]
    BadSignature,
    #[error("new session whose send time is {0} s away from this clock")]
    ClockSkew(u64),
    #[error("sealed in epoch {0} of the realm, which this member does not hold (not received yet, retired, or this member was removed from the realm)")]
    Epoch(Epoch),
}

/// Counters of what an opener accepted and refused.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenStats {
    pub opened: u64,
    pub malformed: u64,
    pub forged: u64,
    pub replayed: u64,
    pub unsigned: u64,
    pub bad_signer: u64,
    pub clock_skew: u64,
    /// Sealed in an epoch this member does not hold.
    pub epoch: u64,
}

/// An authenticated, decrypted envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Opened {
    pub header: EnvelopeHeader,
    /// The realm member that signed it, in signed mode.
    pub signer: Option<String>,
    /// The publisher's own time of the message (a DDS sample's source timestamp),
    /// nanoseconds since the Unix epoch, when its sealer gave one ([`Sealer::seal_at`]).
    pub source_time_ns: Option<u64>,
}

struct SessionState {
    epoch: Epoch,
    /// The keyring generation `epoch` was last found held at.
    generation: u64,
    key: LessSafeKey,
    window: ReplayWindow,
}

/// Opens envelopes sealed with one realm's keys, dropping forgeries and replays.
pub struct Opener {
    keys: std::sync::Arc<Keys>,
    generation: u64,
    ring: std::sync::Arc<Keyring>,
    sessions: LruCache<(Name, u64), SessionState>,
    config: OpenerConfig,
    stats: OpenStats,
}

impl Opener {
    /// An opener of epoch 0 only (the realm file's secret).
    pub fn new(realm: &RealmSecret, config: OpenerConfig) -> Self {
        Self::with_keys(&Keys::new(realm), config)
    }

    /// An opener of whatever epochs `keys` holds when each envelope arrives.
    pub fn with_keys(keys: &std::sync::Arc<Keys>, config: OpenerConfig) -> Self {
        Self {
            generation: keys.generation(),
            ring: keys.current(),
            keys: keys.clone(),
            // Bounded by `max_sessions` in `open_inner`, not by `LruCache::new`, which
            // allocates a table for all of them at once: ~140 KB per opener at 4,096, and a
            // proxy has one per imported topic while most topics have a single session.
            sessions: LruCache::unbounded(),
            config,
            stats: OpenStats::default(),
        }
    }

    pub fn stats(&self) -> OpenStats {
        self.stats
    }

    /// Authenticates and decrypts `envelope`, writing the payload to `out` (cleared first).
    /// `now_us` is the receiver's clock in Unix microseconds.
    pub fn open(
        &mut self,
        envelope: &[u8],
        now_us: u64,
        out: &mut Vec<u8>,
    ) -> Result<Opened, OpenError> {
        let r = self.open_inner(envelope, now_us, out);
        match &r {
            Ok(_) => self.stats.opened += 1,
            Err(OpenError::Malformed(_)) => self.stats.malformed += 1,
            Err(OpenError::Forged) => self.stats.forged += 1,
            Err(OpenError::Replayed(_)) | Err(OpenError::TooOld(_)) => self.stats.replayed += 1,
            Err(OpenError::Unsigned) => self.stats.unsigned += 1,
            Err(OpenError::UnknownSigner) | Err(OpenError::BadSignature) => {
                self.stats.bad_signer += 1
            }
            Err(OpenError::ClockSkew(_)) => self.stats.clock_skew += 1,
            Err(OpenError::Epoch(_)) => self.stats.epoch += 1,
        }
        r
    }

    fn open_inner(
        &mut self,
        envelope: &[u8],
        now_us: u64,
        out: &mut Vec<u8>,
    ) -> Result<Opened, OpenError> {
        let header = EnvelopeHeader::parse(envelope)?;
        let signed = header.flags.signed();
        if self.config.require_signed && !signed {
            return Err(OpenError::Unsigned);
        }
        let sig_len = if signed {
            SIGNER_LEN + SIGNATURE_LEN
        } else {
            0
        };
        let sealed_end = envelope.len() - sig_len;
        let id = (header.name, header.session);
        let generation = self.keys.generation();
        if generation != self.generation {
            self.ring = self.keys.current();
            self.generation = generation;
        }

        if let Some(state) = self.sessions.get_mut(&id) {
            // A session's epoch is checked against the keyring once per keyring change, so a
            // retired epoch stops opening at once, cached sessions included.
            if state.epoch != header.epoch || state.generation != generation {
                let prk = self
                    .ring
                    .prk(header.epoch)
                    .ok_or(OpenError::Epoch(header.epoch))?;
                if state.epoch != header.epoch {
                    let signer = open_in_other_epoch(
                        state,
                        prk,
                        generation,
                        &self.config,
                        &header,
                        envelope,
                        sealed_end,
                        out,
                    )?;
                    let source_time_ns = take_source_time(&header, out);
                    return Ok(Opened {
                        header,
                        signer,
                        source_time_ns,
                    });
                }
                state.generation = generation;
            }
            let signer = open_checked(state, &self.config, &header, envelope, sealed_end, out)?;
            let source_time_ns = take_source_time(&header, out);
            return Ok(Opened {
                header,
                signer,
                source_time_ns,
            });
        }
        let prk = self
            .ring
            .prk(header.epoch)
            .ok_or(OpenError::Epoch(header.epoch))?;
        // A new session's key is derived here but remembered only once an envelope
        // authenticates, so forgeries cannot push real sessions out of the cache.
        if let Some(max) = self.config.max_new_session_skew_us {
            let skew = now_us.abs_diff(header.send_time_us);
            if skew > max {
                return Err(OpenError::ClockSkew(skew / 1_000_000));
            }
        }
        let mut state = SessionState {
            epoch: header.epoch,
            generation,
            key: session_key(prk, &header.name, header.session),
            window: ReplayWindow::default(),
        };
        let signer = open_checked(&mut state, &self.config, &header, envelope, sealed_end, out)?;
        if self.sessions.len() >= self.config.max_sessions.max(1) {
            self.sessions.pop_lru();
        }
        self.sessions.put(id, state);
        let source_time_ns = take_source_time(&header, out);
        Ok(Opened {
            header,
            signer,
            source_time_ns,
        })
    }
}

/// Opens an envelope of a known session sealed in another epoch than its last one: the
/// publisher followed a rotation (or an envelope of the epoch before is still arriving). Same
/// session and replay window, the other epoch's key, kept only once an envelope authenticates
/// with it. Out of line: it happens once per rotation and session.
#[cold]
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn open_in_other_epoch(
    state: &mut SessionState,
    prk: &hkdf::Prk,
    generation: u64,
    config: &OpenerConfig,
    header: &EnvelopeHeader,
    envelope: &[u8],
    sealed_end: usize,
    out: &mut Vec<u8>,
) -> Result<Option<String>, OpenError> {
    let key = session_key(prk, &header.name, header.session);
    match state.window.check(header.seq) {
        ReplayVerdict::Fresh => {}
        ReplayVerdict::Duplicate => return Err(OpenError::Replayed(header.seq)),
        ReplayVerdict::TooOld => return Err(OpenError::TooOld(header.seq)),
    }
    let signer = open_body(&key, config, header, envelope, sealed_end, out)?;
    state.window.record(header.seq);
    state.key = key;
    state.epoch = header.epoch;
    state.generation = generation;
    Ok(signer)
}

/// Replay check, authentication and decryption; records the sequence only on success.
fn open_checked(
    state: &mut SessionState,
    config: &OpenerConfig,
    header: &EnvelopeHeader,
    envelope: &[u8],
    sealed_end: usize,
    out: &mut Vec<u8>,
) -> Result<Option<String>, OpenError> {
    match state.window.check(header.seq) {
        ReplayVerdict::Fresh => {}
        ReplayVerdict::Duplicate => return Err(OpenError::Replayed(header.seq)),
        ReplayVerdict::TooOld => return Err(OpenError::TooOld(header.seq)),
    }
    let signer = open_body(&state.key, config, header, envelope, sealed_end, out)?;
    state.window.record(header.seq);
    Ok(signer)
}

/// Decrypts and, when signed, verifies. Returns the signer's member name.
fn open_body(
    key: &LessSafeKey,
    config: &OpenerConfig,
    header: &EnvelopeHeader,
    envelope: &[u8],
    sealed_end: usize,
    out: &mut Vec<u8>,
) -> Result<Option<String>, OpenError> {
    let mut signer = None;
    let mut aad_buf = [0u8; HEADER_LEN + SIGNER_LEN];
    let aad: &[u8] = if header.flags.signed() {
        let pk: [u8; 32] = envelope[sealed_end..sealed_end + SIGNER_LEN]
            .try_into()
            .map_err(|_| OpenError::Malformed(EnvelopeError::TooShort))?;
        let member = config.members.get(&pk).ok_or(OpenError::UnknownSigner)?;
        signature::UnparsedPublicKey::new(&signature::ED25519, &pk)
            .verify(
                &envelope[..sealed_end + SIGNER_LEN],
                &envelope[sealed_end + SIGNER_LEN..],
            )
            .map_err(|_| OpenError::BadSignature)?;
        signer = Some(member.clone());
        aad_buf[..HEADER_LEN].copy_from_slice(&envelope[..HEADER_LEN]);
        aad_buf[HEADER_LEN..].copy_from_slice(&pk);
        &aad_buf[..]
    } else {
        &envelope[..HEADER_LEN]
    };
    if header.flags.clear() {
        // Integrity only: the tag authenticates header and payload; nothing to decrypt.
        let tag_at = sealed_end - TAG_LEN;
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&envelope[tag_at..sealed_end]);
        key.open_in_place(nonce(header.seq), Aad::from(&envelope[..tag_at]), &mut tag)
            .map_err(|_| OpenError::Forged)?;
        out.clear();
        out.extend_from_slice(&envelope[HEADER_LEN..tag_at]);
        return Ok(signer);
    }
    let tag_at = sealed_end - TAG_LEN;
    resize_for_overwrite(out, tag_at - HEADER_LEN);
    let opened = key.open_separate_gather(
        nonce(header.seq),
        Aad::from(aad),
        &envelope[HEADER_LEN..tag_at],
        &envelope[tag_at..sealed_end],
        out,
    );
    if opened.is_err() {
        out.clear();
        return Err(OpenError::Forged);
    }
    Ok(signer)
}

/// Takes the source time off the end of an opened plaintext whose header says it has one
/// (`EnvelopeHeader::parse` made sure the envelope is long enough to hold it).
fn take_source_time(header: &EnvelopeHeader, out: &mut Vec<u8>) -> Option<u64> {
    if !header.flags.source_time() {
        return None;
    }
    let at = out.len().checked_sub(SOURCE_TIME_LEN)?;
    let mut b = [0u8; SOURCE_TIME_LEN];
    b.copy_from_slice(&out[at..]);
    out.truncate(at);
    Some(u64::from_be_bytes(b))
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

/// Sets `out`'s length to `len` for a caller that overwrites all of it: only bytes beyond
/// its old length are zeroed, so a reused buffer is not filled before every message.
fn resize_for_overwrite(out: &mut Vec<u8>, len: usize) {
    if out.len() >= len {
        out.truncate(len);
    } else {
        out.resize(len, 0);
    }
}

#[cfg(test)]
#[path = "seal_tests.rs"]
mod tests;
