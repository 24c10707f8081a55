//! Sealed frames on an association: every frame between hosts travels as
//! one SCTP message encrypted and authenticated with AES-128-GCM (the
//! job's shared cipher, `wanmpi_bootstrap::seal`), its 16-byte tag after it.
//!
//! Keys: HKDF-SHA256 over the job secret, salted with both HELLOs of the
//! association (each side's fresh nonce and flags, lower rank's first) and
//! both ranks; one key per direction, new for every association.
//!
//! Nonces: SCTP delivers a stream's messages in order, but messages of
//! different streams in any order relative to each other. So each
//! direction keeps a counter per stream, and a message's nonce is (stream,
//! its number on that stream): nothing extra on the wire, and the receiver
//! expects exactly the next number of the message's stream. A message
//! altered, forged, replayed, dropped or moved to another stream fails to
//! open. The counter advances only once usrsctp took the message whole (a
//! refused message never left, so sealing the next one under the same
//! number reveals nothing).

use crate::auth::HELLO_LEN;
use wanmpi_bootstrap::seal::{derive_pair, nonce, Key, TAG_LEN};
use wanmpi_transport::PeerId;

/// The HKDF label: the protocol, its version and the cipher.
const INFO: &[u8] = b"wanmpi-sctp-v2 message keys AES-128-GCM";

/// A message that did not open: which one.
#[derive(Debug, PartialEq, Eq)]
pub struct OpenError {
    pub stream: u16,
    /// Its number on the stream (0 = the stream's first frame).
    pub message: u64,
}

/// Both directions of one association, with their per-stream counters.
pub struct StreamKeys {
    send: Key,
    recv: Key,
    sent: Vec<u64>,
    received: Vec<u64>,
}

impl StreamKeys {
    /// The keys of the association between `me` and `peer`, from each
    /// side's HELLO.
    pub fn derive(secret: &[u8; 32], me: PeerId, my_hello: &[u8; HELLO_LEN], peer: PeerId, peer_hello: &[u8; HELLO_LEN], streams: u16) -> StreamKeys {
        let lower_first = me < peer;
        let (lo, hi) = if lower_first { (my_hello, peer_hello) } else { (peer_hello, my_hello) };
        let mut salt = Vec::with_capacity(2 * HELLO_LEN + 8);
        salt.extend_from_slice(lo);
        salt.extend_from_slice(hi);
        salt.extend_from_slice(&me.min(peer).to_be_bytes());
        salt.extend_from_slice(&me.max(peer).to_be_bytes());
        let (lo_to_hi, hi_to_lo) = derive_pair(secret, &salt, INFO);
        let (send, recv) = if lower_first { (lo_to_hi, hi_to_lo) } else { (hi_to_lo, lo_to_hi) };
        let n = usize::from(streams);
        StreamKeys { send, recv, sent: vec![0; n], received: vec![0; n] }
    }

    /// Seals `msg` in place as the next message of `stream` and appends
    /// its tag. Call [`StreamKeys::sent`] once the message is gone.
    pub fn seal(&self, stream: u16, msg: &mut Vec<u8>) {
        let k = self.sent[usize::from(stream)];
        let tag = self.send.seal(nonce(u32::from(stream), k), &[], msg);
        msg.extend_from_slice(&tag);
    }

    /// The message sealed last on `stream` left: the next gets a new number.
    pub fn sent(&mut self, stream: u16) {
        self.sent[usize::from(stream)] += 1;
    }

