//! The transport's one readiness fd: an epoll set holding the UDP sockets
//! (one per local address), a
//! periodic timerfd at usrsctp's tick (so a progress thread sleeping on it
//! also wakes for retransmission and heartbeat timers) and an eventfd that
//! says "frames are waiting for poll_recv" (a pump outside poll_recv may
//! take the datagram that carried them; nothing else would wake a sleeper).

use crate::stack::TICK;
use std::cell::Cell;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

/// How long after its due time an expiry of the tick may still be on its
/// way (timer slack), before we take it as read by someone else.
const TICK_SLACK: Duration = Duration::from_millis(2);

pub(crate) struct Poller {
    epoll: OwnedFd,
    timer: OwnedFd,
    ready: OwnedFd,
    /// Events `wait` takes at most: every fd of the set.
    nfds: usize,
    /// When the tick was armed: it expires at armed + k x TICK.
    armed: Instant,
    /// The next expiry not read yet.
    next_tick: Cell<Instant>,
}

fn check(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

impl Poller {
    pub fn new(udp_fds: &[RawFd]) -> io::Result<Poller> {
        // SAFETY: plain syscalls; the fds are wrapped in OwnedFd at once.
        unsafe {
            let epoll = OwnedFd::from_raw_fd(check(libc::epoll_create1(libc::EPOLL_CLOEXEC))?);
            let timer = OwnedFd::from_raw_fd(check(libc::timerfd_create(libc::CLOCK_MONOTONIC, libc::TFD_NONBLOCK | libc::TFD_CLOEXEC))?);
            let tick = libc::timespec { tv_sec: 0, tv_nsec: TICK.as_nanos() as libc::c_long };
            let spec = libc::itimerspec { it_interval: tick, it_value: tick };
            let armed = Instant::now();
            check(libc::timerfd_settime(timer.as_raw_fd(), 0, &spec, std::ptr::null_mut()))?;
            let ready = OwnedFd::from_raw_fd(check(libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC))?);
            for &fd in udp_fds.iter().chain([timer.as_raw_fd(), ready.as_raw_fd()].iter()) {
                let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: fd as u64 };
                check(libc::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev))?;
            }
            Ok(Poller { epoll, timer, ready, nfds: udp_fds.len() + 2, armed, next_tick: Cell::new(armed + TICK) })
        }
    }

    pub fn fd(&self) -> RawFd {
        self.epoll.as_raw_fd()
    }

    /// Sleeps until a datagram or a timer tick, at most `timeout`.
    pub fn wait(&self, timeout: Duration) -> io::Result<()> {
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 2 + crate::path::MAX_PATHS];
        let n = self.nfds.min(evs.len()) as libc::c_int;
        let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: evs is a live array of at least the length passed.
        let r = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), evs.as_mut_ptr(), n, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        self.clear_tick(Instant::now());
        Ok(())
    }

    /// Reads the tick timerfd once an expiry is due, so the epoll fd is not
    /// left readable. Every pump calls it: a caller polling `fd()` itself
    /// (the runtime does) never calls `wait`, and an expired timerfd left
    /// unread kept the epoll fd readable for ever, so those callers spun
    /// instead of sleeping. Reading only when an expiry is due costs one
    /// syscall a tick. True if an expiry was read (usrsctp's clock moved a
    /// tick: read its socket).
    ///
    /// The due time follows the timer's own phase (armed + k x TICK): a
    /// clear every TICK by our clock but out of phase with the timer left
    /// the fd readable between the timer's expiry and our next clear, on
    /// average half a tick, and the runtime's poll returned at once all that
    /// time (measured: 17 polls and 50 recvfrom per 1-byte round trip).
    pub fn clear_tick(&self, now: Instant) -> bool {
        let due = self.next_tick.get();
        if now < due {
            return false;
        }
        let mut expirations = [0u8; 8];
        // SAFETY: reads 8 bytes into a live buffer; EAGAIN when not expired.
        let read = unsafe { libc::read(self.timer.as_raw_fd(), expirations.as_mut_ptr().cast(), 8) } == 8;
        // Not read yet although due: timer slack (try again on the next
        // call) or read by `wait` already (give up after the slack).
        if read || now >= due + TICK_SLACK {
            let ticks = (now.duration_since(self.armed).as_nanos() / TICK.as_nanos()) as u32;
            self.next_tick.set(self.armed + TICK * (ticks + 1));
        }
        read
    }

    /// Makes the fd readable until `unsignal`: frames wait in the queue.
    pub fn signal(&self) {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live buffer to our eventfd.
        unsafe { libc::write(self.ready.as_raw_fd(), one.as_ptr().cast(), 8) };
    }

    pub fn unsignal(&self) {
        let mut v = [0u8; 8];
        // SAFETY: reads 8 bytes into a live buffer; EAGAIN when not set.
        unsafe { libc::read(self.ready.as_raw_fd(), v.as_mut_ptr().cast(), 8) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readable(fd: RawFd, ms: i32) -> bool {
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd for the duration of the call.
        unsafe { libc::poll(&mut p, 1, ms) == 1 }
    }

    #[test]
    fn the_tick_is_cleared_in_its_own_phase() {
        let p = Poller::new(&[]).unwrap();
        for _ in 0..3 {
            // Whenever the timer expires, the first clear after it makes the
            // fd quiet again, whatever our own clock says.
            assert!(readable(p.fd(), 1000), "the tick never fired");
            assert!(p.clear_tick(Instant::now()), "an expiry was due and not read");
            assert!(!readable(p.fd(), 0), "the fd stayed readable after the clear");
            assert!(!p.clear_tick(Instant::now()), "nothing is due until the next expiry");
        }
    }
}
