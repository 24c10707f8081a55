//! Two ranks in one process (two threads), real shared memory: order per
//! channel, whole frames up to the largest, backpressure, self-sends, errors.

mod common;

use common::{owned, pair, shm_names, Event};
use std::sync::mpsc;
use std::time::Duration;
use wanmpi_bootstrap::{local_kv_world, KeyValue};
use wanmpi_transport_shm::{setup, setup_elsewhere, SendStatus, ShmOptions, Transport, TransportError};

/// Frame `seq` of `channel`: its numbers, then a pattern of a size that
/// sweeps from 0 to `max` (the largest frame included).
fn frame(channel: u16, seq: u32, max: usize) -> Vec<u8> {
    let len = match seq % 7 {
        0 => max,
        1 => 8,
        _ => (seq as usize * 7919 + channel as usize * 104_729) % (max + 1),
    }
    .max(8);
    let mut f = Vec::with_capacity(len);
    f.extend_from_slice(&(channel as u32).to_le_bytes());
    f.extend_from_slice(&seq.to_le_bytes());
    f.extend((8..len).map(|i| (i as u32 ^ seq) as u8));
    f
}

/// Sends `per_channel` frames on each of `channels` channels to the other
/// rank while receiving as many from it, checking order and content; waits
/// on the transport (never spins) when it has nothing to do. With `hold`, it
/// starts (reads nothing) only when told; with `refused`, it tells on its first
/// WouldBlock. Returns how many sends were refused.
fn exchange(
    t: &mut dyn Transport,
    channels: u16,
    per_channel: u32,
    hold: Option<mpsc::Receiver<()>>,
    mut refused_tx: Option<mpsc::Sender<()>>,
) -> u64 {
    let (me, peer) = (t.rank(), 1 - t.rank());
    let max = t.caps().max_frame;
    let total = channels as u64 * per_channel as u64;
    let (mut sent, mut got, mut refused) = (0u64, 0u64, 0u64);
    let mut next_rx = vec![0u32; channels as usize];
    if let Some(h) = hold {
        h.recv().unwrap();
    }
    while sent < total || got < total {
        t.poll_recv(&mut |ev| match owned(ev) {
            Event::Frame(p, ch, bytes) => {
                assert_eq!(p, peer);
                let seq = next_rx[ch as usize];
                assert!(bytes == frame(ch, seq, max), "rank {me}: frame {seq} of channel {ch} differs");
                next_rx[ch as usize] += 1;
                got += 1;
            }
            // The other rank may finish and leave first: only after all its frames.
            Event::Lost(p, r) => assert!(got == total, "rank {me}: lost {p} early: {r}"),
        })
        .unwrap();
        let mut idle = true;
        while sent < total {
            let ch = (sent % channels as u64) as u16;
            let seq = (sent / channels as u64) as u32;
            let f = frame(ch, seq, max);
            let (a, b) = f.split_at(f.len() / 2);
            match t.try_send(peer, ch, &[a, b]).unwrap() {
                SendStatus::Sent => {
                    sent += 1;
                    idle = false;
                }
                SendStatus::WouldBlock => {
                    refused += 1;
                    if let Some(tx) = refused_tx.take() {
                        tx.send(()).unwrap();
                    }
                    break;
                }
            }
        }
        if idle && (got < total || sent < total) {
            t.wait(Duration::from_millis(50)).unwrap();
        }
    }
    refused
}

#[test]
fn thousands_of_frames_on_eight_channels_arrive_whole_in_order_under_backpressure() {
    let opts = ShmOptions { ring_bytes: Some(256 << 10), ..ShmOptions::default() }; // frames up to 64 KiB
    let (mut a, mut b) = pair(&opts);
    assert!(shm_names().is_empty(), "names in /dev/shm: {:?}", shm_names());
    assert_eq!(a.caps().max_frame, 64 << 10);
    // Rank 1 reads nothing until rank 0 has filled the ring and been refused.
    let (tx, rx) = mpsc::channel();
    let h = std::thread::spawn(move || exchange(&mut b, 8, 1000, Some(rx), None));
    let refused_a = exchange(&mut a, 8, 1000, None, Some(tx));
    let refused_b = h.join().unwrap();
    assert!(refused_a > 0, "rank 0 was never refused");
    eprintln!("refused sends: rank 0 {refused_a}, rank 1 {refused_b}");
}

#[test]
fn largest_frames_fill_the_default_ring_and_pass_whole() {
    let opts = ShmOptions::default();
    let (mut a, mut b) = pair(&opts);
    assert_eq!((a.caps().max_frame, a.caps().name), (1 << 20, "shm"));
    let h = std::thread::spawn(move || exchange(&mut b, 3, 100, None, None));
    exchange(&mut a, 3, 100, None, None);
    h.join().unwrap();
}

#[test]
fn self_sends_arrive_and_bad_arguments_are_errors() {
    let opts = ShmOptions { ring_bytes: Some(64 << 10), ..ShmOptions::default() };
    // A job of 4 ranks, 0 and 2 on this host, 1 and 3 each alone elsewhere.
    let mut hs = vec![];
    for mut kv in local_kv_world(4) {
        let o = opts.clone();
        hs.push(std::thread::spawn(move || match kv.rank() {
            0 => Some(setup(&mut kv, &[2, 0], &o).unwrap()),
            2 => Some(setup(&mut kv, &[0, 2], &o).unwrap()),
            _ => setup_elsewhere(&mut kv).map(|()| None).unwrap(),
        }));
    }
    let mut ts: Vec<_> = hs.into_iter().map(|h| h.join().unwrap()).collect();
    let mut a = ts[0].take().unwrap();
    assert_eq!(a.peers().collect::<Vec<_>>(), vec![2]);
    assert_eq!(a.try_send(0, 3, &[b"me", b"!"]).unwrap(), SendStatus::Sent);
    let mut got = vec![];
    a.poll_recv(&mut |ev| got.push(owned(ev))).unwrap();
    assert_eq!(got, vec![Event::Frame(0, 3, b"me!".to_vec())]);
    assert!(matches!(a.try_send(1, 0, &[b"x"]), Err(TransportError::NoSuchPeer(1))));
    assert!(matches!(a.try_send(9, 0, &[b"x"]), Err(TransportError::NoSuchPeer(9))));
    assert!(matches!(a.try_send(2, 64, &[b"x"]), Err(TransportError::NoSuchChannel { .. })));
    let big = vec![0u8; (16 << 10) + 1];
    assert!(matches!(a.try_send(2, 0, &[&big]), Err(TransportError::FrameTooLarge { .. })));
    let near = a.path(2).unwrap();
    assert_eq!(near.is_far(), Some(false));
    assert!(a.path(1).is_none());
}