    /// Opens `msg`, the next message of `stream`, in place: on success it
    /// holds the plaintext.
    pub fn open(&mut self, stream: u16, msg: &mut Vec<u8>) -> Result<(), OpenError> {
        let Some(k) = self.received.get_mut(usize::from(stream)) else { return Err(OpenError { stream, message: 0 }) };
        let fail = OpenError { stream, message: *k };
        if msg.len() < TAG_LEN {
            return Err(fail);
        }
        let len = self.recv.open_within(nonce(u32::from(stream), *k), &[], msg, 0..).map_err(|_| fail)?;
        msg.truncate(len);
        *k += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::auth::hello;

    const H0: [u8; HELLO_LEN] = [0xa0; HELLO_LEN];
    const H3: [u8; HELLO_LEN] = [0x3b; HELLO_LEN];

    fn pair() -> (StreamKeys, StreamKeys) {
        (StreamKeys::derive(&[9; 32], 0, &H0, 3, &H3, 4), StreamKeys::derive(&[9; 32], 3, &H3, 0, &H0, 4))
    }

    fn sealed(k: &mut StreamKeys, stream: u16, plain: &[u8]) -> Vec<u8> {
        let mut m = plain.to_vec();
        k.seal(stream, &mut m);
        k.sent(stream);
        m
    }

    #[test]
    fn streams_open_in_their_own_order_whatever_the_interleaving() {
        let (mut a, mut b) = pair();
        let s1: Vec<_> = (0..3).map(|i| sealed(&mut a, 1, format!("one {i}").as_bytes())).collect();
        let s2: Vec<_> = (0..3).map(|i| sealed(&mut a, 2, format!("two {i}").as_bytes())).collect();
        assert!(!s1[0].windows(3).any(|w| w == b"one"), "plaintext visible");
        assert_eq!(s1[0].len(), 5 + TAG_LEN);
        // Stream 2's messages overtake stream 1's: each stream still opens.
        for (stream, m) in [(2, &s2[0]), (1, &s1[0]), (2, &s2[1]), (2, &s2[2]), (1, &s1[1]), (1, &s1[2])] {
            let mut m = m.clone();
            b.open(stream, &mut m).unwrap();
            assert!(m.starts_with(if stream == 1 { b"one" } else { b"two" }));
        }
        // And the other direction has its own key.
        let mut back = sealed(&mut b, 1, b"back");
        let mut reflected = back.clone();
        assert!(b.open(1, &mut reflected).is_err(), "our own message reflected back");
        a.open(1, &mut back).unwrap();
        assert_eq!(back, b"back");
    }

    #[test]
    fn replayed_dropped_moved_flipped_or_short_messages_fail() {
        let (mut a, _) = pair();
        let m0 = sealed(&mut a, 1, b"first message");
        let m1 = sealed(&mut a, 1, b"second message");
        let fresh = || pair().1;
        let mut b = fresh();
        b.open(1, &mut m0.clone()).unwrap();
        assert_eq!(b.open(1, &mut m0.clone()), Err(OpenError { stream: 1, message: 1 }), "replayed");
        assert_eq!(fresh().open(1, &mut m1.clone()), Err(OpenError { stream: 1, message: 0 }), "the one before dropped");
        assert!(fresh().open(2, &mut m0.clone()).is_err(), "moved to another stream");
        assert!(fresh().open(9, &mut m0.clone()).is_err(), "a stream that does not exist");
        for i in 0..m0.len() {
            let mut t = m0.clone();
            t[i] ^= 0x01;
            assert!(fresh().open(1, &mut t).is_err(), "flipped byte {i}");
        }
        assert!(fresh().open(1, &mut m0[..TAG_LEN - 1].to_vec()).is_err());
        // A failure does not advance the stream: the real message still opens.
        let mut b = fresh();
        assert!(b.open(1, &mut m1.clone()).is_err());
        b.open(1, &mut m0.clone()).unwrap();
    }

    #[test]
    fn another_association_or_secret_has_other_keys() {
        let (mut a, _) = pair();
        let m = sealed(&mut a, 0, b"x");
        let (h0, h3) = (hello(true), hello(true));
        assert!(StreamKeys::derive(&[9; 32], 3, &h3, 0, &h0, 4).open(0, &mut m.clone()).is_err(), "fresh HELLOs, fresh keys");
        let (h0, h3) = (hello(false), hello(false));
        let mut a = StreamKeys::derive(&[9; 32], 0, &h0, 3, &h3, 1);
        let m = sealed(&mut a, 0, b"x");
        assert!(StreamKeys::derive(&[8; 32], 3, &h3, 0, &h0, 1).open(0, &mut m.clone()).is_err());
        assert!(StreamKeys::derive(&[9; 32], 3, &h3, 0, &h0, 1).open(0, &mut m.clone()).is_ok());
    }
}
