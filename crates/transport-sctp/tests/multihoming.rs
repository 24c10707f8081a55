//! Path failover (multihoming in the AF_CONN glue): two ranks with two
//! loopback addresses each stream numbered frames while the primary path is
//! cut in both directions by the fault-injection hook (every datagram of
//! path 0 dropped on both ranks, as a cut cable would; the failover logic
//! only sees unanswered probes). Every frame must arrive exactly once and in
//! order, over the second path, within a bounded time.

mod common;
use common::*;
use std::net::IpAddr;
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use wanmpi_transport::{Incoming, Transport};
use wanmpi_transport_sctp::{Counters, PathCut, SctpOptions};

const FRAMES: u32 = 3000;
const LEN: usize = 1000;
/// Frames per pacing slot and the slot: 3000 frames over 1.5 s.
const BATCH: u32 = 10;
const SLOT: Duration = Duration::from_millis(5);
const PACED: Paced = Paced { frames: FRAMES, len: LEN, batch: BATCH, slot: SLOT };

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn opts(rank: u32, cut: PathCut, copy: bool) -> SctpOptions {
    SctpOptions {
        copy_when_suspected: copy,
        publish_addr: ip(&format!("127.0.0.{}", rank + 1)),
        more_addrs: vec![ip(&format!("127.0.1.{}", rank + 1))],
        fault_cut_path: Some(cut),
        ..test_opts(2)
    }
}

struct RankResult {
    counters: Counters,
    cut: (Instant, Option<Instant>),
    /// When this rank's first switch happened (sampled while streaming).
    first_switch: Option<Instant>,
    /// Receiver only: sequence numbers in delivery order, and arrival times.
    got: Vec<u32>,
    arrivals: Vec<Instant>,
}

fn sample_switch(t: &wanmpi_transport_sctp::SctpTransport, peer: u32, first: &mut Option<Instant>) {
    if first.is_none() {
        let c = t.counters();
        let p = c.peer(peer).unwrap();
        if p.path_switches > 0 {
            *first = Some(p.last_switch.unwrap_or_else(Instant::now));
        }
    }
}

/// Streams FRAMES frames from rank 0 to rank 1 on channel 0 with path 0 cut
/// at `cut`; `tail` keeps both ranks serviced afterwards (to see a return).
fn run(cut: PathCut, tail: Duration, copy: bool) -> Vec<RankResult> {
    let gate = Arc::new(Barrier::new(2));
    run_ranks_with(
        2,
        move |r| opts(r, cut, copy),
        move |mut t| {
            let me = t.rank();
            let other = 1 - me;
            let cut_window = t.fault_cut_window(other).expect("the cut hook is armed");
            let mut res = RankResult { counters: Counters::default(), cut: cut_window, first_switch: None, got: vec![], arrivals: vec![] };
            if me == 0 {
                send_paced(&mut t, PACED, |t, _| sample_switch(t, 1, &mut res.first_switch));
                // Bounded: fails if nothing gets through.
                let deadline = Instant::now() + Duration::from_secs(30);
                while t.flush().unwrap() {
                    assert!(Instant::now() < deadline, "data still unacknowledged 30 s after the cut");
                    sample_switch(&t, 1, &mut res.first_switch);
                    t.wait(Duration::from_millis(5)).unwrap();
                }
            } else {
                (res.got, res.arrivals) = receive_paced(&mut t, PACED, |t| sample_switch(t, 0, &mut res.first_switch));
            }
            let until = Instant::now() + tail;
            while Instant::now() < until {
                t.poll_recv(&mut |_| {}).unwrap();
                sample_switch(&t, other, &mut res.first_switch);
                t.wait(Duration::from_millis(10)).unwrap();
            }
            res.counters = t.counters();
            gate.wait();
            t.shutdown(Duration::from_secs(5)).unwrap();
            res
        },
    )
}

/// The longest pause between two deliveries, and when it began.
fn longest_gap(arrivals: &[Instant]) -> (Duration, Instant) {
    arrivals.windows(2).map(|w| (w[1] - w[0], w[0])).max_by_key(|x| x.0).unwrap()
}

fn check_delivery(results: &[RankResult]) {
    let got = &results[1].got;
    assert_eq!(got.len() as u32, FRAMES);
    assert!(got.iter().copied().eq(0..FRAMES), "frames lost, duplicated or out of order");
}

fn report(what: &str, results: &[RankResult]) -> Duration {
    for (r, res) in results.iter().enumerate() {
        let c = res.counters.peer(1 - r as u32).unwrap();
        let sw = res.first_switch.map(|s| format!("{:.0} ms", s.saturating_duration_since(res.cut.0).as_secs_f64() * 1e3));
        eprintln!(
            "{what}: rank {r}: cut -> first switch {}; {} switches, active path {}",
            sw.unwrap_or("never".into()),
            c.path_switches,
            c.active_path
        );
    }
    let (gap, at) = longest_gap(&results[1].arrivals);
    let cut = results[1].cut.0;
    eprintln!(
        "{what}: longest delivery pause {:.0} ms, starting {:+.0} ms from the cut",
        gap.as_secs_f64() * 1e3,
        (at.saturating_duration_since(cut).as_secs_f64() - cut.saturating_duration_since(at).as_secs_f64()) * 1e3
    );
    for res in results {
        eprintln!("{}", res.counters);
    }
    gap
}

