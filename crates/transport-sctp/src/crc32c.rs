//! CRC32c (Castagnoli), for checksum offload: usrsctp then skips its own
//! software CRC and the UDP glue computes/checks it here, with the SSE4.2
//! `crc32` instruction when the CPU has it (a table otherwise).

/// Reflected Castagnoli polynomial.
const POLY: u32 = 0x82F6_3B78;

const TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// The standard CRC32c of `data` (check value of "123456789" is 0xE3069283).
pub fn crc32c(data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("sse4.2") {
            // SAFETY: the feature was detected at run time.
            return unsafe { crc32c_sse42(data) };
        }
    }
    crc32c_table(data)
}

fn crc32c_table(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c = TABLE[((c ^ b as u32) & 0xff) as usize] ^ (c >> 8);
    }
    !c
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
unsafe fn crc32c_sse42(data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u64, _mm_crc32_u8};
    let mut c = !0u64;
    let mut chunks = data.chunks_exact(8);
    for w in &mut chunks {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        c = _mm_crc32_u64(c, u64::from_le_bytes(b));
    }
    let mut c = c as u32;
    for &b in chunks.remainder() {
        c = _mm_crc32_u8(c, b);
    }
    !c
}

/// Offset of the checksum in the SCTP common header.
const CSUM: std::ops::Range<usize> = 8..12;

/// Writes the checksum of an outgoing SCTP packet (RFC 4960 appendix B:
/// computed with the field zeroed, stored little-endian).
pub fn seal(packet: &mut [u8]) {
    if packet.len() < 12 {
        return;
    }
    packet[CSUM].fill(0);
    let crc = crc32c(packet);
    packet[CSUM].copy_from_slice(&crc.to_le_bytes());
}

/// Checks the checksum of an incoming SCTP packet (restores the packet).
pub fn verify(packet: &mut [u8]) -> bool {
    if packet.len() < 12 {
        return false;
    }
    let mut stored = [0u8; 4];
    stored.copy_from_slice(&packet[CSUM]);
    packet[CSUM].fill(0);
    let ok = crc32c(packet).to_le_bytes() == stored;
    packet[CSUM].copy_from_slice(&stored);
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value_and_both_implementations_agree() {
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
        assert_eq!(crc32c_table(b"123456789"), 0xE306_9283);
        let data: Vec<u8> = (0..5000u32).map(|i| (i * 31 + 7) as u8).collect();
        for len in [0, 1, 7, 8, 9, 63, 1452, 5000] {
            assert_eq!(crc32c(&data[..len]), crc32c_table(&data[..len]), "len {len}");
        }
    }

    #[test]
    fn agrees_with_usrsctp_software_crc() {
        let mut data: Vec<u8> = (0..1452u32).map(|i| (i * 131 + 3) as u8).collect();
        let theirs = unsafe { usrsctp_sys::usrsctp_crc32c(data.as_mut_ptr().cast(), data.len()) };
        assert_eq!(crc32c(&data).to_le_bytes(), theirs.to_ne_bytes());
    }

    #[test]
    fn seal_then_verify_and_corruption_is_caught() {
        let mut p: Vec<u8> = (0..100u8).collect();
        seal(&mut p);
        assert!(verify(&mut p));
        p[50] ^= 1;
        assert!(!verify(&mut p));
        assert!(!verify(&mut [0u8; 5]));
    }
}
