//! Frames up to max_frame arrive whole (usrsctp delivers them in pieces that
//! the transport reassembles per stream), backpressure is WouldBlock and
//! nothing is lost when the receiver catches up, and bad arguments are errors.

mod common;
use common::*;
use std::sync::{Arc, Barrier};
use std::time::Duration;
use wanmpi_transport::{SendStatus, Transport, TransportError};

#[test]
fn max_size_frames_on_interleaved_streams_arrive_whole() {
    let opts = test_opts(4);
    let max = opts.max_frame;
    let done = Arc::new(Barrier::new(2));
    let results = run_ranks(2, opts, move |mut t| {
        let me = t.rank();
        let mut got = vec![];
        if me == 0 {
            for seq in 0..24u32 {
                let ch = (seq % 4) as u16;
                let len = if seq % 3 == 0 { max } else { max / 2 + seq as usize * 1001 };
                send(&mut t, 1, ch, &frame(0, ch, seq, len));
            }
        } else {
            got = recv_n(&mut t, 24, Duration::from_secs(60));
        }
        drain(&mut t);
        done.wait();
        t.shutdown(Duration::from_secs(5)).unwrap();
        got
    });
    let got = &results[1];
    let mut last = [None::<u32>; 4];
    for g in got {
        let seq = seq_of(&g.bytes);
        assert_eq!(g.bytes, frame(0, g.channel, seq, g.bytes.len()), "frame {seq} corrupted");
        assert!(last[g.channel as usize].is_none_or(|l| l < seq), "order on stream {}", g.channel);
        last[g.channel as usize] = Some(seq);
    }
    assert_eq!(got.iter().filter(|g| g.bytes.len() == max).count(), 8);
}

#[test]
fn full_send_buffer_is_wouldblock_and_nothing_is_lost() {
    let mut opts = test_opts(2);
    opts.sndbuf = 512 << 10;
    opts.rcvbuf = 512 << 10;
    opts.max_frame = 64 << 10;
    let gate = Arc::new(Barrier::new(2));
    let total = 200u32;
    let results = run_ranks(2, opts, move |mut t| {
        let me = t.rank();
        let mut got = vec![];
        let mut blocked_at = None;
        if me == 0 {
            // The receiver does not read: the sender must hit WouldBlock.
            let mut seq = 0;
            while seq < total {
                let data = frame(0, 0, seq, 64 << 10);
                match t.try_send(1, 0, &[&data]).unwrap() {
                    SendStatus::Sent => seq += 1,
                    SendStatus::WouldBlock => {
                        blocked_at = Some(seq);
                        break;
                    }
                }
            }
            gate.wait();
            while seq < total {
                send(&mut t, 1, 0, &frame(0, 0, seq, 64 << 10));
                seq += 1;
            }
        } else {
            gate.wait();
            got = recv_n(&mut t, total as usize, Duration::from_secs(60));
        }
        drain(&mut t);
        gate.wait();
        t.shutdown(Duration::from_secs(5)).unwrap();
        (blocked_at, got)
    });
    let blocked_at = results[0].0.expect("sender never saw WouldBlock");
    assert!(blocked_at < total, "blocked after {blocked_at} frames");
    let seqs: Vec<u32> = results[1].1.iter().map(|g| seq_of(&g.bytes)).collect();
    assert_eq!(seqs, (0..total).collect::<Vec<_>>());
    assert!(results[1].1.iter().all(|g| g.bytes == frame(0, 0, seq_of(&g.bytes), 64 << 10)));
}

#[test]
fn bad_arguments_are_errors_not_panics() {
    let opts = test_opts(3);
    let max = opts.max_frame;
    run_ranks(2, opts, move |mut t| {
        assert!(matches!(t.try_send(7, 0, &[b"x"]), Err(TransportError::NoSuchPeer(7))));
        assert!(matches!(t.try_send(0, 3, &[b"x"]), Err(TransportError::NoSuchChannel { channel: 3, channels: 3 })));
        let big = vec![0u8; max + 1];
        assert!(matches!(t.try_send(0, 0, &[&big]), Err(TransportError::FrameTooLarge { .. })));
        assert_eq!(t.caps().channels, 3);
        assert_eq!(t.caps().name, "sctp");
        t.shutdown(Duration::from_secs(5)).unwrap();
    });
}
