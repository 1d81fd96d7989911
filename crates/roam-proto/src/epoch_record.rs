//! Epoch records: how a realm administrator hands a new epoch's secret to the remaining
//! members, and member statuses: how members say which epoch they are in.
//!
//! Both travel on the realm's epoch topic, sealed in epoch 0 (the realm file's secret), which
//! every member past and present can open: what protects them is inside. A record carries the
//! new secret once per member, sealed to that member's identity key with HPKE (RFC 9180, base
//! mode, DHKEM(X25519, HKDF-SHA256), HKDF-SHA256, AES-256-GCM; rustls's aws-lc-rs
//! implementation), and is signed by an administrator's Ed25519 identity key. A member's
//! X25519 key is its Ed25519 identity key mapped to Montgomery form (RFC 7748 section 4.1, as
//! libsodium's `crypto_sign_ed25519_pk_to_curve25519` and age's ssh-ed25519 recipients do), so
//! the keys `roam realm add-member` already lists are the keys epochs are sealed to.
//!
//! ```text
//! record                                   status
//!   "RMEP" 1                                 "RMST" 1
//!   realm id (32)                            realm id (32)
//!   epoch u16                                member str16
//!   issued ms u64                            epoch u16
//!   switch after ms u32                      sent ms u64
//!   retire after ms u32                      flags u8 (bit 0: asks every member for its status)
//!                                            Ed25519 signature (64) by the member
//!   admin str16 (the signer)
//!   admins: u16 count, str16 each
//!   members: u16 count, str16 + Ed25519 public key (32)
//!   sealed: u16 count, str16 + HPKE enc (32) + ciphertext of the secret (48)
//!   Ed25519 signature (64) by the admin over every preceding byte
//! ```
//!
//! HPKE's `info` is `"roam-v1 epoch" | realm id | epoch`, its associated data the member's
//! name, so a sealed secret cannot be moved to another realm, epoch or member.

use std::collections::HashMap;

use curve25519_dalek::edwards::CompressedEdwardsY;
use ring::signature::{self, KeyPair};
use rustls::crypto::aws_lc_rs::hpke::DH_KEM_X25519_HKDF_SHA256_AES_256 as SUITE;
use rustls::crypto::hpke::{EncapsulatedSecret, Hpke, HpkePrivateKey, HpkePublicKey};

use crate::codec::{put_str16, CodecError, Reader};
use crate::epoch::Epoch;
use crate::realm::RealmSecret;
use crate::seal::SigningIdentity;

const RECORD_MAGIC: &[u8; 4] = b"RMEP";
const STATUS_MAGIC: &[u8; 4] = b"RMST";
const VERSION: u8 = 1;
const INFO_PREFIX: &[u8] = b"roam-v1 epoch";
const SIGNATURE_LEN: usize = 64;
const ENC_LEN: usize = 32;
const SEALED_LEN: usize = 32 + 16;
/// Longest member name a record holds (identity names are at most 63 characters).
pub const MAX_NAME_LEN: usize = 63;
/// Most members (and administrators) one record lists.
pub const MAX_MEMBERS: usize = 4096;
/// The largest record: every member named, keyed and sealed to.
pub const MAX_RECORD_BYTES: usize = 64 + MAX_MEMBERS * (2 * (2 + MAX_NAME_LEN) + 32 + 80 + 2);

/// Why a record or status was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordError {
    #[error("malformed epoch message: {0}")]
    Codec(#[from] CodecError),
    #[error("not an epoch record or status (unknown magic or version)")]
    NotEpoch,
    #[error("epoch message of another realm")]
    OtherRealm,
    #[error("epoch message larger than {MAX_RECORD_BYTES} bytes")]
    TooLarge,
    #[error("{0} entries where at most {MAX_MEMBERS} are allowed")]
    TooMany(usize),
    #[error("member name {0:?} is empty or longer than {MAX_NAME_LEN} bytes")]
    BadName(String),
    #[error("{0} is not an administrator of this realm: only administrators start epochs")]
    NotAdmin(String),
    #[error("{0} is not a member of this realm (no key for it)")]
    UnknownMember(String),
    #[error("bad signature by {0}")]
    BadSignature(String),
    #[error("the key of member {0} is not a valid Ed25519 public key")]
    BadKey(String),
    #[error("this record holds no secret for {0}: it was removed from the realm, or added after the record")]
    NotSealedTo(String),
    #[error("the secret sealed to {0} does not open with its key")]
    Unsealable(String),
    #[error("the system random source or HPKE failed")]
    Crypto,
}

/// A member's identity key as epochs need it: Ed25519 to sign, X25519 (the same key in
/// Montgomery form) to open secrets sealed to it.
pub struct MemberKey {
    signing: SigningIdentity,
    x25519: [u8; 32],
}

