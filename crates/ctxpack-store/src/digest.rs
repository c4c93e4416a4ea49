//! Naming bytes by their SHA-256.

use sha2::{Digest, Sha256};

/// The SHA-256 of `bytes` in lowercase hex: a text's name and an index entry's goal digest.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}
