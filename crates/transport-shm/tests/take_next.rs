//! `take_next_from`, the express receive's way in: frames offered one by
//! one in order, a refused frame left for `poll_recv`, and a writer waiting
//! for space still woken when the reader takes frames this way.

mod common;

use common::pair;
use std::time::{Duration, Instant};
use wanmpi_transport_shm::{Incoming, SendStatus, ShmOptions, Transport};

#[test]
fn frames_are_offered_in_order_and_a_refused_one_stays() {
    let (mut a, mut b) = pair(&ShmOptions::default());
    for i in 0..3u8 {
        assert_eq!(a.try_send(1, 0, &[&[i; 5]]).unwrap(), SendStatus::Sent);
    }
    assert_eq!(b.take_next_from(0, &mut |f| f == [0; 5]), Some(true));
    // Refused: offered again, then delivered by poll_recv in its place.
    let mut seen = vec![];
    assert_eq!(
        b.take_next_from(0, &mut |f| {
            seen.push(f.to_vec());
            false
        }),
        Some(false)
    );
    assert_eq!(seen, vec![vec![1; 5]]);
    let mut rest = vec![];
    b.poll_recv(&mut |ev| {
        if let Incoming::Frame { peer, bytes, .. } = ev {
            rest.push((peer, bytes[0]));
        }
    })
    .unwrap();
    assert_eq!(rest, vec![(0, 1), (0, 2)]);
    assert_eq!(b.take_next_from(0, &mut |_| true), Some(false), "nothing left");
    // Itself and ranks it does not serve: not offered.
    assert_eq!(b.take_next_from(1, &mut |_| true), None);
    assert_eq!(b.take_next_from(7, &mut |_| true), None);
}

#[test]
fn a_writer_blocked_on_a_full_ring_wakes_when_frames_are_taken() {
    let opts = ShmOptions { ring_bytes: Some(64 << 10), ..ShmOptions::default() };
    let (mut a, mut b) = pair(&opts);
    let chunk = vec![1u8; 16 << 10];
    let mut sent = 0;
    while a.try_send(1, 0, &[&chunk]).unwrap() == SendStatus::Sent {
        sent += 1;
    }
    assert!(sent >= 2);
    let h = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        let mut n = 0;
        let deadline = Instant::now() + Duration::from_secs(5);
        while n < sent && Instant::now() < deadline {
            if b.take_next_from(0, &mut |_| true) == Some(true) {
                n += 1;
            } else {
                b.wait(Duration::from_millis(100)).unwrap();
            }
        }
        b
    });
    let start = Instant::now();
    while a.try_send(1, 0, &[&chunk]).unwrap() == SendStatus::WouldBlock {
        assert!(start.elapsed() < Duration::from_secs(5));
        a.wait(Duration::from_secs(5)).unwrap();
    }
    assert!(start.elapsed() < Duration::from_secs(1), "took {:?}", start.elapsed());
    let _b = h.join().unwrap();
}
