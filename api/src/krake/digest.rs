//! A digest of a rendered value: what a watch compares of an observed status (a cluster's, an
//! application's) between two polls.

use serde_json::Value;

/// FNV-1a of the value's text.
pub fn digest(value: &Value) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in value.to_string().bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}
