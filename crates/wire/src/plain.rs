//! The one-host fast paths' view of the commonest frame: a plain eager
//! frame (no flags) carrying a whole message. Same bytes as `Frame::Eager`
//! (`frame.rs`), read and written field by field without building a
//! `Frame`: on shared memory a one-byte message's whole cost is a few
//! hundred cycles, and moving the enum through the stack was a tenth of it
//! (docs/benchmarks.md at commit 52d70dc, section 29).

use crate::frame::{field, Envelope, Kind, ENVELOPE_LEN, MAGIC};

/// Header length of an eager frame.
pub const EAGER_HEADER_LEN: usize = field::COMMON_LEN + ENVELOPE_LEN;

/// The header of `Frame::Eager { env, flags: 0, .. }`.
#[inline]
pub fn plain_eager_header(env: &Envelope) -> [u8; EAGER_HEADER_LEN] {
    let mut h = [0u8; EAGER_HEADER_LEN];
    h[field::MAGIC] = MAGIC;
    h[field::KIND] = Kind::Eager as u8;
    let o = field::COMMON_LEN;
    h[o..o + 4].copy_from_slice(&env.ctx.to_le_bytes());
    h[o + 4..o + 8].copy_from_slice(&env.tag.to_le_bytes());
    h[o + 8..o + 16].copy_from_slice(&env.seq.to_le_bytes());
    h[o + 16..o + 24].copy_from_slice(&env.msg_id.to_le_bytes());
    h[o + 24..o + 32].copy_from_slice(&env.total_len.to_le_bytes());
    h
}

/// The envelope and payload of `b` when it is an eager frame without flags
/// whose payload is the whole message; `None` for anything else (valid or
/// not: `Frame::parse` judges those). Never panics.
#[inline]
pub fn plain_eager(b: &[u8]) -> Option<(Envelope, &[u8])> {
    let (h, payload) = b.split_first_chunk::<EAGER_HEADER_LEN>()?;
    // Magic, kind and the two flag bytes (zero) in one comparison.
    if u32::from_le_bytes([h[0], h[1], h[2], h[3]]) != u32::from_le_bytes([MAGIC, Kind::Eager as u8, 0, 0]) {
        return None;
    }
    let u64_at = |at: usize| u64::from_le_bytes(h[at..at + 8].try_into().expect("8 bytes"));
    let o = field::COMMON_LEN;
    let total_len = u64_at(o + 24);
    if payload.len() as u64 != total_len {
        return None;
    }
    let ctx = u32::from_le_bytes(h[o..o + 4].try_into().expect("4 bytes"));
    let tag = i32::from_le_bytes(h[o + 4..o + 8].try_into().expect("4 bytes"));
    Some((Envelope { ctx, tag, seq: u64_at(o + 8), msg_id: u64_at(o + 16), total_len }, payload))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{flags, Frame};

    fn env(total_len: u64) -> Envelope {
        Envelope { ctx: 0x0102_0304, tag: -7, seq: 1 << 40 | 5, msg_id: 1 << 63 | 9, total_len }
    }

    #[test]
    fn the_header_is_the_eager_frame_header() {
        let e = env(3);
        let v = Frame::Eager { env: e, flags: 0, payload: b"abc" }.to_vec();
        assert_eq!(&plain_eager_header(&e)[..], &v[..EAGER_HEADER_LEN]);
        assert_eq!(plain_eager(&v), Some((e, &b"abc"[..])));
    }

    #[test]
    fn agrees_with_parse_and_refuses_all_but_plain_whole_messages() {
        let e = env(3);
        let cases: Vec<(Vec<u8>, bool)> = vec![
            (Frame::Eager { env: env(0), flags: 0, payload: &[] }.to_vec(), true),
            (Frame::Eager { env: e, flags: flags::SYNC, payload: b"abc" }.to_vec(), false),
            (Frame::Eager { env: e, flags: flags::WINDOW, payload: b"abc" }.to_vec(), false),
            // The first piece of a longer message is not the whole of it.
            (Frame::Eager { env: env(10), flags: flags::PUSH, payload: b"abc" }.to_vec(), false),
            (Frame::Rts { env: e, flags: 0 }.to_vec(), false),
            (Frame::Data { msg_id: 1, offset: 0, payload: &[0; 40] }.to_vec(), false),
        ];
        for (bytes, plain) in &cases {
            let got = plain_eager(bytes);
            assert_eq!(got.is_some(), *plain, "{bytes:02x?}");
            if let Some((env, payload)) = got {
                assert_eq!(Frame::parse(bytes), Ok(Frame::Eager { env, flags: 0, payload }));
            }
        }
        // Claimed longer or shorter than carried; truncated; wrong magic.
        let mut v = Frame::Eager { env: e, flags: 0, payload: b"abc" }.to_vec();
        v.pop();
        assert_eq!(plain_eager(&v), None);
        v.extend_from_slice(b"cd");
        assert_eq!(plain_eager(&v), None);
        assert_eq!(plain_eager(&v[..EAGER_HEADER_LEN - 1]), None);
        assert_eq!(plain_eager(&[]), None);
        let mut w = Frame::Eager { env: e, flags: 0, payload: b"abc" }.to_vec();
        w[0] ^= 1;
        assert_eq!(plain_eager(&w), None);
    }
}
