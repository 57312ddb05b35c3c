//! Encoding of what the store persists. Every value starts with a one-byte format marker so
//! that a later release can read (and migrate) what an earlier one wrote.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::StoreError;

/// The format every value is written in today: JSON.
const FORMAT_JSON_V1: u8 = 1;

/// Encodes a value with its format marker.
pub(crate) fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>, StoreError> {
    let mut bytes = vec![FORMAT_JSON_V1];
    serde_json::to_writer(&mut bytes, value).map_err(|e| StoreError::Corrupt(e.to_string()))?;
    Ok(bytes)
}

/// Decodes a value written by [`encode`].
pub(crate) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, StoreError> {
    match bytes.split_first() {
        Some((&FORMAT_JSON_V1, rest)) => {
            serde_json::from_slice(rest).map_err(|e| StoreError::Corrupt(e.to_string()))
        }
        Some((marker, _)) => Err(StoreError::Corrupt(format!("unknown format marker {marker}"))),
        None => Err(StoreError::Corrupt("empty value".to_string())),
    }
}

/// The key of the log entry at `index`: big-endian, so keys sort as indexes do.
pub(crate) fn log_key(index: u64) -> [u8; 8] {
    index.to_be_bytes()
}

/// The index a log key encodes.
pub(crate) fn log_index(key: &[u8]) -> Result<u64, StoreError> {
    let bytes: [u8; 8] = key
        .try_into()
        .map_err(|_| StoreError::Corrupt(format!("log key of {} bytes", key.len())))?;
    Ok(u64::from_be_bytes(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_unknown_markers_are_refused() {
        let bytes = encode(&vec![1u32, 2, 3]).expect("encode");
        assert_eq!(decode::<Vec<u32>>(&bytes).expect("decode"), vec![1, 2, 3]);
        let mut future = bytes.clone();
        future[0] = 9;
        assert!(decode::<Vec<u32>>(&future).is_err());
        assert!(decode::<Vec<u32>>(&[]).is_err());
    }

    #[test]
    fn log_keys_sort_like_indexes() {
        assert!(log_key(255) < log_key(256));
        assert_eq!(log_index(&log_key(42)).expect("index"), 42);
    }
}