impl MemberKey {
    /// From the identity's Ed25519 PKCS#8 document (`Identity::signing_pkcs8`, v1 or v2).
    pub fn from_pkcs8(der: &[u8]) -> Result<Self, crate::seal::KeyError> {
        let pair = signature::Ed25519KeyPair::from_pkcs8_maybe_unchecked(der)
            .map_err(crate::seal::KeyError::from)?;
        // RFC 8410: both versions hold the 32-byte seed as OCTET STRING { OCTET STRING } at
        // offset 16; checked by deriving the public key from it.
        let seed: Option<[u8; 32]> = der
            .get(12..16)
            .filter(|tag| *tag == [0x04, 0x22, 0x04, 0x20])
            .and_then(|_| der.get(16..48))
            .and_then(|s| s.try_into().ok());
        let Some(seed) = seed else {
            return Err(crate::seal::KeyError::Layout);
        };
        let signing = SigningIdentity::from_seed(&seed);
        if signing.public_key().as_slice() != pair.public_key().as_ref() {
            return Err(crate::seal::KeyError::Layout);
        }
        Ok(Self::from_seed(&seed))
    }

    pub fn from_seed(seed: &[u8; 32]) -> Self {
        // RFC 8032 section 5.1.5: the Ed25519 scalar is the clamped first half of
        // SHA-512(seed); as an X25519 private key it is the same scalar (X25519 clamps too).
        let digest = ring::digest::digest(&ring::digest::SHA512, seed);
        let mut x25519 = [0u8; 32];
        x25519.copy_from_slice(&digest.as_ref()[..32]);
        Self {
            signing: SigningIdentity::from_seed(seed),
            x25519,
        }
    }

    /// The Ed25519 public key (what `roam realm add-member` lists).
    pub fn public_key(&self) -> [u8; 32] {
        self.signing.public_key()
    }

    pub fn signing(&self) -> &SigningIdentity {
        &self.signing
    }
}

impl Drop for MemberKey {
    fn drop(&mut self) {
        self.x25519.fill(0);
    }
}

/// An Ed25519 public key in Montgomery form: the X25519 key HPKE seals to. None for a point
/// that is not on the curve or of small order (whose shared secrets would be predictable).
fn x25519_public(ed25519: &[u8; 32]) -> Option<[u8; 32]> {
    let point = CompressedEdwardsY(*ed25519).decompress()?;
    if point.is_small_order() {
        return None;
    }
    Some(point.to_montgomery().to_bytes())
}

fn info(realm: &[u8; 32], epoch: Epoch) -> Vec<u8> {
    let mut v = Vec::with_capacity(INFO_PREFIX.len() + 34);
    v.extend_from_slice(INFO_PREFIX);
    v.extend_from_slice(realm);
    v.extend_from_slice(&epoch.to_be_bytes());
    v
}

fn check_name(name: &str) -> Result<(), RecordError> {
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return Err(RecordError::BadName(name.to_owned()));
    }
    Ok(())
}

fn verify_by(key: &[u8; 32], signed: &[u8], sig: &[u8], who: &str) -> Result<(), RecordError> {
    signature::UnparsedPublicKey::new(&signature::ED25519, key)
        .verify(signed, sig)
        .map_err(|_| RecordError::BadSignature(who.to_owned()))
}

/// What a new epoch is: everything a record says but the sealed secrets and the signature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochTerms {
    /// The realm's id ([`crate::name`]'s name of its epoch topic): binds the record to it.
    pub realm: [u8; 32],
    pub epoch: Epoch,
    /// The administrator's clock when it issued the record, Unix milliseconds.
    pub issued_ms: u64,
    /// How long after receiving the record a member starts sealing in the new epoch: long
    /// enough for every online member to have it by then.
    pub switch_after_ms: u32,
    /// How long after receiving the record a member stops opening the epoch before.
    pub retire_after_ms: u32,
    /// Who may start the epoch after this one.
    pub admins: Vec<String>,
    /// The members from this epoch on, with their Ed25519 identity keys.
    pub members: Vec<(String, [u8; 32])>,
}

/// A parsed epoch record, not yet verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EpochRecord {
    pub terms: EpochTerms,
    /// The administrator that signed it.
    pub admin: String,
    sealed: Vec<(String, [u8; ENC_LEN], [u8; SEALED_LEN])>,
    signed_len: usize,
    bytes: Vec<u8>,
}

