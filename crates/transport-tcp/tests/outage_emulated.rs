//! Outages of an emulated WAN link (needs root): two emulated hosts 20 ms
//! apart one way (MTU 1500), one rank on each, a ping-pong of numbered
//! frames with content checked. The test takes the link down in the
//! emulator (every packet dropped, both directions) and up again.
//!
//! - An outage of 20 s under the default limit: the job survives, every
//!   frame arrives once and in order, and the ping-pong resumes promptly:
//!   the pause is at most the outage plus 2 round trips plus 1 s (plus a
//!   little slack for a loaded machine).
//! - With `WANMPI_OUTAGE_LIMIT=5`, an outage of 15 s ends the job: each
//!   rank reports the other lost, naming the path ("no answer from rank N
//!   at ADDR for 5 s"), within the limit plus the silence before a
//!   connection counts as broken (3 s) plus a few seconds.
//!
//! Skips (printing why) when not root or when the forwarder binary
//! (`wanmpi-emu`, `cargo build --release -p wanmpi-emulator`) is missing.

mod common;
use common::{check, make, SECRET};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};
use wanmpi_bootstrap::local_kv_world;
use wanmpi_emulator::{EmuError, Emulation, Topology, UpOptions};
use wanmpi_transport_tcp::{Incoming, SendStatus, TcpOptions, TcpTransport, Transport};

const ONE_WAY: Duration = Duration::from_millis(20);
const LEN: usize = 1200;

fn forwarder() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("WANMPI_EMU_BIN") {
        return Some(PathBuf::from(p));
    }
    let me = std::env::current_exe().ok()?;
    me.ancestors().skip(1).take(2).map(|d| d.join("wanmpi-emu")).find(|c| c.is_file())
}

fn up_or_skip(test: &str) -> Option<Emulation> {
    let skip = |why: String| {
        println!("SKIPPED {test}: {why}");
        None
    };
    let Some(exe) = forwarder() else {
        return skip("the forwarder wanmpi-emu is not built (cargo build --release -p wanmpi-emulator)".into());
    };
    if let Err(e) = wanmpi_emulator::preflight() {
        return skip(format!("needs root / CAP_NET_ADMIN: {e}"));
    }
    let topo = Topology::parse(&format!("hosts 2\nseed 1\ndefault delay={}ms\n", ONE_WAY.as_millis())).expect("topology");
    match Emulation::up(&topo, &UpOptions { forwarder_exe: Some(exe), ..UpOptions::default() }) {
        Ok(e) => Some(e),
        Err(EmuError::NotPermitted(why)) => skip(format!("needs root / CAP_NET_ADMIN: {why}")),
        Err(e) => panic!("{test}: bringing up the emulation failed: {e}"),
    }
}

/// What a rank saw: round trips completed (rank 0: when each completed),
/// and the loss it was told of, if any, with when.
#[derive(Default)]
struct Outcome {
    done: Vec<Instant>,
    lost: Option<(Instant, String)>,
}

/// Shared between the ranks and the test: round trips done so far, and
/// a stop for the ranks once the test has seen what it needs.
#[derive(Default)]
struct Shared {
    rounds: AtomicU32,
    stop: AtomicBool,
}

