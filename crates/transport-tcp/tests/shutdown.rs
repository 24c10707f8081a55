//! Shutdown pushes out what try_send accepted before closing, so nothing in
//! flight is lost, and it is bounded when a peer never answers.

mod common;
use common::*;
use std::time::{Duration, Instant};
use wanmpi_transport_tcp::{SendStatus, Transport};

#[test]
fn shutdown_right_after_sending_loses_nothing() {
    const N: u32 = 200;
    const LEN: usize = 256 * 1024;
    let mut ts = world(2);
    let mut rx = ts.pop().unwrap();
    let mut tx = ts.pop().unwrap();
    let receiver = std::thread::spawn(move || {
        let got = pump(&mut rx, vec![], N as usize, Duration::from_secs(60));
        rx.shutdown(Duration::from_secs(10)).unwrap();
        got
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    for seq in 0..N {
        let f = make(0, 1, seq, LEN);
        // No flush here on purpose: the last frame's tail may sit in the
        // residual, and shutdown must push it out.
        while tx.try_send(1, 0, &[&f]).unwrap() == SendStatus::WouldBlock {
            assert!(Instant::now() < deadline, "sender stuck");
            tx.wait(Duration::from_millis(50)).unwrap();
            // Acknowledgements arrive through poll_recv and free the
            // retransmit buffer (as the runtime's progress loop does).
            tx.poll_recv(&mut |ev| panic!("nothing is sent to rank 0: {ev:?}")).unwrap();
        }
    }
    tx.shutdown(Duration::from_secs(20)).expect("shutdown flushed everything");
    let got = receiver.join().unwrap();
    assert_eq!(got.len(), N as usize);
    for (i, (_, f)) in got.iter().enumerate() {
        assert_eq!(check(f), (0, 1, i as u32));
    }
}

#[test]
fn shutdown_is_bounded_when_the_peer_never_closes() {
    let mut ts = world(2);
    let _silent = ts.pop().unwrap();
    let mut a = ts.pop().unwrap();
    let t0 = Instant::now();
    a.shutdown(Duration::from_millis(300)).unwrap();
    let took = t0.elapsed();
    assert!(took >= Duration::from_millis(250) && took < Duration::from_secs(5), "took {took:?}");
    // After shutdown the peer is gone for sending.
    assert!(a.try_send(1, 0, &[b"late"]).is_err());
}
