//! Proof of the job secret on every association, before any frame of that
//! peer reaches the engine. Each side sends HELLO (a fresh 32-byte nonce
//! and a flags byte: whether this side seals the link's packets) on
//! stream 0 as soon as the association is up; the other answers PROOF =
//! HMAC-SHA256(secret, label | challenger's HELLO | prover's HELLO | prover
//! rank | challenger rank). The secret never travels, a PROOF cannot be
//! replayed on another association (fresh nonce) or by another rank (ranks
//! are inside the MAC), and neither side's flags can be altered on the way
//! (both HELLOs are under both MACs). On a sealed link (seal.rs: keys from
//! the secret and the published endpoints, decided before the first
//! packet) the peer already proved the secret with every packet that
//! opened; the handshake is kept so that a plain link (`--insecure-lan`,
//! one host) is authenticated too, and both kinds run one code path. The side
//! that checked a PROOF answers ACCEPT, and a rank sends no frame to a peer
//! before that peer's ACCEPT: so a frame from a peer that has not proved
//! the secret is never legitimate, and the receiver needs to hold only a
//! small handshake allowance for it (pump.rs). Auth messages are told apart
//! from frames by their SCTP payload protocol id.

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use wanmpi_transport::PeerId;

/// Payload protocol ids (SCTP PPID) of our four message kinds.
pub const PPID_FRAME: u32 = 0x5741_4e46; // "WANF"
pub const PPID_HELLO: u32 = 0x5741_4e48; // "WANH"
pub const PPID_PROOF: u32 = 0x5741_4e50; // "WANP"
/// "Your PROOF checked out" (one byte: SCTP has no empty messages); the
/// peer may send frames from now on.
pub const PPID_ACCEPT: u32 = 0x5741_4e41; // "WANA"

/// Bytes a peer may send before it proved the secret (frames held for it
/// and pieces of unfinished messages together). A rank of this version
/// sends nothing but HELLO and PROOF (32 bytes each) before ACCEPT, so
/// this only has to be small; past it the association is aborted.
pub const HANDSHAKE_ALLOWANCE: usize = 64 << 10;

pub const NONCE_LEN: usize = 32;
/// HELLO: nonce (32) | flags (1).
pub const HELLO_LEN: usize = NONCE_LEN + 1;
/// The flag by which a side says it seals the link's packets.
pub const FLAG_SEAL: u8 = 1;
/// Version 2: HELLO carries flags, PROOF covers both HELLOs (version 1:
/// the challenger's nonce alone). A version-1 HELLO (no flags byte) is
/// refused naming both versions (pump.rs).
const LABEL: &[u8] = b"wanmpi-sctp-auth-v2";

/// What one message of an association is, from its payload protocol id
/// and length alone (frames are never looked into).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message<'a> {
    Hello(&'a [u8; HELLO_LEN]),
    /// Version 1's HELLO: a nonce without flags.
    HelloV1,
    Proof(&'a [u8]),
    Accept,
    Frame,
    /// A HELLO of another length, or a kind of a later version: ignored.
    Other,
}

/// Reads a message that arrived with payload protocol id `ppid`.
pub fn classify(ppid: u32, msg: &[u8]) -> Message<'_> {
    match ppid {
        PPID_HELLO => match <&[u8; HELLO_LEN]>::try_from(msg) {
            Ok(h) => Message::Hello(h),
            Err(_) if msg.len() == NONCE_LEN => Message::HelloV1,
            Err(_) => Message::Other,
        },
        PPID_PROOF => Message::Proof(msg),
        PPID_ACCEPT => Message::Accept,
        PPID_FRAME => Message::Frame,
        _ => Message::Other,
    }
}

/// Our HELLO to a peer: a fresh nonce and whether the link is sealed.
pub fn hello(sealed: bool) -> [u8; HELLO_LEN] {
    let mut h = [0u8; HELLO_LEN];
    h[..NONCE_LEN].copy_from_slice(&fresh_nonce());
    h[NONCE_LEN] = if sealed { FLAG_SEAL } else { 0 };
    h
}

