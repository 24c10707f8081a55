//! Keys and AEAD for one connection: AES-128-GCM (by `ring`, which uses
//! AES-NI or VAES and carry-less multiply where the CPU has them) with one
//! key per direction and a 64-bit record counter as the nonce.
//!
//! The keys come from HKDF-SHA256 over the job secret, salted with the
//! handshake's transcript (the connector's HELLO with its fresh nonce, the
//! acceptor's fresh nonce and flags): a new pair of keys for every
//! connection, never reused across jobs or connections, so a counter
//! starting at 0 never repeats a (key, nonce). TCP is ordered, so the
//! receiver expects exactly the next counter: a record replayed, dropped,
//! reordered, injected or altered fails to open.
//!
//! Why AES-GCM and not ChaCha20-Poly1305: both in `ring`, measured on this
//! machine (docs/benchmarks.md "Sealing"; the cipher comparison: its
//! sections 19 and 21 at commit 52d70dc), AES-GCM seals 64 KiB
//! records 2 to 4x faster where AES-NI exists, which is every x86 server of
//! the last decade (the derivation and the cipher are shared with the
//! other channels of a job: `wanmpi_bootstrap::seal`). Why 128-bit keys
//! (since protocol version 3; version 2 used AES-256-GCM): 10 to 60 %
//! faster here, and it is what TLS 1.3's default suite and wamp use; 128
//! bits are beyond any brute force, and each key protects one connection's
//! direction only.

use std::ops::RangeFrom;
use wanmpi_bootstrap::seal::{derive_pair, nonce, Key};

/// Bytes of the authentication tag after each record.
pub use wanmpi_bootstrap::seal::TAG_LEN;
/// The HKDF label: names the protocol version and cipher, so keys of one
/// version can never serve another.
const INFO: &[u8] = b"wanmpi-tcp-v3 record keys AES-128-GCM";

/// A record failed to open: altered, injected, replayed or reordered.
#[derive(Debug, PartialEq, Eq)]
pub struct OpenError {
    /// Which record of this direction (0 = the first after the handshake).
    pub record: u64,
}

/// Seals this side's records, numbering them.
pub struct Sealer {
    key: Key,
    counter: u64,
}

/// Opens the peer's records, expecting them in order.
pub struct Opener {
    key: Key,
    counter: u64,
}

/// Both directions of one connection.
pub struct Keys {
    pub sealer: Sealer,
    pub opener: Opener,
}

impl Keys {
    /// Derives the keys of a connection from the job secret and the
    /// handshake transcript; `connector` says which side we are.
    pub fn derive(secret: &[u8; 32], transcript: &[u8], connector: bool) -> Keys {
        let (c_to_a, a_to_c) = derive_pair(secret, transcript, INFO);
        let (send, recv) = if connector { (c_to_a, a_to_c) } else { (a_to_c, c_to_a) };
        Keys { sealer: Sealer { key: send, counter: 0 }, opener: Opener { key: recv, counter: 0 } }
    }
}

impl Sealer {
    /// Encrypts `in_out` in place under the next counter, with `aad`
    /// authenticated alongside; returns the tag to append.
    pub fn seal(&mut self, aad: &[u8], in_out: &mut [u8]) -> [u8; TAG_LEN] {
        // Unique: a fresh key per connection and direction, and the counter only grows.
        let tag = self.key.seal(nonce(0, self.counter), aad, in_out);
        // 2^64 records cannot be sent in the life of a job.
        self.counter += 1;
        tag
    }
}

