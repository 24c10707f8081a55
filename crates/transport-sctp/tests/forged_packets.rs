//! Forged packets cannot kill a sealed link (issue 23): while two ranks
//! ping-pong verified frames, an attacker on the host sends 10,000
//! datagrams from each rank's own UDP address to the other — captured ones
//! with bits flipped past the common header and the SCTP checksum
//! recomputed, captured ones replayed as they were, truncated ones, made-up
//! SCTP packets of random chunks (ABORT, SHUTDOWN, INIT, DATA...) with a
//! valid checksum and the captured common header, and captured ones under
//! a later packet number. Sealed, every one is dropped and counted before
//! usrsctp sees it: the ping-pong goes on verifying, nobody is lost, and
//! the process does not grow. Plain (`Seal::Never`, what the review found
//! with the old sealing, which covered messages only), the same attack ends
//! the association or alters data: the attack is real.
//!
//! Needs root (raw sockets); skipped otherwise.

mod common;
use common::spoof::{fix_sctp_checksum, Spoofer};
use common::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::net::{SocketAddr, SocketAddrV4};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};
use wanmpi_transport::{Incoming, SendStatus, Transport};
use wanmpi_transport_sctp::{SctpOptions, SctpTransport, Seal};

const FORGED: usize = 10_000;
/// Forgeries per pacing slot, and the slot: 10,000 in about 5 s.
const BURST: usize = 100;
const SLOT: Duration = Duration::from_millis(50);
const SIZES: &[usize] = &[12, 100, 1500, 20_000, 100_000];

#[derive(Debug, Default)]
struct Outcome {
    round_trips: u64,
    corrupted: u64,
    lost: Option<String>,
    /// Sealed datagrams dropped unopened or as replays, both ranks.
    refused: u64,
    sent_forged: u64,
    rss_growth_kib: i64,
}

fn rss_kib() -> i64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines().find_map(|l| l.strip_prefix("VmRSS:")).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()).unwrap_or(0)
}

fn v4(a: SocketAddr) -> SocketAddrV4 {
    match a {
        SocketAddr::V4(a) => a,
        SocketAddr::V6(_) => panic!("test ranks bind IPv4 loopback"),
    }
}

/// One forgery of kind `k` from what was captured on this direction.
fn forge(rng: &mut ChaCha8Rng, k: usize, pool: &[Vec<u8>]) -> Vec<u8> {
    let pick = |rng: &mut ChaCha8Rng| pool[rng.gen_range(0..pool.len())].clone();
    match k % 5 {
        0 => {
            // Bits flipped past the common header, checksum recomputed.
            let mut d = pick(rng);
            for _ in 0..rng.gen_range(1..=3) {
                if d.len() > 12 {
                    let i = rng.gen_range(12..d.len());
                    d[i] ^= 1 << rng.gen_range(0..8);
                }
            }
            fix_sctp_checksum(&mut d);
            d
        }
        // Replayed: the latest capture (likely inside the replay window) or any.
        1 => match rng.gen_bool(0.5) {
            true => pool[pool.len() - 1].clone(),
            false => pick(rng),
        },
        2 => {
            let d = pick(rng);
            d[..rng.gen_range(0..d.len())].to_vec()
        }
        3 => {
            // Made-up chunks after a captured common header.
            const TYPES: &[u8] = &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 64, 128, 192, 255];
            let mut d = pick(rng)[..12].to_vec();
            for _ in 0..rng.gen_range(1..=4) {
                let body: Vec<u8> = (0..rng.gen_range(0..64)).map(|_| rng.gen()).collect();
                d.extend_from_slice(&[TYPES[rng.gen_range(0..TYPES.len())], rng.gen()]);
                d.extend_from_slice(&((4 + body.len()) as u16).to_be_bytes());
                d.extend_from_slice(&body);
                while d.len() % 4 != 0 {
                    d.push(0);
                }
            }
            fix_sctp_checksum(&mut d);
            d
        }
        _ => {
            // A later packet number (the first 8 bytes of a sealed datagram).
            let mut d = pick(rng);
            if d.len() >= 8 {
                let pn = u64::from_be_bytes(d[..8].try_into().unwrap_or([0; 8])).wrapping_add(rng.gen_range(1..1000));
                d[..8].copy_from_slice(&pn.to_be_bytes());
            }
            d
        }
    }
}

