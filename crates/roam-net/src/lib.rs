//! placeholder
pub mod pki;
