//! An in-process transport: ranks are values in one process (threads or a
//! single test loop) joined by shared queues. It is what engine tests and the
//! conformance suite use when no sockets are wanted. It keeps per-channel
//! order, like every transport, and can refuse frames to exercise backpressure.

use crate::{Caps, Incoming, PeerId, SendStatus, Transport, TransportError};
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

struct Inbox {
    frames: Mutex<VecDeque<(PeerId, u16, Vec<u8>)>>,
    ready: Condvar,
    /// Readable while frames may wait: the runtime's progress thread sleeps
    /// on it outside its lock, as it does on a socket transport's fd.
    bell: OwnedFd,
}

impl Inbox {
    fn new() -> Inbox {
        // SAFETY: eventfd takes no pointers; a valid fd is owned at once.
        let fd = unsafe { libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC) };
        assert!(fd >= 0, "loopback: eventfd: {}", std::io::Error::last_os_error());
        // SAFETY: fd was just created and nothing else owns it.
        Inbox { frames: Mutex::new(VecDeque::new()), ready: Condvar::new(), bell: unsafe { OwnedFd::from_raw_fd(fd) } }
    }

    fn ring(&self) {
        let one = 1u64;
        // SAFETY: writes 8 bytes from `one` to our own eventfd.
        unsafe { libc::write(self.bell.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Quiets the bell before the queue is drained: a frame pushed after
    /// this rings it again.
    fn quiet(&self) {
        let mut v = 0u64;
        // SAFETY: reads 8 bytes into `v` from our own nonblocking eventfd.
        unsafe { libc::read(self.bell.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }
}

/// One rank's end of a loopback world.
pub struct Loopback {
    rank: PeerId,
    caps: Caps,
    inboxes: Arc<Vec<Inbox>>,
    /// Frames a peer's inbox may hold before `try_send` says WouldBlock.
    capacity: usize,
}

/// `n` connected loopback transports with `channels` channels per peer.
pub fn loopback_world(n: u32, channels: u16) -> Vec<Loopback> {
    let inboxes: Arc<Vec<Inbox>> = Arc::new((0..n).map(|_| Inbox::new()).collect());
    (0..n)
        .map(|rank| Loopback {
            rank,
            caps: Caps { name: "loopback", channels, max_frame: 256 * 1024, eager_limit_hint: 64 * 1024, reliable: true },
            inboxes: inboxes.clone(),
            capacity: usize::MAX,
        })
        .collect()
}

/// Two connected loopback transports.
pub fn loopback_pair(channels: u16) -> (Loopback, Loopback) {
    let mut v = loopback_world(2, channels);
    let b = v.pop().expect("two");
    let a = v.pop().expect("two");
    (a, b)
}

impl Loopback {
    /// Limits how many frames a peer's inbox may hold (backpressure tests).
    pub fn set_capacity(&mut self, frames: usize) {
        self.capacity = frames;
    }

    /// Overrides the largest frame accepted (fragmentation tests).
    pub fn set_max_frame(&mut self, bytes: usize) {
        self.caps.max_frame = bytes;
    }
}

impl Transport for Loopback {
    fn caps(&self) -> &Caps {
        &self.caps
    }
    fn rank(&self) -> PeerId {
        self.rank
    }
    fn size(&self) -> u32 {
        self.inboxes.len() as u32
    }

    fn try_send(&mut self, peer: PeerId, channel: u16, parts: &[&[u8]]) -> Result<SendStatus, TransportError> {
        let inbox = self.inboxes.get(peer as usize).ok_or(TransportError::NoSuchPeer(peer))?;
        if channel >= self.caps.channels {
            return Err(TransportError::NoSuchChannel { channel, channels: self.caps.channels });
        }
        let len: usize = parts.iter().map(|p| p.len()).sum();
        if len > self.caps.max_frame {
            return Err(TransportError::FrameTooLarge { len, max: self.caps.max_frame });
        }
        let mut q = inbox.frames.lock().expect("loopback inbox poisoned");
        if q.len() >= self.capacity {
            return Ok(SendStatus::WouldBlock);
        }
        q.push_back((self.rank, channel, parts.concat()));
        inbox.ready.notify_all();
        drop(q);
        inbox.ring();
        Ok(SendStatus::Sent)
    }

    fn poll_recv(&mut self, sink: &mut dyn FnMut(Incoming<'_>)) -> Result<usize, TransportError> {
        let inbox = &self.inboxes[self.rank as usize];
        inbox.quiet();
        let taken: Vec<_> = {
            let mut q = inbox.frames.lock().expect("loopback inbox poisoned");
            q.drain(..).collect()
        };
        for (peer, channel, bytes) in &taken {
            sink(Incoming::Frame { peer: *peer, channel: *channel, bytes });
        }
        Ok(taken.len())
    }

    fn flush(&mut self) -> Result<bool, TransportError> {
        Ok(false)
    }

    fn wait(&mut self, timeout: Duration) -> Result<(), TransportError> {
        let inbox = &self.inboxes[self.rank as usize];
        let q = inbox.frames.lock().expect("loopback inbox poisoned");
        if q.is_empty() {
            let _ = inbox.ready.wait_timeout(q, timeout).expect("loopback inbox poisoned");
        }
        Ok(())
    }

    fn readiness_fd(&self) -> Option<i32> {
        Some(self.inboxes[self.rank as usize].bell.as_raw_fd())
    }

    fn shutdown(&mut self, _timeout: Duration) -> Result<(), TransportError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_arrive_in_channel_order_with_their_source() {
        let (mut a, mut b) = loopback_pair(2);
        assert_eq!(a.try_send(1, 0, &[b"he", b"llo"]).unwrap(), SendStatus::Sent);
        assert_eq!(a.try_send(1, 1, &[b"x"]).unwrap(), SendStatus::Sent);
        let mut got = vec![];
        b.poll_recv(&mut |ev| {
            if let Incoming::Frame { peer, channel, bytes } = ev {
                got.push((peer, channel, bytes.to_vec()));
            }
        })
        .unwrap();
        assert_eq!(got, vec![(0, 0, b"hello".to_vec()), (0, 1, b"x".to_vec())]);
    }

    #[test]
    fn capacity_gives_backpressure_and_bad_arguments_are_errors() {
        let (mut a, _b) = loopback_pair(1);
        a.set_capacity(1);
        assert_eq!(a.try_send(1, 0, &[b"1"]).unwrap(), SendStatus::Sent);
        assert_eq!(a.try_send(1, 0, &[b"2"]).unwrap(), SendStatus::WouldBlock);
        assert!(matches!(a.try_send(5, 0, &[b"x"]), Err(TransportError::NoSuchPeer(5))));
        assert!(matches!(a.try_send(1, 3, &[b"x"]), Err(TransportError::NoSuchChannel { .. })));
        let big = vec![0u8; 300 * 1024];
        assert!(matches!(a.try_send(1, 0, &[&big]), Err(TransportError::FrameTooLarge { .. })));
    }
}
