//! What crosses the network between two hosts (needs root): two emulated
//! hosts (198.18.0.0/15, 1 ms one way), one rank on each with the default
//! sealing rule, a packet capture (an AF_PACKET socket inside host 0's
//! namespace, which sees every packet of its emulated link) while rank 0
//! sends known messages and rank 1 echoes them. Between hosts the frames
//! are sealed by default and the capture holds no piece of the messages;
//! with WANMPI_SCTP_ENCRYPT=0 (`Seal::Never`) it does, which shows the
//! capture sees the bytes.
//!
//! Skips (printing why) when not root or when the forwarder binary
//! (`wanmpi-emu`, `cargo build --release -p wanmpi-emulator`) is missing.

mod common;
use common::{drain, recv_n, send, test_opts, SECRET};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};
use wanmpi_bootstrap::local_kv_world;
use wanmpi_emulator::{EmuError, Emulation, Topology, UpOptions};
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

/// A packet socket in host 0's namespace: every packet in or out of it.
fn capture_socket(emu: &Emulation) -> OwnedFd {
    let fd = emu
        .in_host(0, || {
            // SAFETY: plain socket(2); the fd is owned below.
            unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM, (libc::ETH_P_ALL as u16).to_be() as libc::c_int) }
        })
        .expect("enter host 0");
    assert!(fd >= 0, "AF_PACKET socket: {}", std::io::Error::last_os_error());
    // SAFETY: a fresh fd we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let tv = libc::timeval { tv_sec: 0, tv_usec: 50_000 };
    // SAFETY: setsockopt with a timeval on our fd: reads stay bounded.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as u32,
        )
    };
    assert_eq!(r, 0);
    fd
}

/// Reads packets until `stop`; returns every byte seen.
fn capture(fd: OwnedFd, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut seen = vec![];
        let mut buf = vec![0u8; 70_000];
        let deadline = Instant::now() + Duration::from_secs(60);
        while !stop.load(SeqCst) && Instant::now() < deadline {
            // SAFETY: reading into our own buffer of that size.
            let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n > 0 {
                seen.extend_from_slice(&buf[..n as usize]);
            }
        }
        seen
    })
}

/// Rank 0 sends the known messages, rank 1 echoes them; returns what the
/// capture saw and whether each rank sealed.
fn exchange(emu: &Emulation, seal: Seal) -> (Vec<u8>, Vec<Option<bool>>) {
    let stop = Arc::new(AtomicBool::new(false));
    let cap = capture(capture_socket(emu), stop.clone());
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
    stop.store(true, SeqCst);
    (cap.join().expect("capture thread"), sealed)
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
