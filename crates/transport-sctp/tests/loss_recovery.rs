//! Loss recovery of the patched usrsctp (patches/usrsctp/): the first packet
//! of a 3-packet message (too few behind it for three gap reports) is
//! repaired by the early retransmit / probe, a packet lost in the middle of
//! a long message by fast retransmit, and a lost last packet by the
//! tail-loss probe, none waiting for the T3 timer.
//!
//! Deterministic: the lost datagram is chosen by position (the n-th that
//! carries new DATA, the n-th that carries a message's last fragment), not
//! drawn, and loopback does not reorder. The RTO is 1 s here, so a repair
//! that needed a T3 expiry could not come in under a second; usrsctp's T3
//! counter is process-wide, which is why this file holds a single test.
//! Skipped when the build links Debian's libusrsctp (no probe there).

mod common;
use common::*;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use wanmpi_transport::Transport;
use wanmpi_transport_sctp::{SctpOptions, SctpTransport};

const WARMUPS: u32 = 5;
const SHORT: usize = 4000; // 3 packets at MTU 1500
const LONG: usize = 200_000; // about 140 packets at MTU 1500
/// New-DATA datagrams of rank 0: one per warm-up, then the short message's first.
const SHORT_LOSS: u32 = WARMUPS + 1;
/// ... then the short message's 3, then 60 into the first long message.
const MID_LOSS: u32 = WARMUPS + 3 + 60;
/// Message ends of rank 0: the warm-ups, the short and the first long
/// message, then this one.
const TAIL_LOSS: u32 = WARMUPS + 3;

fn opts(rank: u32) -> SctpOptions {
    SctpOptions {
        path_mtu: 1500,
        rto_min_ms: 1000,
        rto_initial_ms: 1000,
        drop_data_nth: if rank == 0 { vec![SHORT_LOSS, MID_LOSS] } else { vec![] },
        drop_end_nth: if rank == 0 { vec![TAIL_LOSS] } else { vec![] },
        ..test_opts(2)
    }
}

/// What rank 0 saw for one long message: time until rank 1's reply, T3
/// expiries and tail-loss probes during it (process-wide), its own
/// retransmitted chunks and injected drops.
#[derive(Debug, Clone, Copy)]
struct Repair {
    took: Duration,
    t3: u32,
    probes: u32,
    retransmitted: u64,
    dropped: u64,
}

fn snapshot(t: &SctpTransport) -> (u32, u32, u64, u64) {
    let c = t.counters();
    let p = c.peer(1).expect("peer 1");
    (c.stack.t3_timeouts, c.stack.tlp_probes, p.retransmitted_chunks, p.dropped_injected)
}

fn message(t: &mut SctpTransport, seq: u32, len: usize) -> Repair {
    let before = snapshot(t);
    let start = Instant::now();
    send(t, 1, 0, &frame(0, 0, seq, len));
    let reply = recv_n(t, 1, Duration::from_secs(10));
    let took = start.elapsed();
    assert_eq!(reply.len(), 1, "one reply per message");
    assert_eq!(seq_of(&reply[0].bytes), seq, "rank 1 acknowledged another message");
    let after = snapshot(t);
    Repair { took, t3: after.0 - before.0, probes: after.1 - before.1, retransmitted: after.2 - before.2, dropped: after.3 - before.3 }
}

#[test]
fn losses_are_repaired_without_a_t3_expiry() {
    if !usrsctp_sys::PATCHED {
        eprintln!("skipped: this build links Debian's libusrsctp (run scripts/build-usrsctp)");
        return;
    }
    // Neither rank shuts down before the other has all it waits for.
    let done = Arc::new(Barrier::new(2));
    let results = run_ranks_with(2, opts, move |mut t| {
        let me = t.rank();
        let mut out = vec![];
        if me == 0 {
            // Round trips that give usrsctp an RTT (and so a probe timeout).
            for i in 0..WARMUPS {
                send(&mut t, 1, 0, &frame(0, 0, i, 100));
                recv_n(&mut t, 1, Duration::from_secs(10));
            }
            out.push(message(&mut t, 99, SHORT));
            out.push(message(&mut t, 100, LONG));
            out.push(message(&mut t, 101, LONG));
        } else {
            // Echo a short frame for every frame received, with its sequence number.
            let mut echoed = 0;
            while echoed < WARMUPS + 3 {
                for g in recv_n(&mut t, 1, Duration::from_secs(10)) {
                    assert_eq!(g.bytes, frame(0, g.channel, seq_of(&g.bytes), g.bytes.len()), "frame corrupted");
                    send(&mut t, 0, 0, &frame(1, 0, seq_of(&g.bytes), 16));
                    echoed += 1;
                }
            }
        }
        drain(&mut t);
        done.wait();
        let stats = t.counters().to_string();
        t.shutdown(Duration::from_secs(5)).unwrap();
        (out, stats)
    });
    let (repairs, stats) = &results[0];
    eprintln!("{stats}");
    let (short, mid, tail) = (repairs[0], repairs[1], repairs[2]);
    eprintln!("first of 3 lost: {short:?}\nlost in the middle: {mid:?}\nlost at the end: {tail:?}");

    assert_eq!(short.dropped, 1, "the hook must drop exactly the first packet of the short message");
    assert!(short.retransmitted >= 1, "the lost chunk was never sent again");
    assert_eq!(short.t3, 0, "a loss with two packets behind it waited for the T3 timer");
    assert!(short.probes >= 1, "no early retransmit / probe was sent");
    assert!(short.took < Duration::from_millis(300), "repair took {:?} (RTO 1 s)", short.took);

    assert_eq!(mid.dropped, 1, "the hook must drop exactly one datagram of the first message");
    assert!(mid.retransmitted >= 1, "the lost chunk was never sent again");
    assert_eq!(mid.t3, 0, "a loss in the middle of a long message waited for the T3 timer");
    assert!(mid.took < Duration::from_millis(500), "mid-message repair took {:?} (RTO 1 s)", mid.took);

    assert_eq!(tail.dropped, 1, "the hook must drop exactly the last packet of the second message");
    assert!(tail.retransmitted >= 1, "the lost last chunk was never sent again");
    assert_eq!(tail.t3, 0, "a lost last packet waited for the T3 timer");
    assert!(tail.probes >= 1, "no tail-loss probe was sent");
    // The probe timeout is 2 SRTT, at least 20 ms (loopback: the floor),
    // checked on usrsctp's 10 ms tick.
    assert!(tail.took < Duration::from_millis(300), "tail repair took {:?} (RTO 1 s)", tail.took);
}
