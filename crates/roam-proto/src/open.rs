//! Opening envelopes: authentication, decryption, the signer check and replay protection
//! (the key schedule is [`super`]'s).

use std::collections::HashMap;

use aws_lc_rs::aead::{Aad, LessSafeKey};
use lru::LruCache;
use ring::hkdf;
use ring::signature;

use super::{nonce, session_key};
use crate::envelope::{
    EnvelopeError, EnvelopeHeader, HEADER_LEN, SIGNATURE_LEN, SIGNER_LEN, SOURCE_TIME_LEN, TAG_LEN,
};
use crate::epoch::{Epoch, Keyring, Keys};
use crate::name::Name;
use crate::realm::RealmSecret;
use crate::replay::{ReplayVerdict, ReplayWindow};

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
    /// nanoseconds since the Unix epoch, when its sealer gave one ([`super::Sealer::seal_at`]).
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

/// Sets `out`'s length to `len` for a caller that overwrites all of it: only bytes beyond
/// its old length are zeroed, so a reused buffer is not filled before every message.
fn resize_for_overwrite(out: &mut Vec<u8>, len: usize) {
    if out.len() >= len {
        out.truncate(len);
    } else {
        out.resize(len, 0);
    }
}
