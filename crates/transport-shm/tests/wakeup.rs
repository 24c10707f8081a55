//! A sleeping rank wakes promptly: in `wait`, and on the raw readiness fd the
//! runtime polls; a writer blocked on a full ring wakes when it drains.

mod common;

use common::pair;
use std::sync::mpsc;
use std::time::{Duration, Instant};
use wanmpi_transport_shm::{Incoming, SendStatus, ShmOptions, Transport};

fn frames(t: &mut dyn Transport) -> usize {
    let mut n = 0;
    t.poll_recv(&mut |ev| {
        if let Incoming::Frame { .. } = ev {
            n += 1;
        }
    })
    .unwrap();
    n
}

/// Waits until `t` holds a frame, through `sleep`; returns how long it took.
fn until_frame(t: &mut dyn Transport, mut sleep: impl FnMut(&mut dyn Transport)) -> Duration {
    let start = Instant::now();
    while frames(t) == 0 {
        assert!(start.elapsed() < Duration::from_secs(5), "no frame within 5 s");
        sleep(t);
    }
    start.elapsed()
}

#[test]
fn a_reader_in_wait_wakes_when_the_writer_sends() {
    let (mut a, mut b) = pair(&ShmOptions::default());
    assert_eq!(frames(&mut b), 0);
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || {
        // Let the reader fall asleep first; then time from the send on.
        rx.recv().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(a.try_send(1, 5, &[b"wake up"]).unwrap(), SendStatus::Sent);
        (Instant::now(), a)
    });
    tx.send(()).unwrap();
    let mut woke = None;
    let took = until_frame(&mut b, |t| {
        t.wait(Duration::from_secs(5)).unwrap();
        woke.get_or_insert_with(Instant::now);
    });
    let (sent_at, _a) = h.join().unwrap();
    let latency = woke.unwrap().saturating_duration_since(sent_at);
    assert!(took < Duration::from_secs(1) && latency < Duration::from_millis(200), "took {took:?}, woke {latency:?} after the send");
}

#[test]
fn the_readiness_fd_becomes_readable_when_a_frame_arrives() {
    let (mut a, mut b) = pair(&ShmOptions::default());
    assert_eq!(frames(&mut b), 0); // leaves b armed, as the runtime's last progress does
    let fd = b.readiness_fd().unwrap();
    let h = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(100));
        a.try_send(1, 0, &[b"x"]).unwrap();
        a
    });
    let mut polls = 0;
    let took = until_frame(&mut b, |_| {
        polls += 1;
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one live pollfd.
        unsafe { libc::poll(&mut p, 1, 5000) };
    });
    let _a = h.join().unwrap();
    assert!(took < Duration::from_secs(1), "took {took:?}");
    // After the frame is taken the fd is quiet again: polling it does not return at once.
    let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
    // SAFETY: one live pollfd.
    assert_eq!(unsafe { libc::poll(&mut p, 1, 50) }, 0, "fd still readable after {polls} polls");
}

#[test]
fn a_writer_blocked_on_a_full_ring_wakes_when_the_reader_drains() {
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
        while n < sent {
            n += frames(&mut b);
            b.wait(Duration::from_millis(100)).unwrap();
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

#[test]
fn a_send_to_oneself_makes_the_readiness_fd_readable() {
    let (mut a, _b) = pair(&ShmOptions::default());
    assert_eq!(frames(&mut a), 0);
    a.try_send(0, 0, &[b"to me"]).unwrap();
    let mut p = libc::pollfd { fd: a.readiness_fd().unwrap(), events: libc::POLLIN, revents: 0 };
    // SAFETY: one live pollfd.
    assert_eq!(unsafe { libc::poll(&mut p, 1, 1000) }, 1);
    assert_eq!(frames(&mut a), 1);
    // SAFETY: as above.
    assert_eq!(unsafe { libc::poll(&mut p, 1, 0) }, 0, "fd still readable");
}

#[test]
fn with_arm_after_the_fd_wakes_only_once_the_reader_polled_idle_that_often() {
    let opts = ShmOptions { arm_after: 3, ..ShmOptions::default() };
    let (mut a, mut b) = pair(&opts);
    let fd = b.readiness_fd().unwrap();
    let readable = |ms| {
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one live pollfd.
        unsafe { libc::poll(&mut p, 1, ms) == 1 }
    };
    // Two empty polls: not armed, a send does not ring.
    assert_eq!(frames(&mut b) + frames(&mut b), 0);
    a.try_send(1, 0, &[b"quiet"]).unwrap();
    assert!(!readable(0));
    assert_eq!(frames(&mut b), 1);
    for _ in 0..3 {
        assert_eq!(frames(&mut b), 0);
    }
    a.try_send(1, 0, &[b"loud"]).unwrap();
    assert!(readable(1000));
    assert_eq!(frames(&mut b), 1);
}
