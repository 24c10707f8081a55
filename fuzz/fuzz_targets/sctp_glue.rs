//! sctp's glue (crates/transport-sctp): what it reads from the network
//! before usrsctp does. Any bytes as a sealed datagram never open, and an
//! honest one with the input xored in opens only if nothing changed; the
//! input sealed opens back to itself, once. Any bytes as an endpoint, a
//! path probe, an association message (HELLO, PROOF...) or a notification
//! never panic; what parses re-encodes to the same.
#![no_main]
use libfuzzer_sys::fuzz_target;
use wanmpi_transport_sctp::fuzzing::{classify, derive, hello, is_glue, notification, proof, verify, Endpoint, Hellos, Message, Probe, OVERHEAD};

const SECRET: [u8; 32] = [0x5c; 32];

fuzz_target!(|data: &[u8]| {
    // Hostile datagram, to keys that never seal anything here (keys that
    // do would show the fuzzer their datagrams through the comparisons
    // below, and a datagram of an earlier run would open: a replay across
    // runs, not a forgery).
    let (_, mut hostile) = derive(&SECRET, 1, &[3; 16], 0, &[4; 16]);
    assert!(hostile.open(&mut data.to_vec()).is_err(), "a datagram made without the key opened");

    let (s0, _) = derive(&SECRET, 0, &[1; 16], 1, &[2; 16]);
    let (_, mut o1) = derive(&SECRET, 1, &[2; 16], 0, &[1; 16]);

    // The input sealed, altered by itself, and intact.
    let honest = s0.seal_to_vec(data);
    assert_eq!(honest.len(), data.len() + OVERHEAD);
    let mut altered = honest.clone();
    for (b, x) in altered.iter_mut().zip(data) {
        *b ^= x;
    }
    let changed = altered != honest;
    if o1.open(&mut altered).is_ok() {
        assert!(!changed, "an altered datagram opened");
    }
    if changed {
        let mut d = honest.clone();
        assert_eq!(o1.open(&mut d).map(|p| p.to_vec()), Ok(data.to_vec()));
    }
    assert!(o1.open(&mut honest.clone()).is_err(), "a datagram opened twice");

    let _ = is_glue(data);
    if let Ok(p) = Probe::decode(data) {
        assert_eq!(&p.encode()[..], data);
    }
    let _ = notification(data);
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(e) = Endpoint::parse(1, s) {
            assert_eq!(Endpoint::parse(1, &e.format()).ok(), Some(e));
        }
    }

    // An association message: payload protocol id, then the message.
    if data.len() >= 4 {
        let ppid = u32::from_ne_bytes([data[0], data[1], data[2], data[3]]);
        let mine = hello(true);
        match classify(ppid, &data[4..]) {
            Message::Hello(theirs) => {
                let _ = proof(&SECRET, &Hellos { challenger: theirs, prover: &mine }, 0, 1);
            }
            Message::Proof(got) => {
                let theirs = [0u8; wanmpi_transport_sctp::fuzzing::HELLO_LEN];
                assert!(!verify(&SECRET, &Hellos { challenger: &mine, prover: &theirs }, 1, 0, got), "a proof made without the secret");
            }
            _ => {}
        }
    }
});
