//! Connections made by whichever side can: a rank whose listener nobody
//! can reach (its published addresses lead nowhere, as behind a firewall
//! that lets nothing in) is still connected, by dialling out; two ranks
//! that dial each other at the same moment keep one connection between
//! them and lose or repeat nothing; and a pair with no path at all fails
//! within the path timeout with an error naming both ranks and every
//! candidate tried. Real sockets on loopback.

mod common;
use common::*;
use std::time::{Duration, Instant};
use wanmpi_bootstrap::{local_kv_world, Candidates};
use wanmpi_transport_tcp::{TcpOptions, TcpTransport, Transport};

/// An address no dial reaches and no packet leaves the machine for: the
/// kernel refuses a TCP connection to the broadcast address at once. (A
/// documentation address went out of the machine, where a middlebox may
/// answer for it and turn "no path" into a handshake that never ends.)
const NOWHERE: &str = "255.255.255.255";

/// Options of a rank whose published addresses all lead nowhere: its
/// listener is on loopback, its candidates say otherwise.
fn unreachable(opts: TcpOptions) -> TcpOptions {
    TcpOptions { publish_addr: Some(NOWHERE.into()), candidates: Some(Candidates::parse(&format!("p={NOWHERE}")).unwrap()), ..opts }
}

/// Every rank sends `n` frames to every other and receives theirs, checked.
fn exchange(ts: Vec<TcpTransport>, n: u32) -> Vec<TcpTransport> {
    let size = ts.len() as u32;
    let handles: Vec<_> = ts
        .into_iter()
        .map(|mut t| {
            std::thread::spawn(move || {
                let me = t.rank();
                let out: Vec<_> = (0..n)
                    .flat_map(|s| (0..size).filter(move |&p| p != me).map(move |p| (p, make(me, p, s, 12 + (s as usize * 37) % 3000))))
                    .collect();
                let got = pump(&mut t, out, (n * (size - 1)) as usize, Duration::from_secs(30));
                let mut next = vec![0u32; size as usize];
                for (peer, f) in got {
                    let (src, dst, seq) = check(&f);
                    assert_eq!((src, dst), (peer, me));
                    assert_eq!(seq, next[src as usize], "rank {me}: from {src}: lost, repeated or out of order");
                    next[src as usize] += 1;
                }
                t
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().expect("rank")).collect()
}

#[test]
fn a_rank_nobody_can_dial_is_connected_by_dialling_out() {
    // Rank 0's dials lead nowhere; rank 1 dials rank 0 after its delay.
    let started = Instant::now();
    let ts: Vec<TcpTransport> = connect_all(local_kv_world(2), |_| SECRET, |r| if r == 1 { unreachable(test_opts()) } else { test_opts() })
        .into_iter()
        .map(|t| t.expect("setup"))
        .collect();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(5), "setup took {took:?}");
    let path0 = ts[0].path_to(1).expect("path");
    let path1 = ts[1].path_to(0).expect("path");
    assert!(path0.starts_with("accepted from 127.0.0.1"), "{path0}");
    assert!(path1.starts_with("dialled 127.0.0.1:") && path1.ends_with("(loopback)"), "{path1}");
    exchange(ts, 500);
}

#[test]
fn the_lower_rank_unreachable_is_dialled_by_the_higher_at_once() {
    // Rank 0's own listener is out of reach, as rank 1 sees it: rank 0
    // dials rank 1, as it always did first.
    let ts: Vec<TcpTransport> = connect_all(local_kv_world(3), |_| SECRET, |r| if r == 0 { unreachable(test_opts()) } else { test_opts() })
        .into_iter()
        .map(|t| t.expect("setup"))
        .collect();
    assert!(ts[1].path_to(0).expect("path").starts_with("accepted"));
    assert!(ts[2].path_to(0).expect("path").starts_with("accepted"));
    exchange(ts, 200);
}

#[test]
fn ranks_dialling_each_other_at_once_keep_one_connection_per_pair() {
    for round in 0..5 {
        let opts = || TcpOptions { reverse_delay: Duration::ZERO, ..test_opts() };
        let ts: Vec<TcpTransport> = connect_all(local_kv_world(4), |_| SECRET, |_| opts()).into_iter().map(|t| t.expect("setup")).collect();
        // Each pair's two ends are one connection: a's local port is b's
        // remote port and the other way round.
        for a in 0..4u32 {
            for b in (a + 1)..4 {
                let (al, ar) = ts[a as usize].connection_ports(b).expect("a to b");
                let (bl, br) = ts[b as usize].connection_ports(a).expect("b to a");
                assert_eq!((al, ar), (br, bl), "round {round}: ranks {a} and {b} kept different connections");
            }
        }
        let ts = exchange(ts, 300);
        for t in &ts {
            assert_eq!(t.reconnections(), 0, "round {round}: rank {} replaced a connection", t.rank());
        }
    }
}

#[test]
fn no_path_at_all_fails_within_the_path_timeout_naming_ranks_and_candidates() {
    let opts = |_| unreachable(TcpOptions { setup_timeout: Duration::from_secs(60), ..test_opts() });
    let started = Instant::now();
    let rs = connect_all(local_kv_world(2), |_| SECRET, opts);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(12), "took {took:?}");
    assert!(took >= Duration::from_secs(9), "gave up before the path timeout: {took:?}");
    for (me, r) in rs.into_iter().enumerate() {
        let e = r.err().expect("no path").to_string();
        eprintln!("{e}");
        let other = 1 - me;
        assert!(e.contains(&format!("rank {me} found no path to rank {other} in 10 s")), "{e}");
        assert!(e.contains(&format!("tried {NOWHERE}:")) && e.contains("(public)"), "{e}");
        assert!(e.contains(&format!("rank {other} did not reach rank {me} at {NOWHERE}:")), "{e}");
    }
}

/// After a break (`ss -K`, as a NAT that forgot the connection), the rank
/// nobody can dial redials out, and the streams resume with nothing lost.
/// Needs root; says it was skipped otherwise.
#[test]
fn after_a_break_the_rank_nobody_can_dial_redials_out() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: ss -K needs root");
        return;
    }
    let ts: Vec<TcpTransport> = connect_all(local_kv_world(2), |_| SECRET, |r| if r == 1 { unreachable(test_opts()) } else { test_opts() })
        .into_iter()
        .map(|t| t.expect("setup"))
        .collect();
    let (l, r) = ts[0].connection_ports(1).expect("connected");
    let ts = exchange(ts, 100);
    let out = std::process::Command::new("ss")
        .args(["-K", "-t", "-n", "src", &format!("127.0.0.1:{l}"), "dst", &format!("127.0.0.1:{r}")])
        .output()
        .expect("ss");
    if !String::from_utf8_lossy(&out.stdout).contains("127.0.0.1") {
        eprintln!("SKIPPED: ss -K aborted no socket (kernel without CONFIG_INET_DIAG_DESTROY?)");
        return;
    }
    // The exchange goes on across the break: rank 1 must dial rank 0 again.
    let ts = exchange(ts, 300);
    assert!(ts.iter().any(|t| t.reconnections() >= 1), "no reconnection seen");
    assert_ne!(ts[0].connection_ports(1), Some((l, r)), "a new connection");
}