/// Captures both directions between `a` and `b`, then sends `FORGED`
/// forgeries alternately to each from the other's address. Returns how
/// many went out and the RSS growth between the first and the last tenth.
fn attack(spoof: &mut Spoofer, a: SocketAddrV4, b: SocketAddrV4, stop: &AtomicBool) -> (u64, i64) {
    let mut pools: [Vec<Vec<u8>>; 2] = [vec![], vec![]];
    let mut rng = ChaCha8Rng::seed_from_u64(23);
    let take = |spoof: &mut Spoofer, pools: &mut [Vec<Vec<u8>>; 2]| {
        while let Some(c) = spoof.capture() {
            let dir = match (c.from, c.to) {
                (f, t) if f == a && t == b => 0,
                (f, t) if f == b && t == a => 1,
                _ => continue,
            };
            if c.payload.len() >= 12 {
                let pool = &mut pools[dir];
                if pool.len() >= 64 {
                    pool.remove(0);
                }
                pool.push(c.payload);
                return;
            }
        }
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while pools.iter().any(|p| p.len() < 16) {
        assert!(Instant::now() < deadline, "captured only {} and {} datagrams in 10 s", pools[0].len(), pools[1].len());
        take(spoof, &mut pools);
    }
    let (mut sent, mut rss_first) = (0u64, None);
    let start = Instant::now();
    for k in 0..FORGED {
        if stop.load(SeqCst) {
            break;
        }
        let dir = k % 2;
        let (from, to) = if dir == 0 { (a, b) } else { (b, a) };
        let d = forge(&mut rng, k / 2, &pools[dir]);
        if spoof.send(from, to, &d).is_ok() {
            sent += 1;
        }
        if k % BURST == BURST - 1 {
            // Fresh captures keep the replays inside the window.
            take(spoof, &mut pools);
            if k >= FORGED / 10 {
                rss_first.get_or_insert_with(rss_kib);
            }
            // Paced, so the kernel's buffers do not drop them first.
            let next = start + SLOT * ((k / BURST + 1) as u32);
            std::thread::sleep(next.saturating_duration_since(Instant::now()));
        }
    }
    (sent, rss_kib() - rss_first.unwrap_or_else(rss_kib))
}

/// Rank 0: round trips of verified frames until `stop`, or the peer lost.
fn pinger(t: &mut SctpTransport, stop: &AtomicBool, out: &mut Outcome) {
    let mut seq = 0u32;
    'run: while !stop.load(SeqCst) {
        let ch = (seq % 2) as u16;
        let f = frame(0, ch, seq, SIZES[seq as usize % SIZES.len()]);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            match t.try_send(1, ch, &[&f]) {
                Ok(SendStatus::Sent) => break,
                Ok(SendStatus::WouldBlock) if Instant::now() < deadline => t.wait(Duration::from_millis(2)).expect("wait"),
                Ok(SendStatus::WouldBlock) => {
                    out.lost = Some("send blocked for 5 s".into());
                    break 'run;
                }
                Err(e) => {
                    out.lost = Some(e.to_string());
                    break 'run;
                }
            }
        }
        let mut echo = None;
        while echo.is_none() {
            if Instant::now() > deadline {
                out.lost.get_or_insert_with(|| format!("no echo of frame {seq} within 5 s"));
                break 'run;
            }
            t.poll_recv(&mut |ev| match ev {
                Incoming::Frame { bytes, .. } => echo = Some(bytes.to_vec()),
                Incoming::PeerLost { reason, .. } => out.lost = Some(reason),
            })
            .expect("poll_recv");
            if out.lost.is_some() {
                break 'run;
            }
            if echo.is_none() {
                t.wait(Duration::from_millis(2)).expect("wait");
            }
        }
        out.round_trips += 1;
        out.corrupted += u64::from(echo.as_ref() != Some(&f));
        seq += 1;
    }
}

