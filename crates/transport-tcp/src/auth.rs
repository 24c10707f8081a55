//! Mutual proof of the job secret on a fresh connection, before any frame.
//!
//! Independent of TCP: the exchange is four fixed-size byte messages, driven
//! either by the sans-IO [`Connector`] / [`Acceptor`] (for nonblocking
//! sockets in an event loop) or by [`connect_blocking`] / [`accept_blocking`]
//! over any `Read + Write`. Any transport with a byte stream or messages can
//! reuse it.
//!
//! ```text
//! connector                                   acceptor
//!   HELLO     = MAGIC | VERSION | flags_c | from rank | to rank | nonce_c   ->
//!          <-  CHALLENGE = nonce_a | flags_a | HMAC(secret, "acceptor" | HELLO | nonce_a | flags_a)
//!   PROOF     = got_c | HMAC(secret, "connector" | HELLO | nonce_a | flags_a | got_c) ->
//!          <-  VERDICT   = ACCEPT | got_a | HMAC(secret, "verdict" | HELLO | nonce_a | flags_a | got_c | got_a)
//!                          (or the connection is closed)
//! ```
//!
//! `got_c` and `got_a` (u64 LE) are the resume points: how many frames each
//! side has delivered from the other since the job began (0 on the first
//! connection). A connection that replaces a lost one (`stream.rs`) resumes
//! each direction from the point the receiver named; both points are under
//! a MAC keyed by the job secret and bound to this exchange's fresh nonces,
//! so nobody without the secret can make a rank skip or repeat frames, and
//! a recorded exchange cannot be replayed onto another connection.
//!
//! A HELLO of another version gets, instead of CHALLENGE, a
//! [`version_notice`] (MAGIC | our version, then the connection closes),
//! so the dialling rank fails at once naming both versions
//! ([`notice_version`]) instead of retrying until its setup timeout.
//!
//! Each side's MAC covers a nonce the *other* side chose fresh, so a recorded
//! exchange cannot be replayed; the role labels differ, so one side's answer
//! can never be reflected back as the other's. The secret never travels.
//!
//! Each side's flags say whether it wants the connection sealed
//! ([`FLAG_SEAL`]); it is sealed if either side wants it, so ranks whose
//! settings differ still agree, and the safer one wins. The flags are under
//! both MACs, so nobody on the way can strip them. A sealed connection's
//! keys ([`crate::seal::Keys`]) come from the secret and the transcript
//! (HELLO, nonce_a, flags_a): fresh for every connection.

use crate::seal::Keys;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::io::{Read, Write};
use thiserror::Error;

type HmacSha256 = Hmac<Sha256>;

const MAGIC: [u8; 4] = *b"WNMP";
/// Version 4: resume points in PROOF and VERDICT, acknowledgement frames
/// (version 3: no reconnection; version 2: AES-256-GCM).
/// The version is in HELLO, under both MACs and in the key derivation's
/// transcript, so a peer of another version is refused at the handshake
/// and can never get as far as records it would read as garbage.
const VERSION: u8 = 4;
const NONCE_LEN: usize = 32;
const MAC_LEN: usize = 32;

/// HELLO: magic (4) | version (1) | flags (1) | from rank u32 LE (4) | to rank u32 LE (4) | nonce (32).
pub const HELLO_LEN: usize = 4 + 1 + 1 + 4 + 4 + NONCE_LEN;
/// CHALLENGE: acceptor nonce (32) | acceptor flags (1) | acceptor MAC (32).
pub const CHALLENGE_LEN: usize = NONCE_LEN + 1 + MAC_LEN;
/// The flag by which a side asks for sealed frames.
pub const FLAG_SEAL: u8 = 1;
/// What the keys are derived from: HELLO | nonce_a | flags_a.
const TRANSCRIPT_LEN: usize = HELLO_LEN + NONCE_LEN + 1;
/// A resume point: frames delivered so far, u64 LE.
const COUNT_LEN: usize = 8;
/// PROOF: connector's resume point (8) | connector MAC (32).
pub const PROOF_LEN: usize = COUNT_LEN + MAC_LEN;
/// VERDICT: accept byte (1) | acceptor's resume point (8) | MAC (32).
pub const VERDICT_LEN: usize = 1 + COUNT_LEN + MAC_LEN;
/// The byte that opens a verdict admitting the connector. A refusal is a
/// closed connection, so a stray learns nothing more.
pub const VERDICT_ACCEPT: u8 = 0xA5;

