//! Sealed packets: on a sealed link every UDP datagram between two ranks —
//! each SCTP packet usrsctp makes, control chunks included, and each path
//! probe — travels encrypted and authenticated with AES-128-GCM (the job's
//! shared cipher, `wanmpi_bootstrap::seal`). A datagram that does not open,
//! or opens a second time, is dropped and counted before usrsctp sees it,
//! so nothing but the peer's own transport can make usrsctp act: a forged,
//! altered, truncated or replayed packet cannot end an association, at any
//! stage of it (INIT included), nor put data in a message.
//!
//! Layout: packet number (8 bytes, big-endian, in clear) | ciphertext | tag
//! (16). The nonce is the packet number; the sender counts them per link
//! from 0 and never reuses one, the receiver accepts each once within a
//! replay window (replay.rs).
//!
//! Keys: known before the first packet, so there is no unsealed start.
//! HKDF-SHA256 over the job secret, salted with both ranks and a fresh
//! 16-byte salt each rank published with its endpoint (so two transports
//! of one job, or of two jobs given the same secret in tests, never share
//! a key); one key per direction.

use wanmpi_bootstrap::seal::{derive_pair, nonce, Key, TAG_LEN};
use wanmpi_transport::PeerId;

use crate::replay::{Refused, Window};

/// The HKDF label: the protocol, its version and the cipher.
const INFO: &[u8] = b"wanmpi-sctp-v3 packet keys AES-128-GCM";
/// The nonce's first four bytes (the packet number fills the rest).
const NONCE_PREFIX: u32 = 0x5343_5450; // "SCTP"
/// Bytes of the clear packet number before the ciphertext.
pub const PN_LEN: usize = 8;
/// What sealing adds to a datagram.
pub const OVERHEAD: usize = PN_LEN + TAG_LEN;
/// Bytes of the salt each rank publishes with its endpoint.
pub const SALT_LEN: usize = 16;

/// Why a sealed datagram was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dropped {
    /// Shorter than a packet number and a tag.
    Short,
    /// The packet number was accepted before, or is older than the window.
    Replayed(Refused),
    /// Did not open: altered, forged, truncated or under another key.
    Forged,
}

/// Both keys of one link: `me` to `peer` and back.
pub fn derive(secret: &[u8; 32], me: PeerId, my_salt: &[u8; SALT_LEN], peer: PeerId, peer_salt: &[u8; SALT_LEN]) -> (Sealer, Opener) {
    let lower_first = me < peer;
    let (lo, hi) = if lower_first { (my_salt, peer_salt) } else { (peer_salt, my_salt) };
    let mut salt = Vec::with_capacity(2 * SALT_LEN + 8);
    salt.extend_from_slice(&me.min(peer).to_be_bytes());
    salt.extend_from_slice(&me.max(peer).to_be_bytes());
    salt.extend_from_slice(lo);
    salt.extend_from_slice(hi);
    let (lo_to_hi, hi_to_lo) = derive_pair(secret, &salt, INFO);
    let (send, recv) = if lower_first { (lo_to_hi, hi_to_lo) } else { (hi_to_lo, lo_to_hi) };
    (Sealer { key: send, next: std::sync::atomic::AtomicU64::new(0) }, Opener { key: recv, window: Window::default() })
}

/// The sending half: shared by every thread that drives usrsctp (its
/// output callback runs on any of them), hence the atomic counter.
pub struct Sealer {
    key: Key,
    next: std::sync::atomic::AtomicU64,
}

impl Sealer {
    /// Encrypts `packet` in place under a fresh packet number; returns the
    /// number's bytes (to send before it) and the tag (to send after it).
    pub fn seal(&self, packet: &mut [u8]) -> ([u8; PN_LEN], [u8; TAG_LEN]) {
        let pn = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tag = self.key.seal(nonce(NONCE_PREFIX, pn), &[], packet);
        (pn.to_be_bytes(), tag)
    }

    /// `packet` sealed into one new datagram (probes, tests).
    pub fn seal_to_vec(&self, packet: &[u8]) -> Vec<u8> {
        let mut body = packet.to_vec();
        let (pn, tag) = self.seal(&mut body);
        let mut d = Vec::with_capacity(OVERHEAD + packet.len());
        d.extend_from_slice(&pn);
        d.extend_from_slice(&body);
        d.extend_from_slice(&tag);
        d
    }
}

/// The receiving half, owned by the transport's pump.
pub struct Opener {
    key: Key,
    window: Window,
}

impl Opener {
    /// Opens `datagram` in place; on success returns the plaintext, at the
    /// front of `datagram`, and records its packet number.
    pub fn open<'a>(&mut self, datagram: &'a mut [u8]) -> Result<&'a mut [u8], Dropped> {
        if datagram.len() < OVERHEAD {
            return Err(Dropped::Short);
        }
        let mut pn = [0u8; PN_LEN];
        pn.copy_from_slice(&datagram[..PN_LEN]);
        let pn = u64::from_be_bytes(pn);
        self.window.check(pn).map_err(Dropped::Replayed)?;
        let len = self.key.open_within(nonce(NONCE_PREFIX, pn), &[], datagram, PN_LEN..).map_err(|_| Dropped::Forged)?;
        self.window.record(pn);
        Ok(&mut datagram[..len])
    }
}

