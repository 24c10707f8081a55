//! Proof of the job secret, both ways, without the secret on the wire.
//!
//! The server sends a random nonce; the client answers with
//! HMAC-SHA256(secret, "client|<server nonce>|<rank>") and its own nonce; the
//! server answers with HMAC-SHA256(secret, "server|<client nonce>|<rank>").
//! So a stray process cannot join a job, and a rank cannot be fooled by a
//! stray server.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// Who computes the proof: the roles are part of the MAC input so that one
/// side's answer can never be replayed as the other's.
#[derive(Debug, Clone, Copy)]
pub enum Role {
    Client,
    Server,
}

impl Role {
    fn label(self) -> &'static str {
        match self {
            Role::Client => "client",
            Role::Server => "server",
        }
    }
}

fn mac(secret: &[u8; 32], role: Role, nonce_hex: &str, rank: u32) -> HmacSha256 {
    // new_from_slice only fails for key lengths HMAC cannot take; 32 is fine.
    let mut m = <HmacSha256 as Mac>::new_from_slice(secret).expect("HMAC takes a 32-byte key");
    m.update(format!("wanmpi-kv|{}|{}|{}", role.label(), nonce_hex, rank).as_bytes());
    m
}

/// The proof as hex digits.
pub fn prove(secret: &[u8; 32], role: Role, nonce_hex: &str, rank: u32) -> String {
    hex(&mac(secret, role, nonce_hex, rank).finalize().into_bytes())
}

/// Checks a proof in constant time.
pub fn verify(secret: &[u8; 32], role: Role, nonce_hex: &str, rank: u32, proof_hex: &str) -> bool {
    match unhex(proof_hex) {
        Some(bytes) => mac(secret, role, nonce_hex, rank).verify_slice(&bytes).is_ok(),
        None => false,
    }
}

/// A 32-byte key for `label` from `secret` (HMAC-SHA256 as a PRF): both
/// ends of a port's handshake derive their joint key from the port's
/// secret and both nonces, so the key never travels.
pub fn derive(secret: &[u8; 32], label: &str) -> [u8; 32] {
    let mut m = <HmacSha256 as Mac>::new_from_slice(secret).expect("HMAC takes a 32-byte key");
    m.update(b"wanmpi-derive|");
    m.update(label.as_bytes());
    m.finalize().into_bytes().into()
}

/// 16 fresh random bytes as hex.
pub fn nonce() -> Result<String, getrandom::Error> {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b)?;
    Ok(hex(&b))
}

pub(crate) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub(crate) fn unhex(s: &str) -> Option<Vec<u8>> {
    if s.len() & 1 == 1 || !s.is_ascii() {
        return None;
    }
    (0..s.len() / 2).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proof_depends_on_secret_role_nonce_and_rank() {
        let s = [7u8; 32];
        let p = prove(&s, Role::Client, "abcd", 3);
        assert!(verify(&s, Role::Client, "abcd", 3, &p));
        assert!(!verify(&[8u8; 32], Role::Client, "abcd", 3, &p));
        assert!(!verify(&s, Role::Server, "abcd", 3, &p));
        assert!(!verify(&s, Role::Client, "abce", 3, &p));
        assert!(!verify(&s, Role::Client, "abcd", 4, &p));
        assert!(!verify(&s, Role::Client, "abcd", 3, "zz"));
        assert!(!verify(&s, Role::Client, "abcd", 3, ""));
    }

    #[test]
    fn nonces_differ() {
        assert_ne!(nonce().unwrap(), nonce().unwrap());
    }
}
