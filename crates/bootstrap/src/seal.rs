//! The AEAD every channel of a job shares: AES-128-GCM (by `ring`, which
//! uses AES-NI or VAES and carry-less multiply where the CPU has them)
//! under keys derived with HKDF-SHA256 from the job secret, salted with
//! what a connection's handshake exchanged (fresh nonces from both sides).
//!
//! Each user decides its own nonces (tcp: a record counter per direction;
//! sctp: the stream and a counter per stream; the key/value channel: a
//! line counter per direction), and its own HKDF label, which names the
//! protocol and version so keys of one can never serve another. What they
//! share is here: the derivation of a pair of directional keys, and the
//! cipher.

use hkdf::Hkdf;
use ring::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_128_GCM};
use sha2::Sha256;
use std::ops::RangeFrom;

/// Bytes of the authentication tag after each sealed message.
pub const TAG_LEN: usize = 16;
/// Bytes of one direction's key.
pub const KEY_LEN: usize = 16;
/// Bytes of a nonce.
pub const NONCE_LEN: usize = 12;

/// One direction's AES-128-GCM key.
pub struct Key(LessSafeKey);

/// A sealed message did not open: altered, forged, replayed, reordered or
/// under another key.
#[derive(Debug, PartialEq, Eq)]
pub struct Unopened;

impl Key {
    pub fn new(bytes: &[u8; KEY_LEN]) -> Key {
        Key(LessSafeKey::new(UnboundKey::new(&AES_128_GCM, bytes).expect("16-byte AES-128 key")))
    }

    /// Encrypts `in_out` in place under `nonce`, with `aad` authenticated
    /// alongside; returns the tag to send after it. The caller must never
    /// use a nonce twice with one key for different bytes.
    pub fn seal(&self, nonce: [u8; NONCE_LEN], aad: &[u8], in_out: &mut [u8]) -> [u8; TAG_LEN] {
        let n = Nonce::assume_unique_for_key(nonce);
        let tag = self.0.seal_in_place_separate_tag(n, Aad::from(aad), in_out).expect("AES-GCM seals any message under 64 GiB");
        let mut t = [0u8; TAG_LEN];
        t.copy_from_slice(tag.as_ref());
        t
    }

    /// Opens `buf[src..]` (ciphertext then tag) under `nonce`, writing the
    /// plaintext to the front of `buf`; returns its length.
    pub fn open_within(&self, nonce: [u8; NONCE_LEN], aad: &[u8], buf: &mut [u8], src: RangeFrom<usize>) -> Result<usize, Unopened> {
        let n = Nonce::assume_unique_for_key(nonce);
        self.0.open_within(n, Aad::from(aad), buf, src).map(|p| p.len()).map_err(|_| Unopened)
    }
}

/// Two keys, HKDF-SHA256 over `secret` salted with `salt`, expanded under
/// `info`: the first and the second 16 bytes (one per direction; which is
/// which the caller's protocol says).
pub fn derive_pair(secret: &[u8; 32], salt: &[u8], info: &[u8]) -> (Key, Key) {
    let hk = Hkdf::<Sha256>::new(Some(salt), secret);
    let mut okm = [0u8; 2 * KEY_LEN];
    hk.expand(info, &mut okm).expect("32 bytes is a valid HKDF-SHA256 output length");
    let (a, b) = okm.split_at(KEY_LEN);
    (Key::new(a.try_into().expect("16 bytes")), Key::new(b.try_into().expect("16 bytes")))
}

/// A nonce of a 32-bit prefix (which sequence) and a 64-bit counter.
pub fn nonce(prefix: u32, counter: u64) -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    n[..4].copy_from_slice(&prefix.to_be_bytes());
    n[4..].copy_from_slice(&counter.to_be_bytes());
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_opens_only_with_its_key_nonce_and_aad() {
        let (a, b) = derive_pair(&[1; 32], b"salt", b"test");
        let mut m = b"hello there".to_vec();
        let tag = a.seal(nonce(0, 5), b"h", &mut m);
        assert_ne!(&m[..], b"hello there");
        m.extend_from_slice(&tag);
        let open = |k: &Key, n, aad: &[u8], mut v: Vec<u8>| k.open_within(n, aad, &mut v, 0..).map(|len| v[..len].to_vec());
        assert_eq!(open(&a, nonce(0, 5), b"h", m.clone()), Ok(b"hello there".to_vec()));
        assert_eq!(open(&b, nonce(0, 5), b"h", m.clone()), Err(Unopened), "the other direction's key");
        assert_eq!(open(&a, nonce(0, 6), b"h", m.clone()), Err(Unopened), "another counter");
        assert_eq!(open(&a, nonce(1, 5), b"h", m.clone()), Err(Unopened), "another prefix");
        assert_eq!(open(&a, nonce(0, 5), b"H", m.clone()), Err(Unopened), "other aad");
        let (c, _) = derive_pair(&[1; 32], b"salT", b"test");
        assert_eq!(open(&c, nonce(0, 5), b"h", m.clone()), Err(Unopened), "another salt");
        let (d, _) = derive_pair(&[1; 32], b"salt", b"tesT");
        assert_eq!(open(&d, nonce(0, 5), b"h", m), Err(Unopened), "another label");
    }
}
