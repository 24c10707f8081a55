//! Path failover across the WAN emulator (needs root): two emulated hosts
//! with two paths each (198.18.0.x on path 0, 198.19.0.x on path 1, 10 ms
//! one way on every link), one rank per host, a stream of numbered frames
//! from rank 0 to rank 1; a third of the way through, the test takes path 0
//! between the hosts down in the emulator, in both directions, as a cable
//! cut. The transport only notices through its probes. Every frame must
//! arrive once and in order; the test prints the failover times.
//!
//! Skips (printing why) when not root or when the forwarder binary
//! (`wanmpi-emu`, `cargo build --release -p wanmpi-emulator`) is missing.

mod common;
use common::{drain, receive_paced, send_paced, test_opts, Paced, SECRET};
use std::path::PathBuf;
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};
use wanmpi_bootstrap::local_kv_world;
use wanmpi_emulator::{EmuError, Emulation, Topology, UpOptions};
use wanmpi_transport::Transport;
use wanmpi_transport_sctp::{Counters, SctpOptions, SctpTransport};

const FRAMES: u32 = 3000;
const CUT_AFTER: u32 = 1000;
const LEN: usize = 1000;
const BATCH: u32 = 10;
const SLOT: Duration = Duration::from_millis(5);
const PACED: Paced = Paced { frames: FRAMES, len: LEN, batch: BATCH, slot: SLOT };

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
    let topo = Topology::parse("hosts 2\npaths 2\nseed 1\ndefault delay=10ms\n").expect("topology");
    match Emulation::up(&topo, &UpOptions { forwarder_exe: Some(exe), ..UpOptions::default() }) {
        Ok(e) => Some(e),
        Err(EmuError::NotPermitted(why)) => skip(format!("needs root / CAP_NET_ADMIN: {why}")),
        Err(e) => panic!("{test}: bringing up the emulation failed: {e}"),
    }
}

#[derive(Default)]
struct Outcome {
    counters: Counters,
    cut_at: Option<Instant>,
    got: Vec<u32>,
    arrivals: Vec<Instant>,
}

#[test]
fn emulated_cable_cut_of_the_primary_path_fails_over() {
    let test = "emulated_cable_cut_of_the_primary_path_fails_over";
    let Some(emu) = up_or_skip(test) else { return };
    let emu = &emu;
    let cut_at = Arc::new(Mutex::new(None::<Instant>));
    let gate = Arc::new(Barrier::new(2));
    let outcomes: Vec<Outcome> = std::thread::scope(|s| {
        let handles: Vec<_> = local_kv_world(2)
            .into_iter()
            .enumerate()
            .map(|(r, mut kv)| {
                let (cut_at, gate) = (cut_at.clone(), gate.clone());
                s.spawn(move || {
                    let addrs = emu.host(r).expect("host").addrs;
                    let opts = SctpOptions { publish_addr: addrs[0].into(), more_addrs: vec![addrs[1].into()], ..test_opts(2) };
                    // Sockets made inside the host's namespace stay there.
                    let t = emu.in_host(r, move || SctpTransport::connect(&mut kv, SECRET, opts)).expect("enter host").expect("connect");
                    rank(t, emu, &cut_at, &gate)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("rank panicked")).collect()
    });
    let cut = cut_at.lock().unwrap().expect("the cut happened");
    let emu_counters = emu.counters().ok();

    let got = &outcomes[1].got;
    assert!(got.iter().copied().eq(0..FRAMES), "frames lost, duplicated or out of order ({} got)", got.len());
    for (r, o) in outcomes.iter().enumerate() {
        eprintln!("{}", o.counters);
        let c = o.counters.peer(1 - r as u32).unwrap();
        assert_eq!((c.path_switches, c.active_path), (1, 1), "rank {r} must have moved to path 1 once");
        assert!(!c.paths[0].up && c.paths[1].up, "rank {r}: path 0 down, path 1 up");
        assert!(c.paths[1].datagrams_in > 0 && c.paths[1].datagrams_out > 0, "rank {r}: path 1 unused");
        let took = c.last_switch.unwrap().saturating_duration_since(cut);
        eprintln!("emulated: rank {r} switched {:.0} ms after the cut", took.as_secs_f64() * 1e3);
        assert!(took >= Duration::from_millis(250) && took < Duration::from_secs(3), "rank {r}: switch {took:?} after the cut");
    }
    if let Some(l) = emu_counters.as_ref().and_then(|c| c.link(0, 1, 0)) {
        eprintln!("emulator link 0->1 path 0: {l:?}");
    }
    let arr = &outcomes[1].arrivals;
    let (gap, at) = arr.windows(2).map(|w| (w[1] - w[0], w[0])).max_by_key(|x| x.0).unwrap();
    let first_after = got.iter().zip(arr).find(|(_, &t)| t > cut + Duration::from_millis(30)).map(|(_, &t)| t - cut);
    eprintln!(
        "emulated: longest delivery pause {:.0} ms (from {:+.0} ms after the cut); first frame delivered {:.0} ms after the cut",
        gap.as_secs_f64() * 1e3,
        at.saturating_duration_since(cut).as_secs_f64() * 1e3 - cut.saturating_duration_since(at).as_secs_f64() * 1e3,
        first_after.unwrap_or_default().as_secs_f64() * 1e3
    );
    // Copies start once path 0's probe is 2 x srtt overdue; SCTP's own
    // retransmission would come 200 ms + 400 ms (backed off) after the loss.
    let first_after = first_after.expect("nothing delivered after the cut");
    assert!(first_after < Duration::from_millis(400), "delivery resumed only {first_after:?} after the cut");
}

fn rank(mut t: SctpTransport, emu: &Emulation, cut_at: &Mutex<Option<Instant>>, gate: &Barrier) -> Outcome {
    let mut o = Outcome::default();
    // 10 ms one way: the association's srtt (about 20 ms) is far
    assert!(t.wants_progress_thread(), "rank {}: a peer 20 ms away must ask for the progress thread", t.rank());
    // ... and counts as far, so the runtime grants it the WAN window.
    let path = t.path(1 - t.rank()).expect("an association's path");
    assert_eq!(path.is_far(), Some(true), "rank {}: a peer 20 ms away is far: {path:?}", t.rank());
    assert!(path.srtt >= Duration::from_millis(15), "rank {}: srtt {:?} for a 20 ms round trip", t.rank(), path.srtt);
    if t.rank() == 0 {
        send_paced(&mut t, PACED, |_, sent| {
            if sent == CUT_AFTER {
                emu.set_link(0, 1, false, Some(0)).expect("cut path 0");
                *cut_at.lock().unwrap() = Some(Instant::now());
            }
        });
        drain(&mut t);
    } else {
        (o.got, o.arrivals) = receive_paced(&mut t, PACED, |_| {});
    }
    o.counters = t.counters();
    o.cut_at = *cut_at.lock().unwrap();
    gate.wait();
    t.shutdown(Duration::from_secs(5)).unwrap();
    o
}
