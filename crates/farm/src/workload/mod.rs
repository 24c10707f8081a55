//! Workloads for the farm's binaries and tests: the papers' synthetic farm
//! and Bulk Processor Farm, and the robust correlation matrix.

pub mod cli;
pub mod data;
pub mod maronna;
pub mod synthetic;

/// SplitMix64: a tiny seeded generator for reproducible task contents.
pub fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// FNV-1a over bytes: the checksum results carry.
pub fn fnv1a(b: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &x in b {
        h ^= x as u64;
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}