/// A ping-pong of `rounds` round trips: rank 0 sends frame i, rank 1 sends
/// it back; each side checks every frame's content and number. Runs inside
/// the rank's emulated host (its redials make sockets there). Ends early
/// on a lost peer (recorded) or the test's stop; bounded by `limit`.
fn rank(emu: &Emulation, r: usize, kv: wanmpi_bootstrap::LocalKv, opts: TcpOptions, rounds: u32, sh: &Shared, limit: Duration) -> Outcome {
    let mut kv = kv;
    let addr = emu.host(r).expect("host").addrs[0];
    let opts = TcpOptions { publish_addr: Some(addr.to_string()), ..opts };
    emu.in_host(r, move || {
        let mut t = TcpTransport::connect(&mut kv, SECRET, opts).expect("connect");
        let me = r as u32;
        let other = 1 - me;
        let mut out = Outcome::default();
        let mut want = 0u32;
        let mut to_send: Option<u32> = if me == 0 { Some(0) } else { None };
        let deadline = Instant::now() + limit;
        while (want < rounds || to_send.is_some()) && !sh.stop.load(Ordering::Relaxed) {
            assert!(Instant::now() < deadline, "rank {me}: only {want} of {rounds} round trips");
            if let Some(seq) = to_send {
                if t.try_send(other, 0, &[&make(me, other, seq, LEN)]).expect("try_send") == SendStatus::Sent {
                    to_send = None;
                }
            }
            let mut lost = None;
            t.poll_recv(&mut |ev| match ev {
                Incoming::Frame { peer, bytes, .. } => {
                    assert_eq!(check(bytes), (other, me, want), "rank {me}: frame lost, repeated or out of order");
                    assert_eq!(peer, other);
                    want += 1;
                    if me == 0 {
                        out.done.push(Instant::now());
                        sh.rounds.store(want, Ordering::Relaxed);
                    }
                    if me == 1 || want < rounds {
                        to_send = Some(want - u32::from(me == 1));
                    }
                }
                // A peer done with the last round trip closes: not a loss.
                Incoming::PeerLost { peer, reason } if want < rounds => lost = Some((Instant::now(), format!("rank {peer}: {reason}"))),
                Incoming::PeerLost { .. } => {}
            })
            .expect("poll_recv");
            if lost.is_some() {
                out.lost = lost;
                break;
            }
            t.flush().expect("flush");
            t.wait(Duration::from_millis(20)).expect("wait");
        }
        out
    })
    .expect("enter host")
}

