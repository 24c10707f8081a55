//! How a frame travels when the connection is sealed: its u32 length in
//! clear (as unsealed frames), then its bytes cut into records of at most
//! [`RECORD`] bytes, each followed by its tag. The length is associated data
//! of every record of the frame, so altering it fails the first record.
//!
//! ```text
//! len u32 LE | record 0: min(len, 64 KiB) bytes sealed | tag (16) | record 1 ... | tag
//! ```
//!
//! A frame of no bytes is one empty record (a tag alone). Records keep a
//! receiver busy while a long frame is still arriving: each is opened as
//! soon as it is complete, its plaintext shifted left over the tags before
//! it, so the whole frame ends up contiguous where it arrived, with no copy
//! but that shift (done by the decryption itself).

use crate::seal::{OpenError, Opener, Sealer, TAG_LEN};

/// Plaintext bytes per record: large enough that a tag and a cipher call
/// per record cost nothing against the bytes, small enough that the
/// receiver starts decrypting a 1 MiB frame long before its end arrives.
pub const RECORD: usize = 64 * 1024;

/// Records of a frame of `len` bytes.
pub fn records(len: usize) -> usize {
    len.div_ceil(RECORD).max(1)
}

/// Bytes of a sealed frame of `len` bytes on the wire, after its prefix.
pub fn wire_len(len: usize) -> usize {
    len + records(len) * TAG_LEN
}

/// A cursor over the parts of a frame, taking bytes in order.
pub struct Gather<'a> {
    parts: &'a [&'a [u8]],
    idx: usize,
    off: usize,
}

impl<'a> Gather<'a> {
    pub fn new(parts: &'a [&'a [u8]]) -> Gather<'a> {
        Gather { parts, idx: 0, off: 0 }
    }

    /// Appends the next `n` bytes of the parts to `out` (fewer if they end).
    fn take_into(&mut self, mut n: usize, out: &mut Vec<u8>) {
        while n > 0 && self.idx < self.parts.len() {
            let p = &self.parts[self.idx][self.off..];
            let k = p.len().min(n);
            out.extend_from_slice(&p[..k]);
            n -= k;
            self.off += k;
            if self.off == self.parts[self.idx].len() {
                self.idx += 1;
                self.off = 0;
            }
        }
    }
}

/// Appends record `index` of a frame of `len` bytes (prefix `aad`) to `out`,
/// taking its plaintext from `g`, sealing it in place there.
pub fn seal_record(s: &mut Sealer, aad: &[u8; 4], len: usize, index: usize, g: &mut Gather<'_>, out: &mut Vec<u8>) {
    let n = len.saturating_sub(index * RECORD).min(RECORD);
    let start = out.len();
    g.take_into(n, out);
    let tag = s.seal(aad, &mut out[start..]);
    out.extend_from_slice(&tag);
}

/// Opening one sealed frame whose wire bytes arrive into one contiguous
/// buffer, record by record as they complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    len: usize,
    /// Plaintext bytes already at the front of the buffer.
    plain: usize,
    /// Wire bytes already opened.
    wire: usize,
}

impl Progress {
    pub fn new(len: usize) -> Progress {
        Progress { len, plain: 0, wire: 0 }
    }

    /// `buf` holds the frame's wire bytes (after the prefix), of which the
    /// first `arrived` are in. Opens every record now complete; true once
    /// the whole frame is plaintext in `buf[..len]`.
    pub fn advance(&mut self, o: &mut Opener, aad: &[u8; 4], buf: &mut [u8], arrived: usize) -> Result<bool, OpenError> {
        let total = wire_len(self.len);
        while self.wire < total {
            let n = (self.len - self.plain).min(RECORD);
            let end = self.wire + n + TAG_LEN;
            if end > arrived {
                return Ok(false);
            }
            o.open_within(aad, &mut buf[self.plain..end], self.wire - self.plain..)?;
            self.plain += n;
            self.wire = end;
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::seal::Keys;

    fn keys() -> (Keys, Keys) {
        (Keys::derive(&[3; 32], b"t", true), Keys::derive(&[3; 32], b"t", false))
    }

    fn seal_frame(s: &mut Sealer, parts: &[&[u8]]) -> Vec<u8> {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let aad = (len as u32).to_le_bytes();
        let mut out = aad.to_vec();
        let mut g = Gather::new(parts);
        for i in 0..records(len) {
            seal_record(s, &aad, len, i, &mut g, &mut out);
        }
        out
    }

    #[test]
    fn sizes_count_a_tag_per_record_and_one_for_an_empty_frame() {
        assert_eq!(wire_len(0), 16);
        assert_eq!(wire_len(1), 17);
        assert_eq!(wire_len(RECORD), RECORD + 16);
        assert_eq!(wire_len(RECORD + 1), RECORD + 1 + 32);
        assert_eq!(wire_len(1 << 20), (1 << 20) + 16 * 16);
    }

    #[test]
    fn frames_of_any_size_and_parts_open_whole_as_bytes_arrive() {
        let (mut c, mut a) = keys();
        for len in [0, 1, 100, RECORD - 1, RECORD, RECORD + 1, 3 * RECORD + 17] {
            let body: Vec<u8> = (0..len).map(|i| (i * 13 % 251) as u8).collect();
            let cut = len / 3;
            let wire = seal_frame(&mut c.sealer, &[&body[..cut], &[], &body[cut..]]);
            assert_eq!(wire.len(), 4 + wire_len(len));
            if len > 8 {
                assert!(!wire.windows(8).any(|w| w == &body[..8]), "plaintext visible at len {len}");
            }
            let aad: [u8; 4] = wire[..4].try_into().unwrap();
            let mut buf = wire[4..].to_vec();
            let mut p = Progress::new(len);
            // Bytes arrive in uneven steps; records open as they complete.
            let mut arrived = 0;
            let mut done = false;
            while !done {
                arrived = (arrived + 40_000).min(buf.len());
                done = p.advance(&mut a.opener, &aad, &mut buf, arrived).unwrap();
            }
            assert_eq!(arrived, buf.len());
            assert_eq!(&buf[..len], &body[..], "len {len}");
        }
    }

    #[test]
    fn an_altered_length_or_record_fails() {
        let (mut c, _) = keys();
        let body = vec![9u8; RECORD + 10];
        let wire = seal_frame(&mut c.sealer, &[&body]);
        let open = |aad: [u8; 4], mut buf: Vec<u8>| {
            let mut o = Keys::derive(&[3; 32], b"t", false).opener;
            let len = u32::from_le_bytes(aad) as usize;
            let n = buf.len();
            Progress::new(len).advance(&mut o, &aad, &mut buf, n)
        };
        let aad: [u8; 4] = wire[..4].try_into().unwrap();
        assert_eq!(open(aad, wire[4..].to_vec()), Ok(true));
        let shorter = ((body.len() - 1) as u32).to_le_bytes();
        assert!(open(shorter, wire[4..].to_vec()).is_err());
        let mut flipped = wire[4..].to_vec();
        flipped[RECORD + 20] ^= 1; // inside the second record
        assert_eq!(open(aad, flipped), Err(OpenError { record: 1 }));
    }
}
