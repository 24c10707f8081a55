//! What crosses the network between two hosts (needs root): two emulated
//! hosts (198.18.0.0/15, 1 ms one way), one rank on each with the default
//! sealing rule, a packet capture (`wanmpi_emulator::Capture`: an AF_PACKET
//! socket inside host 0's namespace, which sees every packet of its link) while rank 0
//! sends known messages and rank 1 echoes them. Between hosts the frames
//! are sealed by default and the capture holds no piece of the messages;
//! with WANMPI_SCTP_ENCRYPT=0 (`Seal::Never`) it does, which shows the
//! capture sees the bytes.
//!
//! Skips (printing why) when not root or when the forwarder binary
//! (`wanmpi-emu`, `cargo build --release -p wanmpi-emulator`) is missing.

mod common;
use common::{drain, recv_n, send, test_opts, SECRET};
use std::path::PathBuf;
use std::sync::{Arc, Barrier};
use std::time::Duration;
use wanmpi_bootstrap::local_kv_world;
use wanmpi_emulator::{Capture, EmuError, Emulation, Topology, UpOptions};
use wanmpi_transport::Transport;
use wanmpi_transport_sctp::{SctpOptions, SctpTransport, Seal};

const MARK: &[u8] = b"wanmpi known plaintext: the eagle lands at dawn";

fn known(len: usize) -> Vec<u8> {
    MARK.iter().copied().cycle().take(len).collect()
}

fn shows(bytes: &[u8]) -> bool {
    // Any 16-byte piece of the marker would do.
    MARK.windows(16).any(|piece| bytes.windows(16).any(|w| w == piece))
}

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
    let topo = Topology::parse("hosts 2\nseed 1\ndefault delay=1ms\n").expect("topology");
    match Emulation::up(&topo, &UpOptions { forwarder_exe: Some(exe), ..UpOptions::default() }) {
        Ok(e) => Some(e),
        Err(EmuError::NotPermitted(why)) => skip(format!("needs root / CAP_NET_ADMIN: {why}")),
        Err(e) => panic!("{test}: bringing up the emulation failed: {e}"),
    }
}

/// Rank 0 sends the known messages, rank 1 echoes them; returns what the
/// capture saw and whether each rank sealed.
fn exchange(emu: &Emulation, seal: Seal) -> (Vec<u8>, Vec<Option<bool>>) {
    let cap = Capture::start(emu, 0).expect("capture in host 0");
    let msgs = vec![known(100), known(200_000)];
    let gate = Arc::new(Barrier::new(2));
    let sealed: Vec<Option<bool>> = std::thread::scope(|s| {
        let handles: Vec<_> = local_kv_world(2)
            .into_iter()
            .enumerate()
            .map(|(r, mut kv)| {
                let (msgs, gate) = (msgs.clone(), gate.clone());
                s.spawn(move || {
                    let addr = emu.host(r).expect("host").addrs[0];
                    let opts = SctpOptions { publish_addr: addr.into(), seal, ..test_opts(2) };
                    let mut t = emu.in_host(r, move || SctpTransport::connect(&mut kv, SECRET, opts)).expect("enter host").expect("connect");
                    let other = 1 - r as u32;
                    if r == 0 {
                        for m in &msgs {
                            send(&mut t, 1, 1, m);
                        }
                        let back: Vec<_> = recv_n(&mut t, 2, Duration::from_secs(20)).into_iter().map(|g| g.bytes).collect();
                        assert_eq!(back, msgs, "echoed intact");
                    } else {
                        let got: Vec<_> = recv_n(&mut t, 2, Duration::from_secs(20)).into_iter().map(|g| g.bytes).collect();
                        assert_eq!(got, msgs, "delivered intact");
                        for m in &got {
                            send(&mut t, 0, 1, m);
                        }
                    }
                    drain(&mut t);
                    let sealed = t.sealed(other);
                    gate.wait();
                    t.shutdown(Duration::from_secs(5)).unwrap();
                    sealed
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("rank panicked")).collect()
    });
    (cap.finish(), sealed)
}

#[test]
fn between_emulated_hosts_the_capture_holds_no_plaintext_unless_sealing_is_off() {
    let test = "between_emulated_hosts_the_capture_holds_no_plaintext_unless_sealing_is_off";
    let Some(emu) = up_or_skip(test) else { return };
    let (seen, sealed) = exchange(&emu, Seal::BetweenHosts);
    assert_eq!(sealed, vec![Some(true), Some(true)], "two hosts: sealed by default");
    assert!(seen.len() > 400_000, "the capture saw both ways ({} bytes)", seen.len());
    assert!(!shows(&seen), "plaintext of a sealed message on the wire");

    let (seen, sealed) = exchange(&emu, Seal::Never);
    assert_eq!(sealed, vec![Some(false), Some(false)]);
    assert!(shows(&seen), "with sealing off the capture must show the messages ({} bytes seen)", seen.len());
}
