//! `_id` generation.

use std::io::Read;

use ctxpack_docs::document;
use serde_json::Value;

/// Generates ObjectId-like `_id`s: 4 bytes of Unix seconds, 5 random bytes fixed per
/// generator, and a 3-byte counter that starts at a random value, as MongoDB does.
#[derive(Clone, Debug)]
pub struct IdGenerator {
    random: [u8; 5],
    counter: u32,
}

impl IdGenerator {
    /// A generator seeded from the operating system's randomness.
    pub fn new() -> IdGenerator {
        let seed = random_u64();
        let bytes = seed.to_le_bytes();
        IdGenerator {
            random: [bytes[0], bytes[1], bytes[2], bytes[3], bytes[4]],
            counter: u32::from_le_bytes([bytes[5], bytes[6], bytes[7], 0]),
        }
    }

    /// The next id, `{"$oid": "<24 hex>"}`.
    pub fn next_id(&mut self) -> Value {
        let seconds = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as u32);
        self.counter = (self.counter + 1) & 0x00ff_ffff;
        document::object_id(seconds, self.random, self.counter)
    }
}

impl Default for IdGenerator {
    fn default() -> Self {
        IdGenerator::new()
    }
}

/// Eight random bytes from `/dev/urandom`, or (where it cannot be read) from the standard
/// library's randomly keyed hasher mixed with the pid and the time.
fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_ok()
    {
        return u64::from_le_bytes(bytes);
    }
    use std::hash::BuildHasher;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    std::collections::hash_map::RandomState::new().hash_one((std::process::id(), nanos))
}
