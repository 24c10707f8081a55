//! Teardown: `shutdown` ends as soon as every association is closed or can
//! lose nothing more (SHUTDOWN-ACK-SENT), and never cuts data that is not
//! yet acknowledged.

mod common;
use common::*;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use wanmpi_transport::{Incoming, Transport};
use wanmpi_transport_sctp::SctpOptions;

/// SCTP chunk types of SHUTDOWN ACK and SHUTDOWN COMPLETE (RFC 4960
/// sections 3.3.9 and 3.3.13).
const SHUTDOWN_ACK: u8 = 8;
const SHUTDOWN_COMPLETE: u8 = 14;
const TIMEOUT: Duration = Duration::from_secs(10);

/// Both ranks shut down at once, so their SHUTDOWNs cross and both
/// associations reach SHUTDOWN-ACK-SENT: every byte both ways is
/// acknowledged. Rank 0's SHUTDOWN ACK and SHUTDOWN COMPLETE are lost (the
/// hook drops every one); rank 0 closes on rank 1's SHUTDOWN ACK and is
/// gone. Rank 1 must not wait its full timeout for a SHUTDOWN COMPLETE
/// that cannot come (before: exactly 10 s).
#[test]
fn a_lost_shutdown_complete_does_not_hold_up_the_peer() {
    let gate = Arc::new(Barrier::new(2));
    let results = run_ranks_with(
        2,
        |r| SctpOptions { drop_chunks: if r == 0 { vec![SHUTDOWN_ACK, SHUTDOWN_COMPLETE] } else { vec![] }, ..test_opts(2) },
        move |mut t| {
            let me = t.rank();
            if me == 0 {
                for i in 0..20 {
                    send(&mut t, 1, (i % 2) as u16, &frame(0, (i % 2) as u16, i, 3000));
                }
                drain(&mut t);
            }
            let got = if me == 1 { recv_n(&mut t, 20, Duration::from_secs(10)) } else { vec![] };
            gate.wait();
            let start = Instant::now();
            t.shutdown(TIMEOUT).unwrap();
            let took = start.elapsed();
            let dropped = t.counters().peers.iter().map(|c| c.dropped_injected).sum::<u64>();
            (got.len(), took, dropped)
        },
    );
    let (_, took0, dropped) = results[0];
    let (got, took1, _) = results[1];
    eprintln!("rank 0 shutdown {took0:?} ({dropped} datagrams dropped), rank 1 {took1:?}");
    assert_eq!(got, 20);
    assert!(dropped >= 1, "the hook dropped nothing: the test tests nothing");
    assert!(took0 < Duration::from_secs(3), "rank 0 waited {took0:?}");
    assert!(took1 < Duration::from_secs(3), "rank 1 waited {took1:?} for a SHUTDOWN COMPLETE that cannot come");
}

/// Rank 0 sends under 10% loss and shuts down at once, while its data is
/// still being repaired; rank 1 shuts down at the same moment without
/// reading. Neither may cut the association before every frame is
/// acknowledged: rank 1 finds all of them, in order, after its shutdown.
#[test]
fn shutdown_under_loss_never_cuts_unacknowledged_data() {
    const N: u32 = 300;
    let gate = Arc::new(Barrier::new(2));
    let results = run_ranks_with(
        2,
        |r| SctpOptions { drop_rate: if r == 0 { 0.1 } else { 0.0 }, drop_seed: 7, rto_min_ms: 50, ..test_opts(4) },
        move |mut t| {
            let me = t.rank();
            gate.wait();
            if me == 0 {
                for i in 0..N {
                    send(&mut t, 1, (i % 4) as u16, &frame(0, (i % 4) as u16, i, 2000));
                }
            }
            let start = Instant::now();
            t.shutdown(TIMEOUT).unwrap();
            let took = start.elapsed();
            let mut got = vec![];
            t.poll_recv(&mut |ev| match ev {
                Incoming::Frame { channel, bytes, .. } => got.push((channel, bytes.to_vec())),
                Incoming::PeerLost { .. } => {}
            })
            .unwrap();
            (got, took)
        },
    );
    let (got, took) = &results[1];
    eprintln!("shutdown under loss: rank 0 {:?}, rank 1 {took:?}", results[0].1);
    assert_eq!(got.len(), N as usize, "frames cut by the shutdown");
    let mut next = [0u32; 4];
    for (ch, bytes) in got {
        let seq = seq_of(bytes);
        assert_eq!(seq % 4, u32::from(*ch));
        assert!(seq >= next[*ch as usize], "out of order on stream {ch}");
        next[*ch as usize] = seq + 1;
        assert_eq!(bytes, &frame(0, *ch, seq, 2000));
    }
    assert!(results.iter().all(|(_, t)| *t < TIMEOUT), "a shutdown ran into its timeout");
}
