//! The transport's one readiness fd: an epoll set holding the UDP socket and
//! a one-shot timerfd armed at the protocol's next deadline (an ACK to send,
//! a loss or probe timer, pacing), so a progress thread sleeping on it wakes
//! for timers too, and an idle rank sleeps without ticking.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

pub struct Poller {
    epoll: OwnedFd,
    timer: OwnedFd,
    armed: Option<Instant>,
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl Poller {
    pub fn new(udp: RawFd) -> io::Result<Poller> {
        // SAFETY: plain syscalls; the fds are wrapped in OwnedFd at once.
        unsafe {
            let epoll = OwnedFd::from_raw_fd(check(libc::epoll_create1(libc::EPOLL_CLOEXEC))?);
            let timer = OwnedFd::from_raw_fd(check(libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC))?);
            for fd in [udp, timer.as_raw_fd()] {
                let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: fd as u64 };
                check(libc::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev))?;
            }
            Ok(Poller { epoll, timer, armed: None })
        }
    }

    pub fn fd(&self) -> RawFd {
        self.epoll.as_raw_fd()
    }

    /// Arms the timer to fire at `at` (None disarms). Reading an expired
    /// timer clears its readiness.
    /// Called on every pump, so it makes no system call when nothing
    /// changed: the timer is read (cleared) only once it may have fired.
    pub fn arm(&mut self, now: Instant, at: Option<Instant>) {
        let fired = self.armed.is_some_and(|t| t <= now);
        if fired {
            let mut buf = [0u8; 8];
            // SAFETY: reading our own nonblocking timerfd into 8 bytes.
            unsafe { libc::read(self.timer.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        }
        if at == self.armed && (!fired || at.is_none()) {
            return;
        }
        let d = at.map_or(Duration::ZERO, |t| t.saturating_duration_since(now).max(Duration::from_micros(1)));
        let spec = libc::itimerspec {
            it_interval: libc::timespec { tv_sec: 0, tv_nsec: 0 },
            it_value: libc::timespec { tv_sec: d.as_secs() as libc::time_t, tv_nsec: d.subsec_nanos() as libc::c_long },
        };
        // SAFETY: timerfd_settime on our own fd with a valid spec.
        unsafe { libc::timerfd_settime(self.timer.as_raw_fd(), 0, &spec, std::ptr::null_mut()) };
        self.armed = at;
    }

    /// Sleeps until a datagram, the timer, or `timeout`.
    pub fn wait(&self, timeout: Duration) -> io::Result<()> {
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 2];
        // Round up so a sub-millisecond wait does not become a busy loop.
        let ms = (timeout.as_micros().div_ceil(1000)).min(i32::MAX as u128) as libc::c_int;
        // SAFETY: evs is a live array of the length passed.
        let r = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), evs.as_mut_ptr(), 2, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        Ok(())
    }
}
