//! Shared by the emulator's integration tests: skipping without privileges,
//! one emulation at a time, and small UDP/TCP probes run inside hosts.
#![allow(dead_code)]

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use wanmpi_emulator::{EmuError, Emulation, Topology, UpOptions};

static SERIAL: Mutex<()> = Mutex::new(());

/// Timing tests must not share the two cores with each other.
pub fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn opts() -> UpOptions {
    UpOptions { forwarder_exe: Some(env!("CARGO_BIN_EXE_wanmpi-emu").into()), ..UpOptions::default() }
}

/// Bring up `topo`, or print why the test is skipped and return None.
pub fn up_or_skip(test: &str, topo: &Topology) -> Option<Emulation> {
    up_with_or_skip(test, topo, &opts())
}

/// `up_or_skip` with options of its own (e.g. an MTU).
pub fn up_with_or_skip(test: &str, topo: &Topology, opts: &UpOptions) -> Option<Emulation> {
    if skip_unprivileged(test) {
        return None;
    }
    match Emulation::up(topo, opts) {
        Ok(emu) => Some(emu),
        Err(EmuError::NotPermitted(why)) => {
            println!("SKIPPED {test}: needs root / CAP_NET_ADMIN because {why}");
            None
        }
        Err(e) => panic!("{test}: bringing up the emulation failed: {e}"),
    }
}

pub fn skip_unprivileged(test: &str) -> bool {
    match wanmpi_emulator::preflight() {
        Ok(()) => false,
        Err(EmuError::NotPermitted(why)) => {
            println!("SKIPPED {test}: needs root / CAP_NET_ADMIN because {why}");
            true
        }
        Err(e) => {
            println!("SKIPPED {test}: needs root / CAP_NET_ADMIN because {e}");
            true
        }
    }
}

pub fn topo(hosts: usize, profile: &str) -> Topology {
    let mut t = Topology::uniform(hosts, wanmpi_emulator::LinkProfile::parse(profile).expect("test profile"));
    t.seed = 12345;
    t
}

pub fn addr(emu: &Emulation, host: usize, port: u16) -> SocketAddr {
    SocketAddr::new(emu.host(host).expect("host").addrs[0].into(), port)
}

/// A UDP socket bound inside `host`.
pub fn udp_in(emu: &Emulation, host: usize, port: u16) -> UdpSocket {
    emu.in_host(host, move || UdpSocket::bind(("0.0.0.0", port))).expect("enter host").expect("bind udp")
}

/// Raise a socket's receive buffer past rmem_max (root only), so a burst is
/// not dropped by the receiving socket instead of by the emulated link.
pub fn big_rcvbuf(s: &UdpSocket, bytes: i32) {
    // SAFETY: setsockopt with a valid int option value.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&bytes as *const i32).cast(),
            std::mem::size_of::<i32>() as libc::socklen_t,
        );
    }
}

/// An echo server in `host` that stops when the returned flag is set.
pub fn echo_server(emu: &Emulation, host: usize, port: u16) -> (Arc<AtomicBool>, JoinHandle<()>) {
    let s = udp_in(emu, host, port);
    s.set_read_timeout(Some(Duration::from_millis(50))).expect("timeout");
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let h = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while !flag.load(Ordering::Relaxed) {
            if let Ok((n, from)) = s.recv_from(&mut buf) {
                let _ = s.send_to(&buf[..n], from);
            }
        }
    });
    (stop, h)
}

/// Round trip of one probe from `client` to `to`, or None after `limit`.
pub fn probe(client: &UdpSocket, to: SocketAddr, seq: u64, limit: Duration) -> Option<Duration> {
    // Poll instead of sleeping in recv: a sleeping prober's own wake-up
    // (tenths of a millisecond on a busy VM) would count as link delay.
    client.set_nonblocking(true).ok()?;
    let t0 = Instant::now();
    client.send_to(&seq.to_be_bytes(), to).ok()?;
    let mut buf = [0u8; 64];
    while t0.elapsed() < limit {
        std::hint::spin_loop();
        if let Ok((n, _)) = client.recv_from(&mut buf) {
            if n >= 8 && buf[..8] == seq.to_be_bytes() {
                return Some(t0.elapsed());
            }
        }
    }
    None
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Namespaces on the machine whose name starts with `prefix`.
pub fn netns_with_prefix(prefix: &str) -> Vec<String> {
    wanmpi_emulator::netns::list_netns().into_iter().filter(|n| n.starts_with(prefix)).collect()
}

/// Assert that nothing of emulation `id` remains: namespaces, state, forwarder.
pub fn assert_gone(id: &str, state_dir: &std::path::Path, pid: Option<i32>) {
    let left = netns_with_prefix(&format!("wemu{id}-"));
    assert!(left.is_empty(), "namespaces left behind: {left:?}");
    assert!(!state_dir.exists(), "state dir {} left behind", state_dir.display());
    if let Some(pid) = pid {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let alive = !stat.is_empty() && !stat.contains(") Z") && stat.contains("wanmpi-emu");
        assert!(!alive, "forwarder {pid} still running: {stat}");
    }
    let holders = holders_of(state_dir);
    assert!(holders.is_empty(), "holder processes left behind: {holders:?}");
}

/// Live `wanmpi-emu hold --state DIR` processes of the emulation in `dir`.
pub fn holders_of(dir: &std::path::Path) -> Vec<i32> {
    let want = format!("hold\0--state\0{}\0", dir.display());
    let live = |pid: i32| std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z"));
    std::fs::read_dir("/proc")
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
                .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(&want)))
                .filter(|pid| live(*pid))
                .collect()
        })
        .unwrap_or_default()
}

/// Tears down the emulation in a state directory when dropped (for tests
/// that detach or attach, so that a failing assertion still cleans up).
pub struct DownOnDrop(pub std::path::PathBuf);

impl Drop for DownOnDrop {
    fn drop(&mut self) {
        if self.0.exists() {
            let _ = wanmpi_emulator::down_dir(&self.0);
        }
    }
}
