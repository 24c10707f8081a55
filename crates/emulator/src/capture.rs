//! A packet capture inside one emulated host: what crosses its links, as
//! raw IP packets, for tests that must show what an eavesdropper on the path
//! would read (sealed traffic holds no plaintext). An `AF_PACKET` socket
//! made inside the host's namespace sees every packet in or out of it;
//! reading happens on a thread of its own until [`Capture::finish`].

use crate::{EmuError, Emulation, Result};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The most a capture keeps, and for how long it reads at most: a test that
/// forgets to finish must not grow without bound.
const MAX_BYTES: usize = 256 << 20;
const MAX_TIME: Duration = Duration::from_secs(300);

/// A running capture; [`Capture::finish`] stops it and returns the bytes.
pub struct Capture {
    stop: Arc<AtomicBool>,
    reader: Option<JoinHandle<Vec<u8>>>,
}

impl Capture {
    /// Starts capturing every packet of host `index` of `emu`.
    pub fn start(emu: &Emulation, index: usize) -> Result<Capture> {
        let fd = emu.in_host(index, packet_socket)??;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let reader = std::thread::Builder::new()
            .name("emu-capture".into())
            .spawn(move || read_until(fd, &flag))
            .map_err(|e| EmuError::io("starting the capture thread", e))?;
        Ok(Capture { stop, reader: Some(reader) })
    }

    /// Stops reading and returns the packets seen, one after the other
    /// (IP headers included).
    pub fn finish(mut self) -> Vec<u8> {
        self.stop.store(true, SeqCst);
        self.reader.take().and_then(|r| r.join().ok()).unwrap_or_default()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        self.stop.store(true, SeqCst);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

/// An `AF_PACKET` socket of the calling thread's namespace, every protocol,
/// with reads that time out (so the reader sees its stop flag).
fn packet_socket() -> Result<OwnedFd> {
    let all = (libc::ETH_P_ALL as u16).to_be() as libc::c_int;
    // SAFETY: plain socket(2); the fd is owned below.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, all) };
    if fd < 0 {
        return Err(EmuError::io("opening an AF_PACKET socket", std::io::Error::last_os_error()));
    }
    // SAFETY: a fresh fd we own.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let tv = libc::timeval { tv_sec: 0, tv_usec: 50_000 };
    // SAFETY: setsockopt with a timeval of the size given, on our fd.
    let r = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            std::mem::size_of::<libc::timeval>() as libc::socklen_t,
        )
    };
    if r != 0 {
        return Err(EmuError::io("setting the capture's read timeout", std::io::Error::last_os_error()));
    }
    // Room for bursts while the reader waits for a core on a loaded
    // machine (the default, about 200 KiB, drops packets a test counts
    // on). FORCE passes net.core.rmem_max as root; otherwise the default.
    let room: libc::c_int = 16 << 20;
    // SAFETY: setsockopt with an int of the size given, on our fd.
    unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&room as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    Ok(fd)
}

fn read_until(fd: OwnedFd, stop: &AtomicBool) -> Vec<u8> {
    let mut seen = vec![];
    let mut buf = vec![0u8; 70_000];
    let deadline = Instant::now() + MAX_TIME;
    while !stop.load(SeqCst) && Instant::now() < deadline && seen.len() < MAX_BYTES {
        // SAFETY: reading into our own buffer of that size.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n > 0 {
            seen.extend_from_slice(&buf[..n as usize]);
        }
    }
    seen
}
