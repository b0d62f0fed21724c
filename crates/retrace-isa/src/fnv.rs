//! 64-bit FNV-1a: the hash behind the identities retrace stores in traces
//! (a program's identity, the checked pc sequence).
//!
//! It lives in the crate every other one depends on so that there is one
//! copy: the values are stored in files, and two copies could drift apart
//! unnoticed until old traces stop matching. Simple, stable across versions
//! and platforms, and fast enough for a few megabytes.

/// A running FNV-1a hash.
///
/// ```
/// let mut h = retrace_isa::Fnv1a::new();
/// h.bytes(b"a");
/// assert_eq!(h.finish(), 0xaf63_dc4c_8601_ec8c);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fnv1a(u64);

impl Fnv1a {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    /// The hash of nothing.
    pub const fn new() -> Fnv1a {
        Fnv1a(Fnv1a::OFFSET_BASIS)
    }

    /// Go on from a hash value `finish` returned earlier (for types that
    /// keep the value itself in a public field).
    pub const fn resume(hash: u64) -> Fnv1a {
        Fnv1a(hash)
    }

    /// Hash `b`, byte by byte.
    #[inline]
    pub fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= u64::from(x);
            self.0 = self.0.wrapping_mul(Fnv1a::PRIME);
        }
    }

    /// Hash `v` as 8 little-endian bytes (on every host).
    #[inline]
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }

    /// The hash so far.
    #[inline]
    pub const fn finish(self) -> u64 {
        self.0
    }
}

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a::new()
    }
}
