//! Any bytes as the other side of tcp's handshake (crates/transport-tcp,
//! `auth.rs`): a hostile connector's HELLO and PROOF to our acceptor, a
//! hostile acceptor's CHALLENGE and VERDICT (with its resume point) to our
//! connector, a version notice. Nothing panics, nothing but an honest peer is admitted; an
//! honest exchange with bytes of the input xored into one message fails
//! unless the xor changed nothing.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wanmpi_transport_tcp::auth::{notice_version, Acceptor, Connector};

const SECRET: [u8; 32] = [0x17; 32];

/// `msg` with `mask` xored over its start.
fn xored(msg: &[u8], mask: &[u8]) -> Vec<u8> {
    let mut m = msg.to_vec();
    for (b, x) in m.iter_mut().zip(mask) {
        *b ^= x;
    }
    m
}

fuzz_target!(|data: &[u8]| {
    let (head, rest) = data.split_at(data.len().min(1));
    let cut = usize::from(head.first().copied().unwrap_or(0)).min(rest.len());
    let (a, b) = rest.split_at(cut);
    let _ = notice_version(data);

    // A hostile connector: HELLO `a`, then PROOF `b`.
    let mut acc = Acceptor::new(&SECRET, 0);
    if acc.challenge(a, |_| true).is_ok() {
        assert!(acc.verify(b).is_err(), "a proof made without the secret was accepted");
    }

    // A hostile acceptor: CHALLENGE `a`, then VERDICT `b`.
    let Ok(mut con) = Connector::new(&SECRET, 1, 0) else { return };
    if con.answer(a, 0).is_ok() {
        panic!("a challenge made without the secret was answered");
    }

    // An honest exchange with one message altered by the input.
    let Ok(mut con) = Connector::new(&SECRET, 1, 0) else { return };
    con.want_seal(head.first().is_some_and(|h| h & 1 == 1));
    let mut acc = Acceptor::new(&SECRET, 0);
    let which = head.first().map_or(0, |h| (h >> 1) % 3);
    let altered = |msg: &[u8], k: u8| if which == k { xored(msg, rest) } else { msg.to_vec() };
    let orig = con.hello().to_vec();
    let hello = altered(&orig, 0);
    let mut changed = hello != orig;
    let Ok((from, challenge)) = acc.challenge(&hello, |_| true) else { return };
    assert!(changed || from == 1);
    let c = altered(&challenge, 1);
    changed |= c[..] != challenge[..];
    let Ok(proof) = con.answer(&c, 7) else { return };
    let p = altered(&proof, 2);
    changed |= p[..] != proof[..];
    if let Ok((_, _, got_c)) = acc.verify(&p) {
        assert!(!changed, "an altered handshake verified");
        assert_eq!(got_c, 7, "the resume point came through");
        // A hostile acceptor's verdict `b`: refused unless it is the honest one.
        let honest = acc.verdict(9).expect("verified");
        if let Ok((_, got_a)) = con.check_verdict(b) {
            assert_eq!(b, &honest[..], "a verdict made without the secret was accepted");
            assert_eq!(got_a, 9);
        }
    }
});