/// Rank 1: sends every frame back until `stop` or the peer is lost.
fn echoer(t: &mut SctpTransport, stop: &AtomicBool) {
    let mut lost = false;
    while !stop.load(SeqCst) {
        let mut got = vec![];
        t.poll_recv(&mut |ev| match ev {
            Incoming::Frame { channel, bytes, .. } => got.push((channel, bytes.to_vec())),
            Incoming::PeerLost { .. } => lost = true,
        })
        .expect("poll_recv");
        if lost {
            return;
        }
        for (ch, f) in got {
            let deadline = Instant::now() + Duration::from_secs(5);
            while matches!(t.try_send(0, ch, &[&f]), Ok(SendStatus::WouldBlock)) && Instant::now() < deadline {
                t.wait(Duration::from_millis(2)).expect("wait");
            }
        }
        t.wait(Duration::from_millis(2)).expect("wait");
    }
}

/// The soak with the attack; None without raw sockets.
fn soak(seal: Seal) -> Option<Outcome> {
    let Some(mut spoof) = Spoofer::new() else {
        eprintln!("SKIPPED: raw sockets need root");
        return None;
    };
    let stop = Arc::new(AtomicBool::new(false));
    let refused = Arc::new(AtomicU64::new(0));
    let (addr_tx, addr_rx) = mpsc::channel::<(u32, SocketAddr)>();
    let (out_tx, out_rx) = mpsc::channel::<Outcome>();
    let attacker = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut addrs = [None, None];
            for _ in 0..2 {
                let (r, a) = addr_rx.recv_timeout(Duration::from_secs(30)).expect("ranks' addresses");
                addrs[r as usize] = Some(v4(a));
            }
            let (a, b) = (addrs[0].expect("rank 0"), addrs[1].expect("rank 1"));
            attack(&mut spoof, a, b, &stop)
        })
    };
    let gate = Arc::new(Barrier::new(2));
    // Rank 0 pings until this is set: a second after the attack ended.
    let until = Arc::new(AtomicBool::new(false));
    let ranks = {
        let (stop, refused, until) = (stop.clone(), refused.clone(), until.clone());
        let opts = SctpOptions { seal, heartbeat_ms: 1000, ..test_opts(2) };
        std::thread::spawn(move || {
            run_ranks(2, opts, move |mut t| {
                addr_tx.send((t.rank(), t.local_addr().expect("address"))).expect("attacker listening");
                if t.rank() == 0 {
                    let mut out = Outcome::default();
                    pinger(&mut t, &until, &mut out);
                    stop.store(true, SeqCst);
                    out_tx.send(out).expect("collector");
                } else {
                    echoer(&mut t, &stop);
                }
                let c = t.counters();
                let mine: u64 = c.peers.iter().map(|p| p.refused_forged + p.refused_replayed).sum();
                refused.fetch_add(mine, SeqCst);
                gate.wait();
                let _ = t.shutdown(Duration::from_secs(2));
            })
        })
    };
    let attacked = attacker.join();
    // The soak runs on for a second after the last forgery.
    std::thread::sleep(Duration::from_secs(1));
    until.store(true, SeqCst);
    ranks.join().expect("ranks");
    let (sent, growth) = attacked.expect("attacker");
    let mut out = out_rx.recv_timeout(Duration::from_secs(5)).expect("rank 0's outcome");
    out.sent_forged = sent;
    out.refused = refused.load(SeqCst);
    out.rss_growth_kib = growth;
    eprintln!("{seal:?}: {out:?}");
    Some(out)
}

#[test]
fn sealed_ten_thousand_forged_packets_change_nothing() {
    let Some(out) = soak(Seal::Always) else { return };
    assert_eq!(out.lost, None, "{out:?}");
    assert_eq!(out.corrupted, 0, "{out:?}");
    assert!(out.round_trips >= 100, "the ping-pong stalled: {out:?}");
    assert_eq!(out.sent_forged, FORGED as u64);
    // Every forgery that reached a socket was refused unopened (the kernel
    // may drop a few when a socket's buffer is full).
    assert!(out.refused >= FORGED as u64 * 95 / 100 && out.refused <= FORGED as u64, "{out:?}");
    assert!(out.rss_growth_kib < 8 << 10, "memory grew by {} KiB under the attack", out.rss_growth_kib);
}

#[test]
fn plain_the_same_attack_ends_the_association_or_alters_data() {
    let Some(out) = soak(Seal::Never) else { return };
    assert!(out.lost.is_some() || out.corrupted > 0, "the attack did nothing to a plain link: {out:?}");
    assert_eq!(out.refused, 0, "nothing to refuse without a seal");
}