pub fn fresh_nonce() -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    rand::rngs::OsRng.fill_bytes(&mut n);
    n
}

/// The two HELLOs of one association: the challenger's (whose nonce the
/// proof answers) and the prover's.
pub struct Hellos<'a> {
    pub challenger: &'a [u8; HELLO_LEN],
    pub prover: &'a [u8; HELLO_LEN],
}

fn mac(secret: &[u8; 32], h: &Hellos<'_>, prover: PeerId, challenger: PeerId) -> Hmac<Sha256> {
    // HMAC accepts keys of any length; 32 bytes cannot fail.
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key length");
    m.update(LABEL);
    m.update(h.challenger);
    m.update(h.prover);
    m.update(&prover.to_be_bytes());
    m.update(&challenger.to_be_bytes());
    m
}

/// What `prover` answers to `challenger`'s HELLO.
pub fn proof(secret: &[u8; 32], h: &Hellos<'_>, prover: PeerId, challenger: PeerId) -> [u8; 32] {
    mac(secret, h, prover, challenger).finalize().into_bytes().into()
}

/// Constant-time check of a PROOF received from `prover` for our HELLO.
pub fn verify(secret: &[u8; 32], h: &Hellos<'_>, prover: PeerId, challenger: PeerId, got: &[u8]) -> bool {
    mac(secret, h, prover, challenger).verify_slice(got).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn right_secret_and_ranks_verify_anything_else_fails() {
        let s = [7u8; 32];
        let (c, pr) = (hello(false), hello(false));
        let h = Hellos { challenger: &c, prover: &pr };
        let p = proof(&s, &h, 2, 0);
        assert!(verify(&s, &h, 2, 0, &p));
        assert!(!verify(&[8u8; 32], &h, 2, 0, &p), "wrong secret");
        assert!(!verify(&s, &h, 1, 0, &p), "other prover");
        let other = hello(false);
        assert!(!verify(&s, &Hellos { challenger: &other, prover: &pr }, 2, 0, &p), "other nonce");
        assert!(!verify(&s, &Hellos { challenger: &pr, prover: &c }, 2, 0, &p), "roles swapped");
        assert!(!verify(&s, &h, 2, 0, &p[..31]), "truncated");
        assert_ne!(fresh_nonce(), fresh_nonce());
    }

    #[test]
    fn messages_are_told_apart_by_kind_and_length() {
        let h = hello(true);
        assert_eq!(classify(PPID_HELLO, &h), Message::Hello(&h));
        assert_eq!(classify(PPID_HELLO, &h[..NONCE_LEN]), Message::HelloV1);
        assert_eq!(classify(PPID_HELLO, &[0; HELLO_LEN + 1]), Message::Other);
        assert_eq!(classify(PPID_PROOF, b"xy"), Message::Proof(b"xy"));
        assert_eq!(classify(PPID_ACCEPT, &[1]), Message::Accept);
        assert_eq!(classify(PPID_FRAME, &h), Message::Frame);
        assert_eq!(classify(7, &h), Message::Other);
    }

    #[test]
    fn no_flag_can_be_stripped() {
        let s = [7u8; 32];
        let (asks, not) = (hello(true), hello(false));
        assert_eq!((asks[NONCE_LEN], not[NONCE_LEN]), (FLAG_SEAL, 0));
        let p = proof(&s, &Hellos { challenger: &asks, prover: &not }, 2, 0);
        // The challenger's flag cleared on the way: the prover answered
        // another HELLO than the one the challenger sent.
        let mut stripped = asks;
        stripped[NONCE_LEN] = 0;
        assert!(!verify(&s, &Hellos { challenger: &stripped, prover: &not }, 2, 0, &p));
        assert!(verify(&s, &Hellos { challenger: &asks, prover: &not }, 2, 0, &p));
    }
}