const LABEL_ACCEPTOR: &[u8] = b"wanmpi-auth-v4 acceptor";
const LABEL_CONNECTOR: &[u8] = b"wanmpi-auth-v4 connector";
const LABEL_VERDICT: &[u8] = b"wanmpi-auth-v4 verdict";

#[derive(Debug, Error)]
pub enum AuthError {
    #[error("not a wanmpi handshake (bad magic)")]
    BadMagic,
    #[error("peer speaks handshake version {0}, this rank version {VERSION}: every rank of a job must run the same wanmpi release")]
    BadVersion(u8),
    #[error("handshake message of {got} bytes, expected {want}")]
    BadLength { got: usize, want: usize },
    #[error("connection meant for rank {to}, this is rank {me}")]
    WrongTarget { to: u32, me: u32 },
    #[error("peer does not know the job secret")]
    BadProof,
    #[error("peer refused the connection")]
    Refused,
    #[error("no randomness for a nonce: {0}")]
    Random(String),
    #[error("I/O during handshake: {0}")]
    Io(#[from] std::io::Error),
}

fn mac(secret: &[u8; 32], label: &[u8], transcript: &[u8; TRANSCRIPT_LEN], counts: &[u64]) -> HmacSha256 {
    // A 32-byte key is always accepted by HMAC, so this cannot fail.
    let mut m = <HmacSha256 as Mac>::new_from_slice(secret).expect("HMAC accepts any key length");
    m.update(label);
    m.update(transcript);
    for c in counts {
        m.update(&c.to_le_bytes());
    }
    m
}

fn count_at(msg: &[u8], at: usize) -> u64 {
    let mut b = [0u8; COUNT_LEN];
    b.copy_from_slice(&msg[at..at + COUNT_LEN]);
    u64::from_le_bytes(b)
}

fn transcript(hello: &[u8; HELLO_LEN], nonce_a: &[u8], flags_a: u8) -> [u8; TRANSCRIPT_LEN] {
    let mut t = [0u8; TRANSCRIPT_LEN];
    t[..HELLO_LEN].copy_from_slice(hello);
    t[HELLO_LEN..HELLO_LEN + NONCE_LEN].copy_from_slice(nonce_a);
    t[TRANSCRIPT_LEN - 1] = flags_a;
    t
}

/// The keys of the connection if either side asked for sealing.
fn agreed_keys(secret: &[u8; 32], t: &[u8; TRANSCRIPT_LEN], connector: bool) -> Option<Keys> {
    let sealed = (t[5] | t[TRANSCRIPT_LEN - 1]) & FLAG_SEAL != 0;
    sealed.then(|| Keys::derive(secret, t, connector))
}

fn nonce() -> Result<[u8; NONCE_LEN], AuthError> {
    let mut n = [0u8; NONCE_LEN];
    getrandom::getrandom(&mut n).map_err(|e| AuthError::Random(e.to_string()))?;
    Ok(n)
}

fn exact<const N: usize>(msg: &[u8]) -> Result<&[u8; N], AuthError> {
    msg.try_into().map_err(|_| AuthError::BadLength { got: msg.len(), want: N })
}

/// What an acceptor sends in place of CHALLENGE to a HELLO of another
/// version: MAGIC | its own version. It then closes the connection.
pub const VERSION_NOTICE_LEN: usize = 5;
// Told apart from a CHALLENGE by its length.
const _: () = assert!(VERSION_NOTICE_LEN < CHALLENGE_LEN);

pub fn version_notice() -> [u8; VERSION_NOTICE_LEN] {
    let mut n = [0u8; VERSION_NOTICE_LEN];
    n[..4].copy_from_slice(&MAGIC);
    n[4] = VERSION;
    n
}

/// What a connector makes of the bytes it got before the acceptor closed
/// while it waited for CHALLENGE: the acceptor's version, when they are a
/// notice of another version than ours. (A real CHALLENGE is longer.)
pub fn notice_version(got: &[u8]) -> Option<AuthError> {
    (got.len() == VERSION_NOTICE_LEN && got[..4] == MAGIC && got[4] != VERSION).then(|| AuthError::BadVersion(got[4]))
}

/// The side that opens the connection and names its rank.
pub struct Connector {
    secret: [u8; 32],
    hello: [u8; HELLO_LEN],
    /// Set by `answer`: what the keys derive from.
    transcript: Option<[u8; TRANSCRIPT_LEN]>,
    /// Set by `answer`: the resume point this side named.
    got: u64,
}

impl Connector {
    /// Draws a fresh nonce for a connection from `my_rank` to `peer_rank`.
    pub fn new(secret: &[u8; 32], my_rank: u32, peer_rank: u32) -> Result<Connector, AuthError> {
        let mut hello = [0u8; HELLO_LEN];
        hello[0..4].copy_from_slice(&MAGIC);
        hello[4] = VERSION;
        hello[6..10].copy_from_slice(&my_rank.to_le_bytes());
        hello[10..14].copy_from_slice(&peer_rank.to_le_bytes());
        hello[14..].copy_from_slice(&nonce()?);
        Ok(Connector { secret: *secret, hello, transcript: None, got: 0 })
    }

