//! A stable short digest of a text: the fingerprint of a comparison (resume, bisect)
//! and the per-subject names a slot derives, the same on every build and platform.

/// FNV-1a of `text` in hex: stable across builds and platforms, unlike std's hasher.
pub fn digest(text: &str) -> String {
    let h = text.bytes().fold(0xcbf29ce484222325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100000001b3)
    });
    format!("{h:016x}")
}