impl Opener {
    /// Opens the record `buf[src..]` (ciphertext then tag) under the next
    /// counter, writing the plaintext to the front of `buf`; returns its
    /// length. Shifting left lets records of one frame close the gaps their
    /// tags left, in the same pass as the decryption.
    pub fn open_within(&mut self, aad: &[u8], buf: &mut [u8], src: RangeFrom<usize>) -> Result<usize, OpenError> {
        let record = self.counter;
        let plain = self.key.open_within(nonce(0, record), aad, buf, src).map_err(|_| OpenError { record })?;
        self.counter += 1;
        Ok(plain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (Keys, Keys) {
        let t = b"transcript";
        (Keys::derive(&[7; 32], t, true), Keys::derive(&[7; 32], t, false))
    }

    fn sealed(k: &mut Sealer, aad: &[u8], msg: &[u8]) -> Vec<u8> {
        let mut v = msg.to_vec();
        let tag = k.seal(aad, &mut v);
        v.extend_from_slice(&tag);
        v
    }

    #[test]
    fn records_open_in_order_on_the_other_side_only() {
        let (mut c, mut a) = pair();
        let r0 = sealed(&mut c.sealer, b"h", b"first");
        let r1 = sealed(&mut c.sealer, b"h", b"second");
        assert_ne!(&r0[..5], b"first");
        // Our own direction's key is not the peer's: a reflected record fails.
        assert_eq!(c.opener.open_within(b"h", &mut r0.clone(), 0..), Err(OpenError { record: 0 }));
        let mut b = r0.clone();
        assert_eq!(a.opener.open_within(b"h", &mut b, 0..), Ok(5));
        assert_eq!(&b[..5], b"first");
        let mut b = r1.clone();
        assert_eq!(a.opener.open_within(b"h", &mut b, 0..), Ok(6));
        assert_eq!(&b[..6], b"second");
    }

    #[test]
    fn replayed_reordered_flipped_or_other_aad_fails() {
        let (mut c, _) = pair();
        let r0 = sealed(&mut c.sealer, b"h", b"first");
        let r1 = sealed(&mut c.sealer, b"h", b"second");
        let fresh = || Keys::derive(&[7; 32], b"transcript", false).opener;
        // Reordered: record 1 where 0 is expected.
        assert!(fresh().open_within(b"h", &mut r1.clone(), 0..).is_err());
        // Replayed: record 0 again after record 0.
        let mut o = fresh();
        o.open_within(b"h", &mut r0.clone(), 0..).unwrap();
        assert_eq!(o.open_within(b"h", &mut r0.clone(), 0..), Err(OpenError { record: 1 }));
        for i in 0..r0.len() {
            let mut t = r0.clone();
            t[i] ^= 0x10;
            assert!(fresh().open_within(b"h", &mut t, 0..).is_err(), "flipped byte {i}");
        }
        assert!(fresh().open_within(b"H", &mut r0.clone(), 0..).is_err());
        let other = Keys::derive(&[8; 32], b"transcript", false);
        let mut o = other.opener;
        assert!(o.open_within(b"h", &mut r0.clone(), 0..).is_err());
    }

    #[test]
    fn the_cipher_and_key_derivation_are_pinned() {
        // A known answer: if this changes, the record format changed and
        // auth.rs's VERSION must change with it (peers must agree). The
        // value was checked against another implementation (Python's
        // `cryptography`: HKDF-SHA256 with the transcript as salt, then
        // AES-128-GCM under the first 16 bytes, nonce 0).
        let (mut c, mut a) = pair();
        let rec = sealed(&mut c.sealer, b"aad", b"wanmpi");
        let hex: String = rec.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, KNOWN);
        let mut b = rec.clone();
        assert_eq!(a.opener.open_within(b"aad", &mut b, 0..), Ok(6));
    }
    const KNOWN: &str = "29abfc02948d6cacad993ad0daf952f0fa92e055076e";

    #[test]
    fn open_within_shifts_the_plaintext_left() {
        let (mut c, mut a) = pair();
        let mut buf = vec![0xEEu8; 20];
        buf.extend(sealed(&mut c.sealer, b"", b"shifted"));
        assert_eq!(a.opener.open_within(b"", &mut buf[4..], 16..), Ok(7));
        assert_eq!(&buf[4..11], b"shifted");
    }
}
