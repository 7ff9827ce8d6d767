//! The node's 32-byte hashes: a block's hash, a state hash, a PoH hash, the genesis
//! hash. Shown (the event log, the status, the node's lines) as lowercase hex.

use std::fmt;

/// A SHA-256 digest the node names something by: a block (its header's hash), a state
/// (after a block), a point of the PoH chain, or the genesis.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
#[repr(transparent)]
pub struct Hash(pub [u8; 32]);

impl Hash {
    /// The digest's bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl From<[u8; 32]> for Hash {
    fn from(b: [u8; 32]) -> Hash {
        Hash(b)
    }
}

impl AsRef<[u8]> for Hash {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

impl TryFrom<&[u8]> for Hash {
    type Error = std::array::TryFromSliceError;

    /// The hash in exactly 32 bytes.
    fn try_from(b: &[u8]) -> Result<Hash, Self::Error> {
        Ok(Hash(b.try_into()?))
    }
}

impl fmt::Display for Hash {
    /// Lowercase hex, 64 digits (a width or precision cuts it: `{:.16}`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hex = hex(&self.0);
        match f.precision() {
            Some(n) => f.write_str(&hex[..n.min(hex.len())]),
            None => f.write_str(&hex),
        }
    }
}

impl fmt::Debug for Hash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Hash({self})")
    }
}

impl serde::Serialize for Hash {
    /// As its hex, the way the event log and the status have always shown hashes.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// Lowercase hex of bytes: a signature, an encoded header (the log's evidence); a
/// [`Hash`] shows itself so.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_as_lowercase_hex_and_serializes_as_it() {
        let mut b = [0u8; 32];
        b[0] = 0xab;
        b[31] = 0x0f;
        let h = Hash(b);
        let hex = format!("ab{}0f", "0".repeat(60));
        assert_eq!(h.to_string(), hex);
        assert_eq!(format!("{h:.4}"), "ab00");
        assert_eq!(serde_json::to_value(h).unwrap(), serde_json::json!(hex));
        assert_eq!(format!("{h:?}"), format!("Hash({hex})"));
    }
}