/// With copies off the stream waits for SCTP's retransmission timer
/// (backed off once: ~600 ms); with copies on (the default) the packets sent
/// while path 0's probe is overdue already go over path 1 too.
#[test]
fn primary_cut_fails_over_and_every_frame_arrives_once_in_order() {
    let cut = PathCut { path: 0, from: Duration::from_millis(400), until: None };
    let results = run(cut, Duration::ZERO, false);
    let pause_without_copies = report("permanent cut, no copies", &results);
    check_delivery(&results);
    check_switched(&results, false);
    let results = run(cut, Duration::ZERO, true);
    let pause = report("permanent cut", &results);
    check_delivery(&results);
    check_switched(&results, true);
    eprintln!("longest delivery pause: {pause:?} with copies, {pause_without_copies:?} without");
    assert!(pause_without_copies >= Duration::from_millis(200), "without copies only a T3 retransmission can repair");
    assert!(pause < Duration::from_millis(400) && pause < pause_without_copies, "copies did not shorten the failover");
}

fn check_switched(results: &[RankResult], copies: bool) {
    for (r, res) in results.iter().enumerate() {
        let c = res.counters.peer(1 - r as u32).unwrap();
        assert_eq!(c.paths.len(), 2);
        assert!(c.path_switches >= 1, "rank {r} never switched");
        assert_eq!(c.active_path, 1, "rank {r} is not on the second path");
        assert!(!c.paths[0].up && c.paths[1].up, "rank {r}: path 0 should be down, path 1 up");
        assert!(c.paths[0].cut_drops > 0, "rank {r}: the cut dropped nothing");
        assert!(c.paths[1].datagrams_out > 0 && c.paths[1].datagrams_in > 0, "rank {r}: nothing went over path 1");
        assert_eq!(c.bad_probes, 0);
        // Detection: the first unanswered probe is at most one interval
        // after the cut, then 300 ms (3 x 100 ms); generous for load.
        let took = res.first_switch.unwrap().saturating_duration_since(res.cut.0);
        assert!(took >= Duration::from_millis(250) && took < Duration::from_secs(3), "rank {r}: switch {took:?} after the cut");
        assert_eq!(c.paths[1].copies_out > 0, copies, "rank {r}: copies on path 1");
    }
    let sender = results[0].counters.peer(1).unwrap();
    assert!(sender.paths[1].bytes_out > (FRAMES as u64 * LEN as u64) / 4, "the rest of the stream should go over path 1");
}

#[test]
fn primary_comes_back_and_traffic_returns_to_it() {
    let cut = PathCut { path: 0, from: Duration::from_millis(300), until: Some(Duration::from_millis(1000)) };
    let results = run(cut, Duration::from_millis(800), true);
    report("temporary cut", &results);
    check_delivery(&results);
    for (r, res) in results.iter().enumerate() {
        let c = res.counters.peer(1 - r as u32).unwrap();
        assert!(res.first_switch.is_some(), "rank {r} never left the primary");
        assert_eq!(c.path_switches, 2, "rank {r}: away and back");
        assert_eq!(c.active_path, 0, "rank {r} did not return to the primary");
        assert!(c.paths.iter().all(|p| p.up));
        let back = c.last_switch.unwrap().saturating_duration_since(res.cut.1.unwrap());
        eprintln!("temporary cut: rank {r} back on path 0 {:.0} ms after the repair", back.as_secs_f64() * 1e3);
        assert!(back >= Duration::from_millis(250) && back < Duration::from_secs(3), "rank {r}: returned {back:?} after repair");
    }
}

#[test]
fn peer_with_every_path_dead_is_reported_lost_and_stray_probes_are_dropped() {
    let gate = Arc::new(Barrier::new(2));
    let fast = move |r: u32| SctpOptions {
        publish_addr: ip(&format!("127.0.0.{}", r + 1)),
        more_addrs: vec![ip(&format!("127.0.1.{}", r + 1))],
        ..fast_failure_opts()
    };
    let results = run_ranks_with(2, fast, move |mut t| {
        if t.rank() == 1 {
            // Probe-shaped garbage from a stranger to both addresses.
            let stranger = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            for a in t.local_addrs().unwrap() {
                for i in 0..5u8 {
                    let _ = stranger.send_to(&[0, 0, b'W', b'P', 1, i, 0, 0], a);
                }
            }
        }
        // Both ranks keep pumping: usrsctp's timers are process-wide, and a
        // rank that stops reading while the other ticks loses its peer.
        serve_until(&mut t, Duration::from_millis(1000), || false);
        if t.rank() == 1 {
            let stray = t.counters().stray_probes;
            gate.wait();
            t.simulate_crash();
            return (None, stray, 0);
        }
        gate.wait();
        let start = Instant::now();
        let mut lost = None;
        while lost.is_none() && start.elapsed() < Duration::from_secs(20) {
            t.poll_recv(&mut |ev| {
                if let Incoming::PeerLost { peer, reason } = ev {
                    lost = Some((peer, reason, start.elapsed()));
                }
            })
            .unwrap();
            t.wait(Duration::from_millis(20)).unwrap();
        }
        let c = t.counters();
        eprintln!("{c}");
        // The probes notice in 300-400 ms, SCTP's heartbeats (100 ms, 3
        // retransmissions up to 200 ms apart) after about 0.9 s.
        let p = c.peer(1).unwrap();
        assert!(p.paths.iter().all(|x| !x.up && x.went_down == 1), "every path to the crashed peer should be down");
        (lost, 0, p.path_switches)
    });
    let (lost, _, switches) = &results[0];
    let (peer, reason, took) = lost.clone().expect("no PeerLost within 20 s");
    assert_eq!(peer, 1);
    assert!(reason.contains("lost"), "{reason}");
    assert_eq!(*switches, 0, "all paths dead: nowhere to switch to");
    assert_eq!(results[1].1, 10, "stray probes counted");
    eprintln!("peer with two dead paths reported lost after {took:?}: {reason}");
}