impl EpochRecord {
    /// Seals `secret` to every member of `terms` and signs the record as `admin_name`.
    pub fn issue(
        terms: EpochTerms,
        secret: &RealmSecret,
        admin_name: &str,
        admin: &MemberKey,
    ) -> Result<Self, RecordError> {
        check_name(admin_name)?;
        for n in &terms.admins {
            check_name(n)?;
        }
        if terms.members.len() > MAX_MEMBERS || terms.admins.len() > MAX_MEMBERS {
            return Err(RecordError::TooMany(
                terms.members.len().max(terms.admins.len()),
            ));
        }
        let info = info(&terms.realm, terms.epoch);
        let mut sealed = Vec::with_capacity(terms.members.len());
        for (name, key) in &terms.members {
            check_name(name)?;
            let x = x25519_public(key).ok_or_else(|| RecordError::BadKey(name.clone()))?;
            let (enc, ct) = SUITE
                .seal(
                    &info,
                    name.as_bytes(),
                    secret.as_bytes(),
                    &HpkePublicKey(x.to_vec()),
                )
                .map_err(|_| RecordError::Crypto)?;
            let enc: [u8; ENC_LEN] = enc.0.try_into().map_err(|_| RecordError::Crypto)?;
            let ct: [u8; SEALED_LEN] = ct.try_into().map_err(|_| RecordError::Crypto)?;
            sealed.push((name.clone(), enc, ct));
        }
        let mut out = Vec::new();
        out.extend_from_slice(RECORD_MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&terms.realm);
        out.extend_from_slice(&terms.epoch.to_be_bytes());
        out.extend_from_slice(&terms.issued_ms.to_be_bytes());
        out.extend_from_slice(&terms.switch_after_ms.to_be_bytes());
        out.extend_from_slice(&terms.retire_after_ms.to_be_bytes());
        put_str16(&mut out, admin_name);
        out.extend_from_slice(&(terms.admins.len() as u16).to_be_bytes());
        for a in &terms.admins {
            put_str16(&mut out, a);
        }
        out.extend_from_slice(&(terms.members.len() as u16).to_be_bytes());
        for (n, k) in &terms.members {
            put_str16(&mut out, n);
            out.extend_from_slice(k);
        }
        out.extend_from_slice(&(sealed.len() as u16).to_be_bytes());
        for (n, enc, ct) in &sealed {
            put_str16(&mut out, n);
            out.extend_from_slice(enc);
            out.extend_from_slice(ct);
        }
        let signed_len = out.len();
        let sig = admin.signing.sign(&out);
        out.extend_from_slice(&sig);
        Ok(Self {
            terms,
            admin: admin_name.to_owned(),
            sealed,
            signed_len,
            bytes: out,
        })
    }

    /// Parses a record from outside: structure and limits only (see [`Self::verify`]).
    pub fn parse(bytes: &[u8]) -> Result<Self, RecordError> {
        if bytes.len() > MAX_RECORD_BYTES {
            return Err(RecordError::TooLarge);
        }
        let mut r = Reader::new(bytes);
        if r.take(4)? != RECORD_MAGIC || r.u8()? != VERSION {
            return Err(RecordError::NotEpoch);
        }
        let realm = r.array::<32>()?;
        let epoch = r.u16()?;
        let issued_ms = r.u64()?;
        let switch_after_ms = r.u32()?;
        let retire_after_ms = r.u32()?;
        let name = |r: &mut Reader<'_>| -> Result<String, RecordError> {
            let n = r.str16(MAX_NAME_LEN)?;
            check_name(n)?;
            Ok(n.to_owned())
        };
        let count = |r: &mut Reader<'_>| -> Result<usize, RecordError> {
            let n = r.u16()? as usize;
            if n > MAX_MEMBERS {
                return Err(RecordError::TooMany(n));
            }
            Ok(n)
        };
        let admin = name(&mut r)?;
        let mut admins = Vec::new();
        for _ in 0..count(&mut r)? {
            admins.push(name(&mut r)?);
        }
        let mut members = Vec::new();
        for _ in 0..count(&mut r)? {
            let n = name(&mut r)?;
            members.push((n, r.array::<32>()?));
        }
        let mut sealed = Vec::new();
        for _ in 0..count(&mut r)? {
            let n = name(&mut r)?;
            sealed.push((n, r.array::<ENC_LEN>()?, r.array::<SEALED_LEN>()?));
        }
        let signed_len = bytes.len() - r.remaining();
        r.take(SIGNATURE_LEN)?;
        r.finish()?;
        Ok(Self {
            terms: EpochTerms {
                realm,
                epoch,
                issued_ms,
                switch_after_ms,
                retire_after_ms,
                admins,
                members,
            },
            admin,
            sealed,
            signed_len,
            bytes: bytes.to_vec(),
        })
    }

    /// The record as it travels.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Checks that the record is for `realm` and signed by one of `admins`, with the key
    /// `members` holds for it: the verifier's own view of the realm, not the record's.
    pub fn verify(
        &self,
        realm: &[u8; 32],
        admins: &[String],
        members: &HashMap<String, [u8; 32]>,
    ) -> Result<(), RecordError> {
        if &self.terms.realm != realm {
            return Err(RecordError::OtherRealm);
        }
        if !admins.contains(&self.admin) {
            return Err(RecordError::NotAdmin(self.admin.clone()));
        }
        let key = members
            .get(&self.admin)
            .ok_or_else(|| RecordError::UnknownMember(self.admin.clone()))?;
        self.verify_signature(key)
    }

    /// Checks the signature against the signer's key as the record itself lists it: for a
    /// record read back from this member's own disk, already verified when it was taken.
    pub fn verify_self_consistent(&self) -> Result<(), RecordError> {
        let key = self
            .terms
            .members
            .iter()
            .find(|(n, _)| *n == self.admin)
            .map(|(_, k)| *k)
            .ok_or_else(|| RecordError::UnknownMember(self.admin.clone()))?;
        self.verify_signature(&key)
    }

    fn verify_signature(&self, key: &[u8; 32]) -> Result<(), RecordError> {
        verify_by(
            key,
            &self.bytes[..self.signed_len],
            &self.bytes[self.signed_len..],
            &self.admin,
        )
    }

    /// Whether the record holds a secret for `member`.
    pub fn sealed_to(&self, member: &str) -> bool {
        self.sealed.iter().any(|(n, _, _)| n == member)
    }

    /// Opens the epoch's secret with `member`'s own key.
    pub fn open(&self, member: &str, key: &MemberKey) -> Result<RealmSecret, RecordError> {
        let (_, enc, ct) = self
            .sealed
            .iter()
            .find(|(n, _, _)| n == member)
            .ok_or_else(|| RecordError::NotSealedTo(member.to_owned()))?;
        let private = HpkePrivateKey::from(key.x25519.to_vec());
        let mut plain = SUITE
            .open(
                &EncapsulatedSecret(enc.to_vec()),
                &info(&self.terms.realm, self.terms.epoch),
                member.as_bytes(),
                ct,
                &private,
            )
            .map_err(|_| RecordError::Unsealable(member.to_owned()))?;
        let secret: Option<[u8; 32]> = plain.as_slice().try_into().ok();
        plain.fill(0);
        secret
            .map(RealmSecret::from_bytes)
            .ok_or_else(|| RecordError::Unsealable(member.to_owned()))
    }
}

