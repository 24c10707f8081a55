//! Thin safe wrappers over the Linux calls the forwarder's loop needs:
//! epoll, timerfd, signalfd, and non-blocking read/write on raw fds.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Nanoseconds on CLOCK_MONOTONIC (the clock timerfd uses).
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a valid out-pointer; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub struct Epoll(OwnedFd);

impl Epoll {
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; the fd is owned from here on.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Level-triggered readability of `fd`, reported with `token`.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: token };
        // SAFETY: ev is valid for the call.
        cvt(unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        Ok(())
    }

    pub fn del(&self, fd: RawFd) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: ev is valid for the call (ignored by the kernel for DEL).
        cvt(unsafe { libc::epoll_ctl(self.0.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) })?;
        Ok(())
    }

    /// Wait for events; an interrupted wait returns 0 events.
    pub fn wait(&self, events: &mut [libc::epoll_event], timeout_ms: i32) -> io::Result<usize> {
        // SAFETY: the buffer length bounds what the kernel writes.
        let n = unsafe { libc::epoll_wait(self.0.as_raw_fd(), events.as_mut_ptr(), events.len() as libc::c_int, timeout_ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(0) } else { Err(e) };
        }
        Ok(n as usize)
    }
}

/// A CLOCK_MONOTONIC timer with nanosecond deadlines (epoll's own timeout is
/// only milliseconds, too coarse for a +-1 ms RTT budget).
pub struct Timer {
    fd: OwnedFd,
    armed_at: Option<u64>,
}

impl Timer {
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; the fd is owned from here on.
        let fd = cvt(unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) })?;
        Ok(Timer { fd: unsafe { OwnedFd::from_raw_fd(fd) }, armed_at: None })
    }

    pub fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Fire at `deadline` (absolute ns), or never for None. No syscall when
    /// the deadline is unchanged.
    pub fn set(&mut self, deadline: Option<u64>) -> io::Result<()> {
        if deadline == self.armed_at {
            return Ok(());
        }
        let at = deadline.unwrap_or(0).max(if deadline.is_some() { 1 } else { 0 });
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec { tv_sec: (at / 1_000_000_000) as _, tv_nsec: (at % 1_000_000_000) as _ },
        };
        // SAFETY: spec is valid; a zero it_value disarms.
        cvt(unsafe { libc::timerfd_settime(self.fd.as_raw_fd(), libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut()) })?;
        self.armed_at = deadline;
        Ok(())
    }

    /// Consume an expiry; the caller then decides the next deadline.
    pub fn ack(&mut self) {
        let mut buf = [0u8; 8];
        let _ = read_fd(self.fd.as_raw_fd(), &mut buf);
        self.armed_at = None;
    }
}

/// SIGTERM, SIGINT and SIGUSR1 as readable events instead of handlers.
pub struct Signals(OwnedFd);

impl Signals {
    pub fn new() -> io::Result<Self> {
        // SAFETY: the sigset is initialised by sigemptyset before use; the
        // forwarder is single-threaded, so blocking here covers the process.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for s in [libc::SIGTERM, libc::SIGINT, libc::SIGUSR1, libc::SIGHUP] {
                libc::sigaddset(&mut set, s);
            }
            cvt(libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()))?;
            let fd = cvt(libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC))?;
            Ok(Signals(OwnedFd::from_raw_fd(fd)))
        }
    }

    pub fn fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }

    /// The next pending signal number, if any.
    pub fn next(&self) -> Option<i32> {
        // SAFETY: signalfd_siginfo is plain data; the read fills it or fails.
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        let buf = unsafe { std::slice::from_raw_parts_mut(&mut info as *mut _ as *mut u8, size) };
        match read_fd(self.0.as_raw_fd(), buf) {
            Ok(n) if n == size => Some(info.ssi_signo as i32),
            _ => None,
        }
    }
}

pub fn read_fd(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

pub fn write_fd(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: buf is valid for buf.len() bytes.
    let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

/// Ask the kernel for precise, prompt wake-ups: 1 ns timer slack (default
/// 50 us) and a higher CPU priority (nice -10, if permitted), because on a
/// loaded machine a late wake-up of the forwarder is added delay on every link.
pub fn prompt_wakeups() {
    // SAFETY: prctl/setpriority with integer arguments; failure is harmless.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
        libc::setpriority(libc::PRIO_PROCESS, 0, -10);
    }
}
