//! Keys and AEAD for one pair of ranks. Each side published a fresh random
//! nonce through the bootstrap service (whose connections prove the job
//! secret); both derive, with HKDF-SHA256 over the job secret, one AES-128-GCM
//! key per direction (AEAD by `ring`: its assembly runs 3-4x faster here
//! than the portable RustCrypto implementation, which took half of a rank's
//! CPU on loopback). A datagram's nonce is its packet number, never reused
//! in one direction, and its cleartext header is the associated data: a
//! datagram that was forged, corrupted, replayed from another job or aimed
//! at another rank fails to open. Replays inside the job are caught by the
//! receiver's packet-number window (ackgen.rs).

use hkdf::Hkdf;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
use sha2::Sha256;

pub const NONCE_LEN: usize = 32;
const INFO: &[u8] = b"wanmpi-wamp-v1 keys";

/// Sealing and opening for one peer; `None` ciphers mean encryption is off
/// (`WANMPI_WAMP_ENCRYPT=0`, to measure its cost only).
pub struct Keys {
    send: Option<LessSafeKey>,
    recv: Option<LessSafeKey>,
}

#[derive(Debug, PartialEq, Eq)]
pub struct OpenError;

fn nonce(pn: u64) -> Nonce {
    let mut n = [0u8; 12];
    n[4..].copy_from_slice(&pn.to_be_bytes());
    // Unique: one key per direction, and a packet number is never reused.
    Nonce::assume_unique_for_key(n)
}

fn key(bytes: &[u8]) -> LessSafeKey {
    LessSafeKey::new(UnboundKey::new(&AES_128_GCM, bytes).expect("16-byte AES-128 key"))
}

impl Keys {
    /// Keys between `me` and `peer`, from the job secret and both nonces.
    pub fn derive(secret: &[u8; 32], me: u32, my_nonce: &[u8; NONCE_LEN], peer: u32, peer_nonce: &[u8; NONCE_LEN]) -> Keys {
        let (lo, hi, lo_nonce, hi_nonce) = if me < peer { (me, peer, my_nonce, peer_nonce) } else { (peer, me, peer_nonce, my_nonce) };
        let mut salt = Vec::with_capacity(2 * NONCE_LEN + 8);
        salt.extend_from_slice(lo_nonce);
        salt.extend_from_slice(hi_nonce);
        salt.extend_from_slice(&lo.to_be_bytes());
        salt.extend_from_slice(&hi.to_be_bytes());
        let hk = Hkdf::<Sha256>::new(Some(&salt), secret);
        let mut okm = [0u8; 32];
        hk.expand(INFO, &mut okm).expect("32 bytes is a valid HKDF-SHA256 output length");
        let (lo_to_hi, hi_to_lo) = (key(&okm[..16]), key(&okm[16..]));
        let (send, recv) = if me == lo { (lo_to_hi, hi_to_lo) } else { (hi_to_lo, lo_to_hi) };
        Keys { send: Some(send), recv: Some(recv) }
    }

    /// No encryption, no authentication.
    pub fn plain() -> Keys {
        Keys { send: None, recv: None }
    }

    pub fn encrypting(&self) -> bool {
        self.send.is_some()
    }

    /// Seals `buf[header_len..]` in place under packet number `pn`, with
    /// `buf[..header_len]` as associated data, and appends the tag.
    pub fn seal(&self, pn: u64, buf: &mut Vec<u8>, header_len: usize) {
        let Some(c) = &self.send else { return };
        let (aad, body) = buf.split_at_mut(header_len);
        let tag = c.seal_in_place_separate_tag(nonce(pn), Aad::from(&*aad), body).expect("AES-GCM seals any payload under 64 GiB");
        buf.extend_from_slice(tag.as_ref());
    }

    /// Opens a sealed datagram in place; returns the plaintext's range.
    pub fn open(&self, pn: u64, buf: &mut [u8], header_len: usize) -> Result<std::ops::Range<usize>, OpenError> {
        let Some(c) = &self.recv else { return Ok(header_len..buf.len()) };
        if buf.len() < header_len + crate::packet::TAG_LEN {
            return Err(OpenError);
        }
        let (aad, sealed) = buf.split_at_mut(header_len);
        let plain = c.open_in_place(nonce(pn), Aad::from(&*aad), sealed).map_err(|_| OpenError)?.len();
        Ok(header_len..header_len + plain)
    }
}

pub fn fresh_nonce() -> [u8; NONCE_LEN] {
    use rand::RngCore;
    let mut n = [0u8; NONCE_LEN];
    rand::rngs::OsRng.fill_bytes(&mut n);
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (Keys, Keys) {
        let s = [7u8; 32];
        let (na, nb) = ([1u8; 32], [2u8; 32]);
        (Keys::derive(&s, 0, &na, 1, &nb), Keys::derive(&s, 1, &nb, 0, &na))
    }

    #[test]
    fn sealed_opens_on_the_other_side_only() {
        let (a, b) = pair();
        let mut d = b"HEADERpayload".to_vec();
        a.seal(5, &mut d, 6);
        assert_ne!(&d[6..13], b"payload");
        let mut d2 = d.clone();
        let r = b.open(5, &mut d2, 6).unwrap();
        assert_eq!(&d2[r], b"payload");
        // Our own send key is not the peer's: a reflected datagram fails.
        assert_eq!(a.open(5, &mut d.clone(), 6), Err(OpenError));
    }

    #[test]
    fn tampering_wrong_pn_or_wrong_secret_fails() {
        let (a, b) = pair();
        let mut d = b"HEADERpayload".to_vec();
        a.seal(5, &mut d, 6);
        for i in 0..d.len() {
            let mut t = d.clone();
            t[i] ^= 1;
            assert_eq!(b.open(5, &mut t, 6), Err(OpenError), "flipped byte {i}");
        }
        assert_eq!(b.open(6, &mut d.clone(), 6), Err(OpenError));
        let other = Keys::derive(&[8u8; 32], 1, &[2u8; 32], 0, &[1u8; 32]);
        assert_eq!(other.open(5, &mut d.clone(), 6), Err(OpenError));
        assert_eq!(b.open(5, &mut d[..10].to_vec(), 6), Err(OpenError));
    }
}