impl Opener {
    /// Whether `datagram` is the peer's, sealed under this key, and newer
    /// than every packet opened so far: opens a copy and records nothing
    /// (ring may overwrite a buffer that fails to open). A datagram from
    /// an address the peer never used must pass this before the peer is
    /// believed to be there (pump.rs `adopt`): a replay, even one not yet
    /// seen, cannot move the peer.
    pub fn proves_newest(&self, datagram: &[u8]) -> bool {
        if datagram.len() < OVERHEAD {
            return false;
        }
        let mut pn = [0u8; PN_LEN];
        pn.copy_from_slice(&datagram[..PN_LEN]);
        let pn = u64::from_be_bytes(pn);
        if !self.window.is_newest(pn) {
            return false;
        }
        let mut copy = datagram.to_vec();
        self.key.open_within(nonce(NONCE_PREFIX, pn), &[], &mut copy, PN_LEN..).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_newest_sealed_packet_proves_the_peer() {
        let (s0, _o0, _s3, mut o3) = link();
        let d: Vec<Vec<u8>> = (0..3).map(|i| s0.seal_to_vec(format!("p{i}").as_bytes())).collect();
        assert!(o3.proves_newest(&d[1]));
        o3.open(&mut d[1].clone()).unwrap();
        // Proving opened nothing for good: the packet still opens once.
        assert!(!o3.proves_newest(&d[1]), "seen");
        assert!(!o3.proves_newest(&d[0]), "older than the newest");
        assert!(o3.proves_newest(&d[2]));
        let mut t = d[2].clone();
        t[9] ^= 1;
        assert!(!o3.proves_newest(&t), "altered");
        assert!(!o3.proves_newest(&d[2][..5]), "short");
    }

    const S0: [u8; SALT_LEN] = [0xa0; SALT_LEN];
    const S3: [u8; SALT_LEN] = [0x3b; SALT_LEN];

    fn link() -> (Sealer, Opener, Sealer, Opener) {
        let (s0, o0) = derive(&[9; 32], 0, &S0, 3, &S3);
        let (s3, o3) = derive(&[9; 32], 3, &S3, 0, &S0);
        (s0, o0, s3, o3)
    }

    #[test]
    fn opens_once_in_any_order_and_each_way_with_its_own_key() {
        let (s0, mut o0, s3, mut o3) = link();
        let d: Vec<Vec<u8>> = (0..4).map(|i| s0.seal_to_vec(format!("packet {i}").as_bytes())).collect();
        assert!(!d[0].windows(6).any(|w| w == b"packet"), "plaintext visible");
        assert_eq!(d[0].len(), 8 + OVERHEAD);
        assert_eq!(&d[2][..PN_LEN], &2u64.to_be_bytes());
        for i in [2, 0, 3, 1] {
            let mut x = d[i].clone();
            assert_eq!(o3.open(&mut x).unwrap(), format!("packet {i}").as_bytes());
        }
        assert_eq!(o3.open(&mut d[1].clone()), Err(Dropped::Replayed(Refused::Seen)));
        // Reflected back to its sender, our own packet does not open.
        let mut back = s3.seal_to_vec(b"back");
        assert_eq!(link().3.open(&mut back.clone()), Err(Dropped::Forged));
        assert_eq!(o0.open(&mut back).unwrap(), b"back");
    }

    #[test]
    fn flipped_truncated_renumbered_or_foreign_packets_fail_and_change_nothing() {
        let (s0, _, _, mut o3) = link();
        let d = s0.seal_to_vec(b"an SCTP packet with chunks");
        for i in 0..d.len() {
            for bit in [0x01, 0x80] {
                let mut t = d.clone();
                t[i] ^= bit;
                assert!(o3.open(&mut t).is_err(), "byte {i} bit {bit:#x}");
            }
        }
        for n in 0..d.len() {
            assert!(o3.open(&mut d[..n].to_vec()).is_err(), "truncated to {n}");
        }
        assert_eq!(o3.open(&mut d[..OVERHEAD - 1].to_vec()), Err(Dropped::Short));
        // Another secret, another salt, another pair of ranks: other keys.
        let others = [derive(&[8; 32], 3, &S3, 0, &S0).1, derive(&[9; 32], 3, &[1; SALT_LEN], 0, &S0).1, derive(&[9; 32], 2, &S3, 0, &S0).1];
        for mut o in others {
            assert_eq!(o.open(&mut d.clone()), Err(Dropped::Forged));
        }
        // None of the failures used up the number: the real packet opens.
        assert!(o3.open(&mut d.clone()).is_ok());
    }
}
