//! The key a QUIC endpoint derives its stateless reset tokens from, the same in every life of
//! one identity.
//!
//! A router killed and restarted on the same address gets its peers' keepalives for the
//! connections of its previous life. With a random key (quinn's default) its answer, a
//! stateless reset, carries a token the peers do not know, and they keep routing into the
//! dead connection until its idle timeout. With a key derived from the identity's private
//! key the token is the one its previous life handed out, so the peers drop the connection
//! at once (RFC 9000, 10.3.2, a static key) and their links come back over a new one.
//!
//! quinn answers only packets whose connection ID its own generator could have made (the
//! ID carries a keyed hash), so the generator's key is derived the same way: otherwise the
//! new life drops the peers' packets as invalid without answering them.

use quinn::crypto::{CryptoError, HmacKey};

/// What the keys are derived for: changing them changes every token and connection ID.
const LABEL: &[u8] = b"roam quic stateless reset v1";
const CID_LABEL: &[u8] = b"roam quic connection ids v1";

/// The key of the endpoint's connection ID hash, from `secret` (an identity's private key).
pub(super) fn cid_key(secret: &[u8]) -> u64 {
    let outer = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
    let tag = ring::hmac::sign(&outer, CID_LABEL);
    let mut k = [0u8; 8];
    k.copy_from_slice(&tag.as_ref()[..8]);
    u64::from_le_bytes(k)
}

/// HMAC-SHA256 under a key derived from `secret` (an identity's private key).
pub(super) struct ResetKey(ring::hmac::Key);

impl ResetKey {
    pub(super) fn derive(secret: &[u8]) -> Self {
        let outer = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret);
        let derived = ring::hmac::sign(&outer, LABEL);
        Self(ring::hmac::Key::new(
            ring::hmac::HMAC_SHA256,
            derived.as_ref(),
        ))
    }
}

impl HmacKey for ResetKey {
    fn sign(&self, data: &[u8], out: &mut [u8]) {
        let tag = ring::hmac::sign(&self.0, data);
        // quinn asks for `signature_len` bytes or fewer (a reset token is 16).
        let n = out.len().min(tag.as_ref().len());
        out[..n].copy_from_slice(&tag.as_ref()[..n]);
    }

    fn signature_len(&self) -> usize {
        32
    }

    fn verify(&self, data: &[u8], signature: &[u8]) -> Result<(), CryptoError> {
        ring::hmac::verify(&self.0, data, signature).map_err(|_| CryptoError)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(key: &ResetKey, cid: &[u8]) -> [u8; 32] {
        let mut out = [0; 32];
        key.sign(cid, &mut out);
        out
    }

    #[test]
    fn one_identity_gives_the_same_tokens_in_every_life_and_another_does_not() {
        let cid = [7u8; 8];
        let a = ResetKey::derive(b"private key of r2");
        let again = ResetKey::derive(b"private key of r2");
        let other = ResetKey::derive(b"private key of r3");
        assert_eq!(token(&a, &cid), token(&again, &cid));
        assert_ne!(token(&a, &cid), token(&other, &cid));
        assert_ne!(token(&a, &cid), token(&a, &[8u8; 8]));
        assert!(again.verify(&cid, &token(&a, &cid)).is_ok());
        assert!(other.verify(&cid, &token(&a, &cid)).is_err());
    }

    #[test]
    fn connection_ids_made_in_one_life_are_recognised_in_the_next() {
        use quinn_proto::{ConnectionIdGenerator, HashedConnectionIdGenerator};
        let key = cid_key(b"private key of r2");
        assert_eq!(key, cid_key(b"private key of r2"));
        assert_ne!(key, cid_key(b"private key of r3"));
        let cid = HashedConnectionIdGenerator::from_key(key).generate_cid();
        let next_life = HashedConnectionIdGenerator::from_key(cid_key(b"private key of r2"));
        assert!(next_life.validate(&cid).is_ok());
    }
}