    /// Asks for a sealed connection (call before sending HELLO).
    pub fn want_seal(&mut self, yes: bool) {
        self.hello[5] = if yes { FLAG_SEAL } else { 0 };
    }

    /// The first message to send.
    pub fn hello(&self) -> &[u8; HELLO_LEN] {
        &self.hello
    }

    /// Checks the acceptor's proof and returns this side's proof to send,
    /// naming `got`: the frames this side has delivered from the acceptor.
    pub fn answer(&mut self, challenge: &[u8], got: u64) -> Result<[u8; PROOF_LEN], AuthError> {
        let c = exact::<CHALLENGE_LEN>(challenge)?;
        let t = transcript(&self.hello, &c[..NONCE_LEN], c[NONCE_LEN]);
        mac(&self.secret, LABEL_ACCEPTOR, &t, &[]).verify_slice(&c[NONCE_LEN + 1..]).map_err(|_| AuthError::BadProof)?;
        self.transcript = Some(t);
        self.got = got;
        let mut out = [0u8; PROOF_LEN];
        out[..COUNT_LEN].copy_from_slice(&got.to_le_bytes());
        out[COUNT_LEN..].copy_from_slice(&mac(&self.secret, LABEL_CONNECTOR, &t, &[got]).finalize().into_bytes());
        Ok(out)
    }

    /// Reads the acceptor's verdict; on acceptance, the connection's keys
    /// if it is to be sealed, and the acceptor's resume point (the frames
    /// it has delivered from this side).
    pub fn check_verdict(&self, verdict: &[u8]) -> Result<(Option<Keys>, u64), AuthError> {
        let t = self.transcript.as_ref().ok_or(AuthError::BadProof)?;
        let v = exact::<VERDICT_LEN>(verdict)?;
        if v[0] != VERDICT_ACCEPT {
            return Err(AuthError::Refused);
        }
        let got_a = count_at(v, 1);
        mac(&self.secret, LABEL_VERDICT, t, &[self.got, got_a]).verify_slice(&v[1 + COUNT_LEN..]).map_err(|_| AuthError::BadProof)?;
        Ok((agreed_keys(&self.secret, t, true), got_a))
    }
}

/// The side that accepts a connection and learns who is calling.
pub struct Acceptor {
    secret: [u8; 32],
    my_rank: u32,
    state: Option<[u8; TRANSCRIPT_LEN]>,
    /// The connector's resume point, once its proof is checked.
    got_c: Option<u64>,
}

impl Acceptor {
    pub fn new(secret: &[u8; 32], my_rank: u32) -> Acceptor {
        Acceptor { secret: *secret, my_rank, state: None, got_c: None }
    }