/// A member's statement of the epoch it seals in, signed with its identity key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemberStatus {
    pub realm: [u8; 32],
    pub member: String,
    pub epoch: Epoch,
    /// The member's clock when it sent this, Unix milliseconds.
    pub sent_ms: u64,
    /// Asks every member that hears it to say its own status now (`roam fleet status`).
    pub ask: bool,
}

impl MemberStatus {
    pub fn encode(&self, key: &MemberKey) -> Vec<u8> {
        let mut out = Vec::with_capacity(64 + self.member.len() + SIGNATURE_LEN);
        out.extend_from_slice(STATUS_MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&self.realm);
        put_str16(&mut out, &self.member);
        out.extend_from_slice(&self.epoch.to_be_bytes());
        out.extend_from_slice(&self.sent_ms.to_be_bytes());
        out.push(u8::from(self.ask));
        let sig = key.signing.sign(&out);
        out.extend_from_slice(&sig);
        out
    }

    /// Parses and verifies a status against the verifier's member keys.
    pub fn parse(
        bytes: &[u8],
        realm: &[u8; 32],
        members: &HashMap<String, [u8; 32]>,
    ) -> Result<Self, RecordError> {
        let mut r = Reader::new(bytes);
        if r.take(4)? != STATUS_MAGIC || r.u8()? != VERSION {
            return Err(RecordError::NotEpoch);
        }
        let status = Self {
            realm: r.array()?,
            member: r.str16(MAX_NAME_LEN)?.to_owned(),
            epoch: r.u16()?,
            sent_ms: r.u64()?,
            ask: match r.u8()? {
                0 => false,
                1 => true,
                _ => return Err(RecordError::NotEpoch),
            },
        };
        let signed_len = bytes.len() - r.remaining();
        let sig = r.take(SIGNATURE_LEN)?;
        r.finish()?;
        if &status.realm != realm {
            return Err(RecordError::OtherRealm);
        }
        let key = members
            .get(&status.member)
            .ok_or_else(|| RecordError::UnknownMember(status.member.clone()))?;
        verify_by(key, &bytes[..signed_len], sig, &status.member)?;
        Ok(status)
    }
}

/// What an epoch-topic message is, from its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message {
    Record,
    Status,
}

/// Tells records from statuses without parsing either.
pub fn message_kind(bytes: &[u8]) -> Option<Message> {
    match bytes.get(..4)? {
        m if m == RECORD_MAGIC => Some(Message::Record),
        m if m == STATUS_MAGIC => Some(Message::Status),
        _ => None,
    }
}

#[cfg(test)]
#[path = "epoch_record_tests.rs"]
mod tests;
