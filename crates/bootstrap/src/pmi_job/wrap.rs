//! The job secret through Slurm's key/value space, wrapped: Slurm's PMI
//! traffic (kvs-put values, carried between the nodes' slurmstepd daemons
//! at a fence) is not encrypted, so the secret must not pass in clear.
//!
//! Every rank puts a fresh X25519 public key. Rank 0, after that fence,
//! wraps the secret for each other rank under a key of their own: an
//! ephemeral X25519 key of rank 0's per rank, the shared value expanded by
//! HKDF (salted with both public keys), AES-128-GCM. One more fence, and
//! each rank opens its wrap. Someone who only reads Slurm's traffic learns
//! nothing; someone who can change it (root or the slurm user on a node)
//! could put their own key in place of a rank's: that remains (docs/launcher.md).

use ring::agreement::{self, EphemeralPrivateKey, UnparsedPublicKey, X25519};
use ring::rand::SystemRandom;

use crate::seal::{self, TAG_LEN};

/// Bytes of an X25519 public key.
const PUBLIC_LEN: usize = 32;
const LABEL: &[u8] = b"wanmpi pmi2 secret wrap 1";

/// One rank's half of the exchange.
pub struct Keypair {
    private: EphemeralPrivateKey,
    public: [u8; PUBLIC_LEN],
}

fn fail(what: &str) -> String {
    format!("wrapping the job secret: {what}")
}

impl Keypair {
    pub fn new() -> Result<Keypair, String> {
        let rng = SystemRandom::new();
        let private = EphemeralPrivateKey::generate(&X25519, &rng).map_err(|_| fail("no randomness for a key"))?;
        let public = private.compute_public_key().map_err(|_| fail("no public key"))?;
        let public: [u8; PUBLIC_LEN] = public.as_ref().try_into().map_err(|_| fail("an X25519 key is 32 bytes"))?;
        Ok(Keypair { private, public })
    }

    /// What this rank puts: its public key, hex.
    pub fn public_hex(&self) -> String {
        crate::auth::hex(&self.public)
    }

    /// Opens the wrap rank 0 made for this rank (`wrap`'s output).
    pub fn open(self, wrapped_hex: &str) -> Result<[u8; 32], String> {
        let bytes = crate::auth::unhex(wrapped_hex).ok_or_else(|| fail("the wrap is not hex"))?;
        if bytes.len() != PUBLIC_LEN + 32 + TAG_LEN {
            return Err(fail("the wrap has the wrong length"));
        }
        let (theirs, sealed) = bytes.split_at(PUBLIC_LEN);
        let key = agree(self.private, theirs, theirs, &self.public)?;
        let mut buf = sealed.to_vec();
        let n = key
            .open_within(seal::nonce(0, 0), b"", &mut buf, 0..)
            .map_err(|_| fail("the wrap did not open (altered in Slurm's key/value space?)"))?;
        buf[..n].try_into().map_err(|_| fail("the secret is not 32 bytes"))
    }
}

/// Rank 0's wrap of `secret` for the rank whose public key is `peer_hex`.
pub fn wrap(secret: &[u8; 32], peer_hex: &str) -> Result<String, String> {
    let peer = crate::auth::unhex(peer_hex).filter(|b| b.len() == PUBLIC_LEN).ok_or_else(|| fail("a rank's public key is not 32 bytes of hex"))?;
    let mine = Keypair::new()?;
    let key = agree(mine.private, &peer, &mine.public, &peer)?;
    let mut out = mine.public.to_vec();
    let mut body = secret.to_vec();
    let tag = key.seal(seal::nonce(0, 0), b"", &mut body);
    out.extend_from_slice(&body);
    out.extend_from_slice(&tag);
    Ok(crate::auth::hex(&out))
}

/// The wrap key from our private key and `peer`'s public key; the salt
/// is rank 0's public key then the rank's, the same on both sides.
fn agree(private: EphemeralPrivateKey, peer: &[u8], zero_public: &[u8], rank_public: &[u8]) -> Result<seal::Key, String> {
    let peer = UnparsedPublicKey::new(&X25519, peer);
    let shared: [u8; 32] = agreement::agree_ephemeral(private, &peer, |k| k.try_into().map_err(|_| fail("an X25519 value is 32 bytes")))
        .map_err(|_| fail("a bad public key"))??;
    let salt = [zero_public, rank_public].concat();
    Ok(seal::derive_pair(&shared, &salt, LABEL).0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrapped_secret_opens_only_for_its_rank() {
        let secret = [0x42u8; 32];
        let (a, b) = (Keypair::new().unwrap(), Keypair::new().unwrap());
        let for_a = wrap(&secret, &a.public_hex()).unwrap();
        assert!(!for_a.contains("42424242"), "the secret in clear: {for_a}");
        let for_b = wrap(&secret, &b.public_hex()).unwrap();
        assert!(b.open(&for_a).is_err(), "another rank's wrap");
        assert_eq!(a.open(&for_a).unwrap(), secret);
        drop(for_b);
        let c = Keypair::new().unwrap();
        let mut bad = crate::auth::unhex(&wrap(&secret, &c.public_hex()).unwrap()).unwrap();
        bad[40] ^= 1;
        assert!(c.open(&crate::auth::hex(&bad)).is_err(), "a flipped byte");
    }
}
