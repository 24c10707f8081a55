//! Entry points for the fuzz targets (`fuzz/fuzz_targets/shm_ring.rs`):
//! what a rank reads from memory or text another process wrote, fed with
//! arbitrary bytes. Not part of the transport's API.

use crate::endpoint::Endpoint;
use crate::ring::{Consumer, RingMem};
use std::sync::atomic::AtomicU64;

/// Data bytes of the fuzzed ring: small, so the fuzzer reaches its end.
const CAP: usize = 1024;

/// A ring whose counters and data are `bytes` (a hostile producer wrote
/// them), drained by a consumer until it is empty or reports corruption.
/// Every frame handed out must lie inside the data area; the consumer must
/// neither panic nor read outside it (the sanitizer checks the reads).
pub fn drain_hostile_ring(bytes: &[u8]) {
    let word = |i: usize| {
        let mut w = [0u8; 8];
        for (k, b) in w.iter_mut().enumerate() {
            *b = bytes.get(i * 8 + k).copied().unwrap_or(0);
        }
        u64::from_le_bytes(w)
    };
    // [head, tail, data...]: heap words, so the data area is 8-aligned.
    let buf: Vec<AtomicU64> = (0..2 + CAP / 8).map(|i| AtomicU64::new(word(i))).collect();
    let data = buf[2..].as_ptr() as *mut u8;
    let (lo, hi) = (data as usize, data as usize + CAP);
    // SAFETY: `buf` outlives the consumer, which is dropped at the end of
    // this function; CAP is a power of two of at least 64.
    let mem = unsafe { RingMem::new(&buf[0], &buf[1], data, CAP) };
    let max_frame = bytes.first().map_or(CAP / 4, |&b| 8 + b as usize * 4);
    let mut c = Consumer::new(mem, max_frame, 16);
    // Every record advances the consumer by at least 8 bytes, so a ring
    // that is not corrupt runs dry within CAP / 8 records; one lap more
    // bounds a loop that the checks failed to stop.
    for _ in 0..2 * CAP / 8 {
        let _ = c.has_data();
        let _ = c.free_bytes();
        match c.pop(|channel, frame| {
            let at = frame.as_ptr() as usize;
            assert!(channel < 16 && frame.len() <= max_frame, "channel {channel}, {} bytes", frame.len());
            assert!(at >= lo && at + frame.len() <= hi, "a frame outside the ring");
        }) {
            Ok(true) => {}
            Ok(false) | Err(_) => return,
        }
    }
}

/// A peer's endpoint text, as read from the key/value service: parsed
/// values render back to the same text.
pub fn parse_endpoint(text: &str) {
    if let Some(e) = Endpoint::parse(text) {
        assert_eq!(Endpoint::parse(&e.to_string()), Some(e), "{text:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_rings_and_endpoints_are_survived() {
        // A valid frame record (len 3, channel 1, kind 1) after counters
        // head 0, tail 16; then the same with a length past the ring.
        let mut ring = vec![0u8; 16];
        ring[8] = 16;
        ring.extend_from_slice(&(3u64 | 1 << 32 | 1 << 48).to_le_bytes());
        ring.extend_from_slice(b"abc\0\0\0\0\0");
        drain_hostile_ring(&ring);
        ring[16..24].copy_from_slice(&(5000u64 | 1 << 48).to_le_bytes());
        drain_hostile_ring(&ring);
        // Padding at offset 0 covering the whole ring: before it was
        // refused, the consumer went round the ring for ever.
        ring[16..24].copy_from_slice(&((CAP as u64 - 8) | 2 << 48).to_le_bytes());
        drain_hostile_ring(&ring);
        drain_hostile_ring(&[0xff; 2000]);
        drain_hostile_ring(&[]);
        parse_endpoint("4242.7.9.123456.ffffffffffffffff0000000000000001");
        parse_endpoint("1.2.3");
    }
}