    /// Parses HELLO; returns the rank the connector *claims* (not yet proven)
    /// and the challenge to send. `want_seal` says, for the claimed rank,
    /// whether this side asks for a sealed connection.
    pub fn challenge(&mut self, hello: &[u8], want_seal: impl FnOnce(u32) -> bool) -> Result<(u32, [u8; CHALLENGE_LEN]), AuthError> {
        let h = exact::<HELLO_LEN>(hello)?;
        if h[0..4] != MAGIC {
            return Err(AuthError::BadMagic);
        }
        if h[4] != VERSION {
            return Err(AuthError::BadVersion(h[4]));
        }
        let from = u32::from_le_bytes([h[6], h[7], h[8], h[9]]);
        let to = u32::from_le_bytes([h[10], h[11], h[12], h[13]]);
        if to != self.my_rank {
            return Err(AuthError::WrongTarget { to, me: self.my_rank });
        }
        let nonce_a = nonce()?;
        let flags_a = if want_seal(from) { FLAG_SEAL } else { 0 };
        let t = transcript(h, &nonce_a, flags_a);
        let mut out = [0u8; CHALLENGE_LEN];
        out[..NONCE_LEN].copy_from_slice(&nonce_a);
        out[NONCE_LEN] = flags_a;
        out[NONCE_LEN + 1..].copy_from_slice(&mac(&self.secret, LABEL_ACCEPTOR, &t, &[]).finalize().into_bytes());
        self.state = Some(t);
        Ok((from, out))
    }

    /// Checks the connector's proof; returns its rank, now authenticated,
    /// the connection's keys if it is to be sealed, and the connector's
    /// resume point. The caller then sends [`Acceptor::verdict`] or closes
    /// the connection.
    pub fn verify(&mut self, proof: &[u8]) -> Result<(u32, Option<Keys>, u64), AuthError> {
        let t = self.state.as_ref().ok_or(AuthError::BadProof)?;
        let p = exact::<PROOF_LEN>(proof).map_err(|_| AuthError::BadProof)?;
        let got_c = count_at(p, 0);
        mac(&self.secret, LABEL_CONNECTOR, t, &[got_c]).verify_slice(&p[COUNT_LEN..]).map_err(|_| AuthError::BadProof)?;
        self.got_c = Some(got_c);
        Ok((u32::from_le_bytes([t[6], t[7], t[8], t[9]]), agreed_keys(&self.secret, t, false), got_c))
    }

