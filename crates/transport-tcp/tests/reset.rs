//! Connections destroyed under the job by `ss -K` (what a middlebox's reset
//! or a NAT timeout does) are redialled and resumed: every message arrives
//! once, in order, with its content. Needs root (`ss -K` asks the kernel,
//! CONFIG_INET_DIAG_DESTROY, to abort the sockets); says it was skipped
//! otherwise.

mod common;
use common::*;
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use wanmpi_bootstrap::local_kv_world;
use wanmpi_transport_tcp::{Incoming, Seal, SendStatus, TcpOptions, TcpTransport, Transport};

/// Messages rank 1 sends (half to each other rank); ranks 0 and 2 send
/// half as many each to rank 1.
const N: u32 = 10_000;
const KILLS: usize = 10;
const LIMIT: Duration = Duration::from_secs(40);

/// Mostly short messages, every 16th long (up to 300 KiB), so kills land
/// in the middle of long frames as well as between short ones.
fn len_of(seq: u32) -> usize {
    if seq % 16 == 5 {
        64 * 1024 + (seq as usize * 7919) % (236 * 1024)
    } else {
        12 + (seq as usize * 131) % 2000
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Aborts the sockets matching `filter` (an `ss` filter); how many it listed.
fn ss_kill(filter: &str) -> usize {
    let args: Vec<&str> = ["-K", "-t", "-n"].into_iter().chain(filter.split(' ')).collect();
    let out = Command::new("ss").args(&args).output().expect("run ss");
    String::from_utf8_lossy(&out.stdout).lines().filter(|l| l.contains("127.0.0.1")).count()
}

/// What the rank threads share with the test.
#[derive(Default)]
struct Shared {
    /// Messages received by all ranks.
    received: AtomicUsize,
    /// Ranks that have everything they expect (each keeps serving until all
    /// do: a rank that stops polling redials nobody).
    finished: AtomicUsize,
    /// Rank 1's connections to 0 and 2: (local, remote) ports, 0 when none.
    ports: [AtomicUsize; 4],
    /// Rounds of kills done: a rank sends the next share of its messages
    /// only after the round before it, so every round lands mid-stream.
    round: AtomicUsize,
    stop: AtomicBool,
}

/// One rank: sends its messages, takes everything addressed to it, checks
/// content and order, until every rank has all it expects (bounded by LIMIT).
fn run(mut t: TcpTransport, sh: Arc<Shared>) -> (TcpTransport, Vec<u32>) {
    let me = t.rank();
    let (out, expect): (Vec<(u32, u32)>, usize) = match me {
        1 => ((0..N).map(|s| (if s % 2 == 0 { 0 } else { 2 }, s)).collect(), N as usize),
        _ => ((0..N / 2).map(|s| (1, s)).collect(), N as usize / 2),
    };
    let mut next = 0;
    let mut want = [0u32; 3];
    let mut got = 0;
    let mut done = false;
    let deadline = Instant::now() + LIMIT;
    while sh.finished.load(Ordering::Relaxed) < 3 && !sh.stop.load(Ordering::Relaxed) {
        assert!(Instant::now() < deadline, "rank {me}: {got} of {expect} received, {next} of {} sent", out.len());
        if !done && got == expect && next == out.len() {
            done = true;
            sh.finished.fetch_add(1, Ordering::Relaxed);
        }
        let round = sh.round.load(Ordering::Relaxed);
        let allowed = if round >= KILLS { out.len() } else { out.len() * (round + 1) / (KILLS + 1) };
        while next < allowed {
            let (to, seq) = out[next];
            let f = make(me, to, seq, len_of(seq));
            match t.try_send(to, 0, &[&f[..12], &f[12..]]).expect("try_send") {
                SendStatus::Sent => next += 1,
                SendStatus::WouldBlock => break,
            }
        }
        t.poll_recv(&mut |ev| match ev {
            Incoming::Frame { peer, bytes, .. } => {
                let (src, dst, seq) = check(bytes);
                assert_eq!((src, dst), (peer, me), "misdelivered");
                // Rank 1 numbers its messages to 0 and 2 from one sequence.
                let step = if src == 1 { 2 } else { 1 };
                let first = if src == 1 && me == 2 { 1 } else { 0 };
                assert_eq!(seq, first + want[src as usize] * step, "rank {me}: from rank {src}: out of order, lost or twice");
                want[src as usize] += 1;
                got += 1;
                sh.received.fetch_add(1, Ordering::Relaxed);
            }
            Incoming::PeerLost { peer, reason } => panic!("rank {me} lost rank {peer}: {reason}"),
        })
        .expect("poll_recv");
        t.flush().expect("flush");
        if me == 1 {
            // Where rank 1's connections are now, for the killer.
            for (i, peer) in [0u32, 2].into_iter().enumerate() {
                let (l, r) = t.connection_ports(peer).map_or((0, 0), |(l, r)| (l as usize, r as usize));
                sh.ports[2 * i].store(l, Ordering::Relaxed);
                sh.ports[2 * i + 1].store(r, Ordering::Relaxed);
            }
        }
        t.wait(Duration::from_millis(5)).expect("wait");
    }
    (t, want.to_vec())
}

#[test]
fn every_connection_of_a_rank_reset_ten_times_loses_and_repeats_nothing() {
    reset_ten_times(Seal::BetweenHosts); // plain on one host
}

#[test]
fn sealed_connections_reset_ten_times_resume_with_fresh_keys() {
    reset_ten_times(Seal::Always);
}

fn reset_ten_times(seal: Seal) {
    if !is_root() {
        eprintln!("SKIPPED: ss -K needs root (CAP_NET_ADMIN)");
        return;
    }
    let ts: Vec<TcpTransport> =
        connect_all(local_kv_world(3), |_| SECRET, |_| TcpOptions { seal, ..test_opts() }).into_iter().map(|t| t.expect("setup")).collect();
    assert!(ts[1].sealed(0) == Some(seal == Seal::Always));
    let sh = Arc::new(Shared::default());
    let handles: Vec<_> = ts
        .into_iter()
        .map(|t| {
            let sh = sh.clone();
            std::thread::spawn(move || run(t, sh))
        })
        .collect();
    let total = 2 * N as usize;
    let started = Instant::now();
    let mut killed = 0;
    let mut last = [0usize; 4];
    for k in 0..KILLS {
        // Most of this round's share arrived, the rest is in flight.
        let at = total * (k + 1) / (KILLS + 1) - total / (KILLS + 1) / 10;
        // And both of rank 1's connections up again: new ones, not those
        // aborted last round.
        let now = |sh: &Shared| -> [usize; 4] { std::array::from_fn(|i| sh.ports[i].load(Ordering::Relaxed)) };
        let fresh = |p: [usize; 4]| p.iter().all(|&x| x != 0) && p[..2] != last[..2] && p[2..] != last[2..];
        while (sh.received.load(Ordering::Relaxed) < at || !fresh(now(&sh))) && started.elapsed() < LIMIT {
            std::thread::sleep(Duration::from_millis(1));
        }
        last = now(&sh);
        // Rank 1's end of both its connections, or the peers' ends, or both.
        let mut n = 0;
        for i in 0..2 {
            let (l, r) = (last[2 * i], last[2 * i + 1]);
            // (After one end is aborted the other is reset at once, so
            // a round of both ends may find only one: count connections.)
            let mut hit = 0;
            if k % 3 != 1 {
                hit += ss_kill(&format!("src 127.0.0.1:{l} dst 127.0.0.1:{r}"));
            }
            if k % 3 != 0 {
                hit += ss_kill(&format!("src 127.0.0.1:{r} dst 127.0.0.1:{l}"));
            }
            n += hit.min(1);
        }
        if k == 0 && n == 0 {
            sh.stop.store(true, Ordering::Relaxed);
            sh.round.store(KILLS, Ordering::Relaxed);
            handles.into_iter().for_each(|h| drop(h.join()));
            eprintln!("SKIPPED: ss -K aborted no socket (kernel without CONFIG_INET_DIAG_DESTROY?)");
            return;
        }
        eprintln!("round {k}: {n} connections aborted at {} messages", sh.received.load(Ordering::Relaxed));
        killed += n;
        sh.round.store(k + 1, Ordering::Relaxed);
    }
    let ranks: Vec<_> = handles.into_iter().map(|h| h.join().expect("rank thread")).collect();
    let took = started.elapsed();
    assert_eq!(ranks[0].1, vec![0, N / 2, 0]);
    assert_eq!(ranks[1].1, vec![N / 2, 0, N / 2]);
    assert_eq!(ranks[2].1, vec![0, N / 2, 0]);
    let reconnected = ranks[1].0.reconnections();
    eprintln!("{killed} connections aborted in {KILLS} rounds; rank 1 reconnected {reconnected} times; {total} messages in {took:?}");
    assert_eq!(killed, 2 * KILLS, "every round aborts both of rank 1's connections");
    assert!(reconnected >= 2 * KILLS as u64, "rank 1 reconnected only {reconnected} times");
}
