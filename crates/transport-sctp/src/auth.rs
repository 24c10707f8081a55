//! Proof of the job secret on every association, before any frame of that
//! peer reaches the engine. Each side sends HELLO (a fresh 32-byte nonce) on
//! stream 0 as soon as the association is up; the other answers PROOF =
//! HMAC-SHA256(secret, label | nonce | prover rank | challenger rank). The
//! secret never travels, a PROOF cannot be replayed on another association
//! (fresh nonce) or by another rank (ranks are inside the MAC). The side
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
const LABEL: &[u8] = b"wanmpi-sctp-auth-v1";

pub fn fresh_nonce() -> [u8; NONCE_LEN] {
    let mut n = [0u8; NONCE_LEN];
    rand::rngs::OsRng.fill_bytes(&mut n);
    n
}

fn mac(secret: &[u8; 32], nonce: &[u8], prover: PeerId, challenger: PeerId) -> Hmac<Sha256> {
    // HMAC accepts keys of any length; 32 bytes cannot fail.
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes any key length");
    m.update(LABEL);
    m.update(nonce);
    m.update(&prover.to_be_bytes());
    m.update(&challenger.to_be_bytes());
    m
}

/// What `prover` answers to `challenger`'s nonce.
pub fn proof(secret: &[u8; 32], nonce: &[u8], prover: PeerId, challenger: PeerId) -> [u8; 32] {
    mac(secret, nonce, prover, challenger).finalize().into_bytes().into()
}

/// Constant-time check of a PROOF received from `prover` for our nonce.
pub fn verify(secret: &[u8; 32], nonce: &[u8; NONCE_LEN], prover: PeerId, challenger: PeerId, got: &[u8]) -> bool {
    mac(secret, nonce, prover, challenger).verify_slice(got).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn right_secret_and_ranks_verify_anything_else_fails() {
        let s = [7u8; 32];
        let n = fresh_nonce();
        let p = proof(&s, &n, 2, 0);
        assert!(verify(&s, &n, 2, 0, &p));
        assert!(!verify(&[8u8; 32], &n, 2, 0, &p), "wrong secret");
        assert!(!verify(&s, &n, 1, 0, &p), "other prover");
        assert!(!verify(&s, &fresh_nonce(), 2, 0, &p), "other nonce");
        assert!(!verify(&s, &n, 2, 0, &p[..31]), "truncated");
        assert_ne!(fresh_nonce(), fresh_nonce());
    }
}