    /// The verdict admitting the (verified) connector, naming `got`: the
    /// frames this side has delivered from it. None before `verify` passed.
    pub fn verdict(&self, got: u64) -> Option<[u8; VERDICT_LEN]> {
        let (t, got_c) = (self.state.as_ref()?, self.got_c?);
        let mut v = [0u8; VERDICT_LEN];
        v[0] = VERDICT_ACCEPT;
        v[1..1 + COUNT_LEN].copy_from_slice(&got.to_le_bytes());
        v[1 + COUNT_LEN..].copy_from_slice(&mac(&self.secret, LABEL_VERDICT, t, &[got_c, got]).finalize().into_bytes());
        Some(v)
    }
}

/// Runs the connector's side over a blocking stream (set its timeouts
/// first), not asking for sealing; returns the keys if the acceptor did.
pub fn connect_blocking<S: Read + Write>(s: &mut S, secret: &[u8; 32], my_rank: u32, peer_rank: u32) -> Result<Option<Keys>, AuthError> {
    let mut c = Connector::new(secret, my_rank, peer_rank)?;
    s.write_all(c.hello())?;
    let mut chal = [0u8; CHALLENGE_LEN];
    let mut got = 0;
    while got < CHALLENGE_LEN {
        match s.read(&mut chal[got..]) {
            Ok(0) => return Err(notice_version(&chal[..got]).unwrap_or(AuthError::Refused)),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    s.write_all(&c.answer(&chal, 0)?)?;
    let mut verdict = [0u8; VERDICT_LEN];
    match s.read_exact(&mut verdict) {
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Err(AuthError::Refused),
        other => other?,
    }
    c.check_verdict(&verdict).map(|(keys, _)| keys)
}

/// Runs the acceptor's side over a blocking stream, not asking for
/// sealing. `admit` sees the proven rank and decides (e.g. refuses a rank
/// already connected). Returns the rank and the keys if the connector
/// asked for sealing.
pub fn accept_blocking<S: Read + Write>(
    s: &mut S,
    secret: &[u8; 32],
    my_rank: u32,
    admit: impl FnOnce(u32) -> bool,
) -> Result<(u32, Option<Keys>), AuthError> {
    let mut a = Acceptor::new(secret, my_rank);
    let mut hello = [0u8; HELLO_LEN];
    s.read_exact(&mut hello)?;
    let (_, chal) = match a.challenge(&hello, |_| false) {
        Err(e @ AuthError::BadVersion(_)) => {
            // Best effort: the caller learns our version and stops at once.
            let _ = s.write_all(&version_notice());
            return Err(e);
        }
        other => other?,
    };
    s.write_all(&chal)?;
    let mut proof = [0u8; PROOF_LEN];
    s.read_exact(&mut proof)?;
    let (rank, keys, _) = a.verify(&proof)?;
    if !admit(rank) {
        return Err(AuthError::Refused);
    }
    s.write_all(&a.verdict(0).ok_or(AuthError::BadProof)?)?;
    Ok((rank, keys))
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: [u8; 32] = [7; 32];

    /// (the connector's answer, the acceptor's verdict on it if there was one)
    type Outcome = (Result<[u8; PROOF_LEN], AuthError>, Option<Result<(u32, Option<Keys>, u64), AuthError>>);

    fn run(conn_secret: [u8; 32], acc_secret: [u8; 32]) -> Outcome {
        let mut c = Connector::new(&conn_secret, 2, 5).unwrap();
        let mut a = Acceptor::new(&acc_secret, 5);
        let (claimed, chal) = a.challenge(c.hello(), |_| false).unwrap();
        assert_eq!(claimed, 2);
        match c.answer(&chal, 0) {
            Ok(proof) => (Ok(proof), Some(a.verify(&proof))),
            Err(e) => (Err(e), None),
        }
    }

    #[test]
    fn same_secret_authenticates_both_ways() {
        let (proof, verified) = run(S, S);
        assert!(proof.is_ok());
        assert_eq!(verified.unwrap().unwrap().0, 2);
    }

    #[test]
    fn wrong_secret_is_caught_by_the_connector_first() {
        // The acceptor proves itself first, so a connector with the wrong
        // secret (or talking to a stray acceptor) stops before answering.
        let (proof, _) = run([8; 32], S);
        assert!(matches!(proof, Err(AuthError::BadProof)));
    }

    #[test]
    fn acceptor_rejects_a_forged_proof_and_garbage() {
        let c = Connector::new(&S, 1, 5).unwrap();
        let mut a = Acceptor::new(&S, 5);
        a.challenge(c.hello(), |_| false).unwrap();
        assert!(matches!(a.verify(&[0u8; PROOF_LEN]), Err(AuthError::BadProof)));
        assert!(matches!(a.verify(&[0u8; 3]), Err(AuthError::BadProof)));
        let mut b = Acceptor::new(&S, 5);
        assert!(matches!(b.challenge(&[b'G'; HELLO_LEN], |_| false), Err(AuthError::BadMagic)));
        assert!(matches!(b.challenge(&[0u8; 10], |_| false), Err(AuthError::BadLength { got: 10, .. })));
        let mut wrong_version = *c.hello();
        wrong_version[4] = 9;
        assert!(matches!(b.challenge(&wrong_version, |_| false), Err(AuthError::BadVersion(9))));
    }

    #[test]
    fn a_rank_of_the_previous_version_is_refused_naming_both_versions() {
        // Version 2 sealed with AES-256-GCM: its records would not open here,
        // so it must not get past HELLO.
        let c = Connector::new(&S, 1, 5).unwrap();
        let mut v2 = *c.hello();
        v2[4] = 2;
        let e = Acceptor::new(&S, 5).challenge(&v2, |_| true).expect_err("version 2 refused");
        assert!(matches!(e, AuthError::BadVersion(2)));
        let msg = e.to_string();
        assert!(msg.contains("version 2") && msg.contains(&format!("version {VERSION}")), "{msg}");
    }

    #[test]
    fn a_version_notice_is_told_from_a_challenge() {
        let mut other = version_notice();
        assert!(notice_version(&other).is_none(), "our own version is no mismatch");
        other[4] = 9;
        let e = notice_version(&other).expect("another version");
        let msg = e.to_string();
        assert!(msg.contains("version 9") && msg.contains(&format!("version {VERSION}")), "{msg}");
        assert!(notice_version(&other[..4]).is_none() && notice_version(&[0xEE; VERSION_NOTICE_LEN]).is_none());
    }

    #[test]
    fn blocking_sides_of_different_versions_both_fail_naming_both() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let acceptor = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            accept_blocking(&mut s, &S, 5, |_| true).map(|_| ())
        });
        // A dialler of version 9: its HELLO, then whatever comes back.
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let mut hello = *Connector::new(&S, 1, 5).unwrap().hello();
        hello[4] = 9;
        s.write_all(&hello).unwrap();
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap();
        assert_eq!(got, version_notice(), "the acceptor says its version and closes");
        assert!(matches!(acceptor.join().unwrap(), Err(AuthError::BadVersion(9))));
        // The dialler of our version facing an acceptor of another.
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let other = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            let mut h = [0u8; HELLO_LEN];
            s.read_exact(&mut h).unwrap();
            let mut n = version_notice();
            n[4] = 5;
            s.write_all(&n).unwrap();
        });
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(5))).unwrap();
        let e = connect_blocking(&mut s, &S, 1, 5).err().expect("version 5 refused");
        other.join().unwrap();
        assert!(matches!(e, AuthError::BadVersion(5)), "{e}");
    }

    #[test]
    fn resume_points_arrive_and_cannot_be_altered() {
        let mut c = Connector::new(&S, 1, 5).unwrap();
        let mut a = Acceptor::new(&S, 5);
        let (_, chal) = a.challenge(c.hello(), |_| false).unwrap();
        let proof = c.answer(&chal, 1234).unwrap();
        // A stranger on the way changes the connector's point: refused.
        let mut forged = proof;
        forged[0] ^= 1;
        assert!(matches!(Acceptor::verify(&mut a, &forged), Err(AuthError::BadProof)));
        let (rank, _, got_c) = a.verify(&proof).unwrap();
        assert_eq!((rank, got_c), (1, 1234));
        let v = a.verdict(99).unwrap();
        assert_eq!(c.check_verdict(&v).unwrap().1, 99);
        for i in 0..VERDICT_LEN {
            let mut bad = v;
            bad[i] ^= 0x40;
            assert!(c.check_verdict(&bad).is_err(), "altered verdict byte {i} accepted");
        }
        // A verdict of another exchange (other nonces) does not carry over.
        let mut c2 = Connector::new(&S, 1, 5).unwrap();
        let mut a2 = Acceptor::new(&S, 5);
        let (_, chal2) = a2.challenge(c2.hello(), |_| false).unwrap();
        a2.verify(&c2.answer(&chal2, 1234).unwrap()).unwrap();
        assert!(c2.check_verdict(&v).is_err(), "a recorded verdict replayed");
        assert!(Acceptor::new(&S, 5).verdict(0).is_none(), "no verdict before a proof");
    }

    #[test]
    fn a_connection_meant_for_another_rank_is_refused() {
        let c = Connector::new(&S, 1, 4).unwrap();
        let mut a = Acceptor::new(&S, 5);
        assert!(matches!(a.challenge(c.hello(), |_| false), Err(AuthError::WrongTarget { to: 4, me: 5 })));
    }

    #[test]
    fn a_proof_does_not_carry_over_to_another_challenge() {
        // Replaying a proof recorded on one connection fails on the next,
        // because the acceptor's nonce differs.
        let mut c = Connector::new(&S, 1, 5).unwrap();
        let mut a1 = Acceptor::new(&S, 5);
        let (_, chal1) = a1.challenge(c.hello(), |_| false).unwrap();
        let proof1 = c.answer(&chal1, 0).unwrap();
        let mut a2 = Acceptor::new(&S, 5);
        a2.challenge(c.hello(), |_| false).unwrap();
        assert!(matches!(a2.verify(&proof1), Err(AuthError::BadProof)));
        // The acceptor's MAC cannot be reflected as the connector's proof.
        assert!(matches!(a1.verify(&chal1[NONCE_LEN + 1..]), Err(AuthError::BadProof)));
    }

    /// Runs a whole exchange with each side's wish; the keys both ended with.
    fn sealed_with(conn_wish: bool, acc_wish: bool) -> (Option<Keys>, Option<Keys>) {
        let mut c = Connector::new(&S, 1, 5).unwrap();
        c.want_seal(conn_wish);
        let mut a = Acceptor::new(&S, 5);
        let (_, chal) = a
            .challenge(c.hello(), |claimed| {
                assert_eq!(claimed, 1);
                acc_wish
            })
            .unwrap();
        let (_, acc_keys, _) = a.verify(&c.answer(&chal, 0).unwrap()).unwrap();
        (c.check_verdict(&a.verdict(0).unwrap()).unwrap().0, acc_keys)
    }

    #[test]
    fn either_side_asking_seals_and_both_derive_matching_keys() {
        let (c, a) = sealed_with(false, false);
        assert!(c.is_none() && a.is_none());
        for (cw, aw) in [(true, false), (false, true), (true, true)] {
            let (Some(mut c), Some(mut a)) = sealed_with(cw, aw) else { panic!("not sealed for wishes {cw} {aw}") };
            let mut rec = b"hello".to_vec();
            let tag = c.sealer.seal(b"", &mut rec);
            rec.extend_from_slice(&tag);
            assert_eq!(a.opener.open_within(b"", &mut rec, 0..), Ok(5));
            assert_eq!(&rec[..5], b"hello");
        }
        // A new connection has new keys: a record of one does not open on another.
        let (Some(mut c1), _) = sealed_with(true, true) else { panic!() };
        let (_, Some(mut a2)) = sealed_with(true, true) else { panic!() };
        let mut rec = b"x".to_vec();
        let tag = c1.sealer.seal(b"", &mut rec);
        rec.extend_from_slice(&tag);
        assert!(a2.opener.open_within(b"", &mut rec, 0..).is_err());
    }

    #[test]
    fn the_flags_cannot_be_stripped_on_the_way() {
        let mut c = Connector::new(&S, 1, 5).unwrap();
        c.want_seal(true);
        let mut hello = *c.hello();
        hello[5] = 0; // a stripping middlebox
        let mut a = Acceptor::new(&S, 5);
        let (_, mut chal) = a.challenge(&hello, |_| false).unwrap();
        assert!(matches!(c.answer(&chal, 0), Err(AuthError::BadProof)));
        // Nor the acceptor's.
        let mut c = Connector::new(&S, 1, 5).unwrap();
        let mut a = Acceptor::new(&S, 5);
        (_, chal) = a.challenge(c.hello(), |_| true).unwrap();
        chal[NONCE_LEN] = 0;
        assert!(matches!(c.answer(&chal, 0), Err(AuthError::BadProof)));
    }

    #[test]
    fn blocking_helpers_over_a_socket_pair() {
        let (mut x, mut y) = std::os::unix::net::UnixStream::pair().unwrap();
        let t = std::thread::spawn(move || accept_blocking(&mut y, &S, 3, |r| r == 1));
        connect_blocking(&mut x, &S, 1, 3).unwrap();
        assert_eq!(t.join().unwrap().unwrap().0, 1);

        let (mut x, mut y) = std::os::unix::net::UnixStream::pair().unwrap();
        let t = std::thread::spawn(move || {
            let r = accept_blocking(&mut y, &S, 3, |_| false);
            drop(y);
            r
        });
        assert!(matches!(connect_blocking(&mut x, &S, 1, 3), Err(AuthError::Refused)));
        assert!(matches!(t.join().unwrap(), Err(AuthError::Refused)));
    }
}
