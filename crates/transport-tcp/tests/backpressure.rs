//! A receiver that does not read makes the sender see WouldBlock; once it
//! reads, every accepted frame arrives, in order.

mod common;
use common::*;
use std::sync::mpsc;
use std::time::Duration;
use wanmpi_transport_tcp::{SendStatus, Transport};

#[test]
fn a_receiver_that_does_not_read_blocks_the_sender_then_everything_arrives() {
    const LEN: usize = 64 * 1024;
    const MORE: u32 = 100;
    let mut ts = world(2);
    let mut rx = ts.pop().unwrap();
    let mut tx = ts.pop().unwrap();
    let (total_tx, total_rx) = mpsc::channel::<u32>();
    let receiver = std::thread::spawn(move || {
        // Do not read until the sender has been blocked.
        let total = total_rx.recv_timeout(Duration::from_secs(60)).expect("sender never blocked");
        let got = pump(&mut rx, vec![], total as usize, Duration::from_secs(60));
        rx.shutdown(Duration::from_secs(10)).unwrap();
        (total, got)
    });
    let mut seq = 0u32;
    // Bounded: loopback buffers hold a few MiB, far below 100k x 64 KiB.
    while seq < 100_000 {
        match tx.try_send(1, 0, &[&make(0, 1, seq, LEN)]).unwrap() {
            SendStatus::Sent => seq += 1,
            SendStatus::WouldBlock => break,
        }
    }
    assert!(seq > 0 && seq < 100_000, "the sender was never blocked ({seq} frames accepted)");
    // Still blocked: nothing more is taken while the receiver sleeps.
    assert_eq!(tx.try_send(1, 0, &[&make(0, 1, seq, LEN)]).unwrap(), SendStatus::WouldBlock);
    let blocked_at = seq;
    total_tx.send(blocked_at + MORE).unwrap();
    let more = (blocked_at..blocked_at + MORE).map(|s| (1, make(0, 1, s, LEN))).collect();
    pump(&mut tx, more, 0, Duration::from_secs(60));
    tx.shutdown(Duration::from_secs(10)).unwrap();
    let (total, got) = receiver.join().unwrap();
    assert_eq!(got.len(), total as usize);
    for (i, (peer, f)) in got.iter().enumerate() {
        assert_eq!(*peer, 0);
        assert_eq!(check(f), (0, 1, i as u32));
    }
    eprintln!("sender blocked after {blocked_at} frames of {LEN} bytes");
}

#[test]
fn a_receiver_that_stops_reading_longer_than_the_silence_is_not_taken_for_a_dead_path() {
    // The kernel answers the sender's zero-window probes for a receiver
    // that does not read: that is not silence, so TCP_USER_TIMEOUT must
    // not drop the connection (no reconnection, nothing lost).
    use wanmpi_bootstrap::local_kv_world;
    use wanmpi_transport_tcp::TcpOptions;
    const LEN: usize = 64 * 1024;
    let silence = Duration::from_millis(500);
    let mut ts: Vec<_> =
        connect_all(local_kv_world(2), |_| SECRET, |_| TcpOptions { silence, ..test_opts() }).into_iter().map(|t| t.expect("setup")).collect();
    let mut rx = ts.pop().unwrap();
    let mut tx = ts.pop().unwrap();
    let mut seq = 0u32;
    while seq < 100_000 && tx.try_send(1, 0, &[&make(0, 1, seq, LEN)]).unwrap() == SendStatus::Sent {
        seq += 1;
    }
    // The receiver reads nothing for 6 x the silence: a set time, not an event.
    let hold = std::time::Instant::now() + 6 * silence;
    while std::time::Instant::now() < hold {
        tx.poll_recv(&mut |ev| panic!("rank 0 got {ev:?}")).unwrap();
        tx.flush().unwrap();
        tx.wait(Duration::from_millis(50)).unwrap();
    }
    let n = seq as usize;
    let reader = std::thread::spawn(move || {
        let got = pump(&mut rx, vec![], n, Duration::from_secs(30));
        (rx, got)
    });
    pump(&mut tx, vec![], 0, Duration::from_secs(30));
    let (rx, got) = reader.join().unwrap();
    assert_eq!(got.len(), n);
    for (i, (_, f)) in got.iter().enumerate() {
        assert_eq!(check(f), (0, 1, i as u32));
    }
    assert_eq!((tx.reconnections(), rx.reconnections()), (0, 0), "a stalled reader was taken for a silent path");
}
