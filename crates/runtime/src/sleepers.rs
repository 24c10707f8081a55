//! Blocked calls asleep on the transport, and how to wake them. A call that
//! has spun its rounds sleeps on the transport's readiness fd and on an
//! eventfd of its own thread; whoever takes arrivals meanwhile (the
//! progress thread, or another thread of the program) may have completed
//! what it sleeps on, and the transport's fd will not fire again for them,
//! so every progress step that took something rings each registered
//! sleeper's eventfd. One eventfd per thread, not one per process: a
//! shared one was read back by whichever sleeper polled first, and the
//! others slept on to their timeout.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// A nonblocking eventfd, or None if the system has none to give.
fn eventfd() -> Option<OwnedFd> {
    // SAFETY: plain syscall; the fd is owned at once.
    let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
    // SAFETY: fd is a fresh descriptor we own.
    (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd) })
}

thread_local! {
    /// This thread's wake-up, for as long as the thread lives.
    static OWN: Option<OwnedFd> = eventfd();
}

#[derive(Default)]
pub(crate) struct Sleepers {
    /// How many are registered: read on every progress step that took
    /// arrivals, so the list's lock is taken only when someone sleeps.
    count: AtomicUsize,
    fds: Mutex<Vec<RawFd>>,
}

impl Sleepers {
    /// Registers this thread as about to sleep; its wake-up fd is in the
    /// answer. The caller must then look once more under the runtime's lock
    /// before sleeping: a thread that took its message before this call
    /// could not know to ring (one after it will: the count it reads under
    /// that lock includes this one).
    pub(crate) fn announce(&self) -> Option<Asleep<'_>> {
        let fd = OWN.with(|w| w.as_ref().map(|w| w.as_raw_fd()))?;
        self.fds.lock().unwrap_or_else(|p| p.into_inner()).push(fd);
        self.count.fetch_add(1, Ordering::Relaxed);
        // A ring left from an earlier sleep: drained after registering, so
        // that one meant for this sleep is either still readable or its
        // cause is seen by the look that follows.
        let mut v = 0u64;
        // SAFETY: reads 8 bytes into v from our own nonblocking eventfd.
        unsafe { libc::read(fd, (&mut v as *mut u64).cast(), 8) };
        Some(Asleep { sleepers: self, fd })
    }

    /// Rings every registered sleeper (after arrivals were taken).
    pub(crate) fn wake_all(&self) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let one = 1u64;
        for &fd in self.fds.lock().unwrap_or_else(|p| p.into_inner()).iter() {
            // SAFETY: writes 8 bytes to a registered thread's live eventfd (it
            // unregisters before its thread can end); a full counter only fails.
            unsafe { libc::write(fd, (&one as *const u64).cast(), 8) };
        }
    }
}

/// A registered sleeper; unregisters when dropped.
pub(crate) struct Asleep<'a> {
    sleepers: &'a Sleepers,
    fd: RawFd,
}

impl Asleep<'_> {
    pub(crate) fn fd(&self) -> RawFd {
        self.fd
    }
}

impl Drop for Asleep<'_> {
    fn drop(&mut self) {
        let mut fds = self.sleepers.fds.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = fds.iter().position(|&f| f == self.fd) {
            fds.swap_remove(i);
        }
        self.sleepers.count.fetch_sub(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn readable(fd: RawFd) -> bool {
        let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd, no wait.
        unsafe { libc::poll(&mut p, 1, 0) };
        p.revents & libc::POLLIN != 0
    }

    #[test]
    fn every_registered_sleeper_is_rung_and_none_reads_another_ones_ring() {
        let s = Sleepers::default();
        s.wake_all(); // nobody registered: nothing to ring
        std::thread::scope(|sc| {
            let (tx, rx) = std::sync::mpsc::channel();
            for _ in 0..3 {
                let (s, tx) = (&s, tx.clone());
                sc.spawn(move || {
                    let a = s.announce().expect("eventfd");
                    tx.send(()).unwrap();
                    // Woken by the ring below, within the bound.
                    let mut p = libc::pollfd { fd: a.fd(), events: libc::POLLIN, revents: 0 };
                    // SAFETY: one valid pollfd.
                    unsafe { libc::poll(&mut p, 1, 5000) };
                    assert!(p.revents & libc::POLLIN != 0, "not rung within 5 s");
                });
            }
            for _ in 0..3 {
                rx.recv().unwrap();
            }
            s.wake_all();
        });
        assert_eq!(s.count.load(Ordering::Relaxed), 0);
        assert!(s.fds.lock().unwrap().is_empty());
        // A ring left over is drained by the next announcement.
        let a = s.announce().unwrap();
        s.wake_all();
        let fd = a.fd();
        drop(a);
        assert!(readable(fd));
        let a = s.announce().unwrap();
        assert!(!readable(a.fd()), "an old ring wakes no new sleep");
    }
}
