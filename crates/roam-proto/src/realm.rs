//! The realm secret: the one value a trust group shares.

use std::fmt;

/// Why a realm secret was not read.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SecretError {
    #[error("realm secret is not hexadecimal: {0}")]
    NotHex(hex::FromHexError),
    #[error("realm secret must be 32 bytes (64 hex digits), got {0} bytes")]
    Length(usize),
}

/// 32 bytes shared by all members of a realm. Names and envelope keys derive from it.
///
/// `Debug` never prints the secret.
#[derive(Clone, PartialEq, Eq)]
pub struct RealmSecret([u8; 32]);

impl RealmSecret {
    pub const LEN: usize = 32;

    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// A fresh secret from the operating system's random source.
    pub fn generate() -> Result<Self, ring::error::Unspecified> {
        let mut b = [0u8; 32];
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut b)?;
        Ok(Self(b))
    }

    /// Parses 64 hexadecimal digits.
    pub fn from_hex(s: &str) -> Result<Self, SecretError> {
        let s = s.trim();
        let v = hex::decode(s).map_err(SecretError::NotHex)?;
        let arr: [u8; 32] = v
            .try_into()
            .map_err(|v: Vec<u8>| SecretError::Length(v.len()))?;
        Ok(Self(arr))
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Debug for RealmSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RealmSecret(..)")
    }
}

impl Drop for RealmSecret {
    fn drop(&mut self) {
        // Best effort: do not leave the secret in freed memory.
        self.0.fill(0);
    }
}