/// Waits (bounded) until rank 0 has completed `n` round trips.
fn wait_rounds(sh: &Shared, n: u32, limit: Duration) {
    let t0 = Instant::now();
    while sh.rounds.load(Ordering::Relaxed) < n {
        assert!(t0.elapsed() < limit, "only {} round trips before the outage", sh.rounds.load(Ordering::Relaxed));
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_20_s_outage_is_ridden_out_and_resumes_within_a_second() {
    let test = "a_20_s_outage_is_ridden_out_and_resumes_within_a_second";
    let Some(emu) = up_or_skip(test) else { return };
    const ROUNDS: u32 = 150;
    // 20 s unless WANMPI_TEST_OUTAGE says (for docs/benchmarks.md's 60 s).
    let outage = std::env::var("WANMPI_TEST_OUTAGE").ok().and_then(|v| v.parse().ok()).map_or(Duration::from_secs(20), Duration::from_secs_f64);
    let sh = Shared::default();
    // The environment's settings (WANMPI_TCP_SILENCE) for measurements.
    let env = TcpOptions::from_env().expect("options");
    let opts = TcpOptions { bind_addr: "0.0.0.0".parse().unwrap(), setup_timeout: Duration::from_secs(20), ..env };
    assert_eq!(opts.outage_limit, Duration::from_secs(600), "the default limit, left unchanged");
    let (outcomes, cut) = std::thread::scope(|s| {
        let ranks: Vec<_> = local_kv_world(2)
            .into_iter()
            .enumerate()
            .map(|(r, kv)| {
                let (emu, sh, opts) = (&emu, &sh, opts.clone());
                s.spawn(move || rank(emu, r, kv, opts, ROUNDS, sh, 3 * outage + Duration::from_secs(20)))
            })
            .collect();
        wait_rounds(&sh, ROUNDS / 3, Duration::from_secs(20));
        emu.set_link(0, 1, false, None).expect("link down");
        let cut = Instant::now();
        // The outage itself: a set time, not a wait for an event.
        std::thread::sleep(outage);
        emu.set_link(0, 1, true, None).expect("link up");
        let back = Instant::now();
        let outcomes: Vec<Outcome> = ranks.into_iter().map(|h| h.join().expect("rank panicked")).collect();
        (outcomes, (cut, back))
    });
    let (cut, back) = cut;
    for (r, o) in outcomes.iter().enumerate() {
        assert!(o.lost.is_none(), "rank {r} lost its peer: {:?}", o.lost);
    }
    let done = &outcomes[0].done;
    assert_eq!(done.len(), ROUNDS as usize);
    let rtt = 2 * ONE_WAY;
    // The longest pause between round trips spans the outage; what it adds
    // beyond the outage is the time lost to resuming.
    let (gap, at) = done.windows(2).map(|w| (w[1] - w[0], w[0])).max_by_key(|x| x.0).expect("round trips");
    let first_after = done.iter().find(|&&t| t > back).map(|&t| t - back).expect("a round trip after the outage");
    let lost = gap.saturating_sub(back - cut);
    eprintln!(
        "emulated tcp, {} ms one way: outage {:.1} s; longest pause {:.2} s (from {:.2} s before the cut); first round trip {:.0} ms after the link came back; lost beyond the outage {:.0} ms (target <= 2 RTT + 1 s = {:.0} ms)",
        ONE_WAY.as_millis(),
        (back - cut).as_secs_f64(),
        gap.as_secs_f64(),
        cut.saturating_duration_since(at).as_secs_f64(),
        first_after.as_secs_f64() * 1e3,
        lost.as_secs_f64() * 1e3,
        (2 * rtt + Duration::from_secs(1)).as_secs_f64() * 1e3
    );
    assert!(first_after < 2 * rtt + Duration::from_millis(1500), "the ping-pong resumed only {first_after:?} after the link came back");
}

#[test]
fn past_the_outage_limit_the_peer_is_lost_naming_the_path() {
    let test = "past_the_outage_limit_the_peer_is_lost_naming_the_path";
    let Some(emu) = up_or_skip(test) else { return };
    const OUTAGE: Duration = Duration::from_secs(15);
    let sh = Shared::default();
    let env = |k: &str| (k == wanmpi_transport_tcp::ENV_OUTAGE_LIMIT).then(|| "5".to_string());
    let opts = TcpOptions {
        bind_addr: "0.0.0.0".parse().unwrap(),
        setup_timeout: Duration::from_secs(20),
        ..TcpOptions::from_lookup(env).expect("options")
    };
    assert_eq!(opts.outage_limit, Duration::from_secs(5));
    let silence = opts.silence;
    let (outcomes, cut) = std::thread::scope(|s| {
        let ranks: Vec<_> = local_kv_world(2)
            .into_iter()
            .enumerate()
            .map(|(r, kv)| {
                let (emu, sh, opts) = (&emu, &sh, opts.clone());
                s.spawn(move || rank(emu, r, kv, opts, u32::MAX, sh, Duration::from_secs(40)))
            })
            .collect();
        wait_rounds(&sh, 20, Duration::from_secs(20));
        emu.set_link(0, 1, false, None).expect("link down");
        let cut = Instant::now();
        let outcomes: Vec<Outcome> = ranks.into_iter().map(|h| h.join().expect("rank panicked")).collect();
        // Both ranks have given up; the rest of the outage changes nothing.
        assert!(cut.elapsed() < OUTAGE, "the job outlived the outage");
        emu.set_link(0, 1, true, None).expect("link up");
        (outcomes, cut)
    });
    for (r, o) in outcomes.iter().enumerate() {
        let (when, why) = o.lost.as_ref().unwrap_or_else(|| panic!("rank {r} never lost its peer"));
        let after = when.duration_since(cut);
        let peer_addr = emu.host(1 - r).expect("host").addrs[0];
        eprintln!("rank {r}: {why} ({:.1} s after the cut)", after.as_secs_f64());
        assert!(why.contains(&format!("no answer from rank {} at {peer_addr}", 1 - r)) && why.contains("for 5 s"), "rank {r}: {why}");
        assert!(after >= Duration::from_secs(5), "rank {r} gave up before the limit: {after:?}");
        assert!(after < Duration::from_secs(5) + silence + Duration::from_secs(3), "rank {r} gave up late: {after:?}");
    }
}
