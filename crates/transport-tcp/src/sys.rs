//! Thin safe wrappers over the few Linux calls std does not offer: epoll,
//! eventfd, timerfd, and a vectored send that never raises SIGPIPE.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// One epoll instance; level-triggered, so events not handled now are
/// reported again by the next wait.
pub(crate) struct Epoll(OwnedFd);

pub(crate) const READ: u32 = (libc::EPOLLIN | libc::EPOLLRDHUP) as u32;
pub(crate) const WRITE: u32 = libc::EPOLLOUT as u32;

impl Epoll {
    pub(crate) fn new() -> io::Result<Epoll> {
        // SAFETY: plain syscall; on success we own the returned fd.
        let fd = cvt(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        Ok(Epoll(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    fn ctl(&self, op: libc::c_int, fd: RawFd, token: u64, events: u32) -> io::Result<()> {
        let mut ev = libc::epoll_event { events, u64: token };
        // SAFETY: ev is a valid epoll_event for the duration of the call.
        cvt(unsafe { libc::epoll_ctl(self.0.as_raw_fd(), op, fd, &mut ev) }).map(|_| ())
    }

    pub(crate) fn add(&self, fd: RawFd, token: u64, events: u32) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_ADD, fd, token, events)
    }

    pub(crate) fn modify(&self, fd: RawFd, token: u64, events: u32) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_MOD, fd, token, events)
    }

    pub(crate) fn delete(&self, fd: RawFd) -> io::Result<()> {
        self.ctl(libc::EPOLL_CTL_DEL, fd, 0, 0)
    }

    /// Waits up to `timeout` (None = forever) and fills `out`. An
    /// interrupted wait returns no events.
    pub(crate) fn wait(&self, out: &mut Events, timeout: Option<Duration>) -> io::Result<()> {
        out.n = 0;
        // Round up so a sub-millisecond timeout does not become a busy poll.
        let ms = match timeout {
            None => -1,
            Some(t) => t.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as libc::c_int,
        };
        let cap = out.buf.len() as libc::c_int;
        // SAFETY: out.buf has room for `cap` events.
        let n = unsafe { libc::epoll_wait(self.0.as_raw_fd(), out.buf.as_mut_ptr(), cap, ms) };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(()) } else { Err(e) };
        }
        out.n = n as usize;
        Ok(())
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// Reusable room for the events one wait returns.
pub(crate) struct Events {
    buf: Vec<libc::epoll_event>,
    n: usize,
}

impl Events {
    pub(crate) fn with_capacity(cap: usize) -> Events {
        Events { buf: vec![libc::epoll_event { events: 0, u64: 0 }; cap.clamp(1, 1024)], n: 0 }
    }

    /// (token, event flags) of each ready fd.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        // Copy out of the (packed on x86_64) struct before use.
        self.buf[..self.n].iter().map(|ev| (ev.u64, ev.events))
    }
}

/// A counter fd that is readable while signalled: wakes an epoll waiter
/// when frames are queued to ourselves.
pub(crate) struct EventFd(OwnedFd);

impl EventFd {
    pub(crate) fn new() -> io::Result<EventFd> {
        // SAFETY: plain syscall; on success we own the returned fd.
        let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) })?;
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    pub(crate) fn signal(&self) {
        let one: u64 = 1;
        // SAFETY: writes 8 bytes from a valid u64. Failure only means the
        // counter is saturated, i.e. already signalled.
        unsafe { libc::write(self.0.as_raw_fd(), &one as *const u64 as *const libc::c_void, 8) };
    }

    pub(crate) fn clear(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a valid u64; EAGAIN means not signalled.
        unsafe { libc::read(self.0.as_raw_fd(), &mut v as *mut u64 as *mut libc::c_void, 8) };
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// A one-shot timer fd, readable once its deadline passed: wakes an epoll
/// waiter (and the runtime sleeping on the readiness fd) for the
/// transport's own deadlines (redials, handshakes, the outage limit).
pub(crate) struct TimerFd(OwnedFd);

impl TimerFd {
    pub(crate) fn new() -> io::Result<TimerFd> {
        // SAFETY: plain syscall; on success we own the returned fd.
        let fd = cvt(unsafe { libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC) })?;
        Ok(TimerFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Fires once after `after` (at least 1 µs); None disarms.
    pub(crate) fn set(&self, after: Option<Duration>) {
        let after = after.map(|d| d.max(Duration::from_micros(1)));
        let value = after.map_or(libc::timespec { tv_sec: 0, tv_nsec: 0 }, |d| libc::timespec {
            tv_sec: d.as_secs().min(i64::MAX as u64) as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        });
        let spec = libc::itimerspec { it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 }, it_value: value };
        // SAFETY: a valid itimerspec; a failure (impossible with these
        // arguments) would only leave the timer as it was.
        unsafe { libc::timerfd_settime(self.0.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
    }

    /// Consumes an expiry, so the fd is no longer readable.
    pub(crate) fn clear(&self) {
        let mut v: u64 = 0;
        // SAFETY: reads 8 bytes into a valid u64; EAGAIN means not expired.
        unsafe { libc::read(self.0.as_raw_fd(), &mut v as *mut u64 as *mut libc::c_void, 8) };
    }

    pub(crate) fn raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

/// Largest number of buffers one sendmsg takes (Linux UIO_MAXIOV).
pub(crate) const MAX_IOV: usize = 1024;

/// Sends `bufs` in one sendmsg, nonblocking, without SIGPIPE (a C program
/// linking us may not ignore it). Returns the bytes the kernel took.
pub(crate) fn send_vectored(fd: RawFd, bufs: &[&[u8]]) -> io::Result<usize> {
    debug_assert!(bufs.len() <= MAX_IOV);
    let iov: Vec<libc::iovec> = bufs.iter().map(|b| libc::iovec { iov_base: b.as_ptr() as *mut libc::c_void, iov_len: b.len() }).collect();
    // SAFETY: msghdr is plain data; zeroed is a valid empty header.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = iov.as_ptr() as *mut libc::iovec;
    msg.msg_iovlen = iov.len() as _;
    loop {
        // SAFETY: msg points to iovecs borrowed from `bufs`, alive for the call.
        let n = unsafe { libc::sendmsg(fd, &msg, libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT) };
        if n >= 0 {
            return Ok(n as usize);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}
