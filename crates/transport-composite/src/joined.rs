//! A job's transport with processes of other jobs attached: what
//! MPI_Comm_spawn and MPI_Comm_accept/connect leave behind.
//!
//! The job's own transport (the base) keeps ids `0..size` untouched, so its
//! frames carry no prefix and its peers see nothing change. Each join adds
//! a part: a transport connected among the processes of both groups (its
//! own ranks), of which only the other group's processes are new peers
//! here. They take the next free ids, in the order the join lists them.
//! A peer lives on exactly one part, so each (peer, channel) stays ordered
//! without the composite's sequence prefix.

use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Duration;

use wanmpi_transport::{Caps, Incoming, PathStats, PeerId, SendStatus, Transport, TransportError};

use crate::composite::{epoll_of, epoll_wait};

/// One join's transport and which of its ranks are our new peers.
struct Part {
    transport: Box<dyn Transport>,
    /// The part's rank of each of our ids `first..first + ranks.len()`.
    ranks: Vec<PeerId>,
    first: PeerId,
    /// Our id of each of the part's ranks (None: same-group processes,
    /// reached through the base).
    ours: Vec<Option<PeerId>>,
}

pub struct Joined {
    base: Box<dyn Transport>,
    base_size: u32,
    parts: Vec<Part>,
    /// For each id past the base: its part.
    part_of: Vec<usize>,
    /// Ready when the base or any part is: rebuilt at each attach.
    epoll: OwnedFd,
    blind: bool,
}

impl Joined {
    /// Wraps a job's transport; no peer changes until `attach`.
    pub fn new(base: Box<dyn Transport>) -> Result<Joined, TransportError> {
        let (epoll, blind) = epoll_of(std::slice::from_ref(&base))?;
        let base_size = base.size();
        Ok(Joined { base, base_size, parts: Vec::new(), part_of: Vec::new(), epoll, blind })
    }

    /// (`Transport::attach`) Adds a connected transport whose ranks `ranks` (in order) become our
    /// peers `size()..size() + ranks.len()`; returns the first of them. Its
    /// frames must fit ours (the engine sizes fragments by the base's caps).
    fn attach_part(&mut self, transport: Box<dyn Transport>, ranks: Vec<PeerId>) -> Result<PeerId, TransportError> {
        if transport.caps().max_frame < self.base.caps().max_frame {
            return Err(TransportError::Setup(format!(
                "a joined transport takes frames of {} bytes, this job sends up to {}",
                transport.caps().max_frame,
                self.base.caps().max_frame
            )));
        }
        if let Some(r) = ranks.iter().find(|&&r| r >= transport.size() || r == transport.rank()) {
            return Err(TransportError::NoSuchPeer(*r));
        }
        let first = self.size();
        let mut ours = vec![None; transport.size() as usize];
        for (i, &r) in ranks.iter().enumerate() {
            ours[r as usize] = Some(first + i as PeerId);
        }
        if let Some(fd) = transport.readiness_fd() {
            let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: fd as u64 };
            // SAFETY: adding a live fd of a transport we now own to our epoll set.
            if unsafe { libc::epoll_ctl(self.epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) } != 0 {
                return Err(std::io::Error::last_os_error().into());
            }
        } else {
            self.blind = true;
        }
        let index = self.parts.len();
        self.part_of.extend(std::iter::repeat_n(index, ranks.len()));
        self.parts.push(Part { transport, ranks, first, ours });
        Ok(first)
    }

    fn route(&self, peer: PeerId) -> Option<(usize, PeerId)> {
        let i = *self.part_of.get((peer - self.base_size) as usize)?;
        let p = &self.parts[i];
        Some((i, p.ranks[(peer - p.first) as usize]))
    }
}

impl Transport for Joined {
    fn caps(&self) -> &Caps {
        self.base.caps()
    }

    fn rank(&self) -> PeerId {
        self.base.rank()
    }

    fn size(&self) -> u32 {
        self.base_size + self.part_of.len() as u32
    }

    fn try_send(&mut self, peer: PeerId, channel: u16, parts: &[&[u8]]) -> Result<SendStatus, TransportError> {
        if peer < self.base_size {
            return self.base.try_send(peer, channel, parts);
        }
        let (i, rank) = self.route(peer).ok_or(TransportError::NoSuchPeer(peer))?;
        let t = &mut self.parts[i].transport;
        let sub = channel % t.caps().channels.max(1);
        t.try_send(rank, sub, parts)
    }

    fn poll_recv(&mut self, sink: &mut dyn FnMut(Incoming<'_>)) -> Result<usize, TransportError> {
        let mut n = self.base.poll_recv(sink)?;
        for p in &mut self.parts {
            let ours = &p.ours;
            p.transport.poll_recv(&mut |ev| {
                // Frames from our own group never come this way; a process
                // not in `ours` is ignored.
                let mapped = match ev {
                    Incoming::Frame { peer, channel, bytes } => {
                        ours.get(peer as usize).copied().flatten().map(|id| Incoming::Frame { peer: id, channel, bytes })
                    }
                    Incoming::PeerLost { peer, reason } => {
                        ours.get(peer as usize).copied().flatten().map(|id| Incoming::PeerLost { peer: id, reason })
                    }
                };
                if let Some(ev) = mapped {
                    n += 1;
                    sink(ev);
                }
            })?;
        }
        Ok(n)
    }

    fn flush(&mut self) -> Result<bool, TransportError> {
        let mut busy = self.base.flush()?;
        for p in &mut self.parts {
            busy |= p.transport.flush()?;
        }
        Ok(busy)
    }

    fn wait(&mut self, timeout: Duration) -> Result<(), TransportError> {
        if self.parts.is_empty() {
            return self.base.wait(timeout);
        }
        if !self.prepare_sleep() {
            return Ok(());
        }
        epoll_wait(&self.epoll, if self.blind { timeout.min(Duration::from_millis(1)) } else { timeout })
    }

    fn readiness_fd(&self) -> Option<i32> {
        if self.parts.is_empty() {
            return self.base.readiness_fd();
        }
        (!self.blind).then(|| self.epoll.as_raw_fd())
    }

    fn prepare_sleep(&mut self) -> bool {
        let mut may = self.base.prepare_sleep();
        for p in &mut self.parts {
            may &= p.transport.prepare_sleep();
        }
        may
    }

    /// The job's own processes only (the express receive's way in).
    fn take_next_from(&mut self, peer: PeerId, take: &mut dyn FnMut(&[u8]) -> bool) -> Option<bool> {
        if peer < self.base_size {
            return self.base.take_next_from(peer, take);
        }
        None
    }

    fn serves(&self, peer: PeerId) -> bool {
        if peer < self.base_size {
            return self.base.serves(peer);
        }
        self.route(peer).is_some()
    }

    /// Only the job's own processes: a joined job's memory is not read.
    fn local_process(&self, peer: PeerId) -> Option<u32> {
        (peer < self.base_size).then(|| self.base.local_process(peer)).flatten()
    }

    fn tally(&self, peer: PeerId, sink: &mut wanmpi_transport::TallySink<'_>) {
        if peer < self.base_size {
            return self.base.tally(peer, sink);
        }
        if let Some((i, rank)) = self.route(peer) {
            self.parts[i].transport.tally(rank, sink);
        }
    }

    fn path(&self, peer: PeerId) -> Option<PathStats> {
        if peer < self.base_size {
            return self.base.path(peer);
        }
        let (i, rank) = self.route(peer)?;
        self.parts[i].transport.path(rank)
    }

    fn wants_progress_thread(&self) -> bool {
        self.base.wants_progress_thread() || self.parts.iter().any(|p| p.transport.wants_progress_thread())
    }

    fn attach(&mut self, part: Box<dyn Transport>, ranks: Vec<PeerId>) -> Result<PeerId, TransportError> {
        self.attach_part(part, ranks)
    }

    fn peer_failed(&mut self, peer: PeerId) {
        if peer < self.base_size {
            return self.base.peer_failed(peer);
        }
        if let Some((i, rank)) = self.route(peer) {
            self.parts[i].transport.peer_failed(rank);
        }
    }

    fn shutdown(&mut self, timeout: Duration) -> Result<(), TransportError> {
        let each = timeout / (1 + self.parts.len() as u32);
        let mut first_error = None;
        for p in &mut self.parts {
            if let Err(e) = p.transport.shutdown(each) {
                first_error.get_or_insert(e);
            }
        }
        self.base.shutdown(each)?;
        first_error.map_or(Ok(()), Err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wanmpi_transport::loopback_world;

    fn drain(t: &mut dyn Transport) -> Vec<(PeerId, Vec<u8>)> {
        let mut got = vec![];
        t.poll_recv(&mut |ev| {
            if let Incoming::Frame { peer, bytes, .. } = ev {
                got.push((peer, bytes.to_vec()));
            }
        })
        .expect("poll");
        got
    }

    #[test]
    fn attached_ranks_become_new_peers_both_ways() {
        // Job A: ranks 0, 1. Job B: rank 0. The joint world: A0, A1, B0.
        let mut a = loopback_world(2, 1);
        let mut joint = loopback_world(3, 1);
        let b0_joint = joint.pop().expect("B0");
        let a1_joint = joint.pop().expect("A1");
        let a0_joint = joint.pop().expect("A0");
        let a1 = a.pop().expect("A1");
        let mut a0 = Joined::new(Box::new(a.pop().expect("A0"))).expect("wrap");
        assert_eq!(a0.attach(Box::new(a0_joint), vec![2]).expect("attach"), 2);
        let b = loopback_world(1, 1).pop().expect("B");
        let mut b0 = Joined::new(Box::new(b)).expect("wrap");
        // From B's side the two A processes are its peers 1 and 2.
        assert_eq!(b0.attach(Box::new(b0_joint), vec![0, 1]).expect("attach"), 1);
        assert_eq!((a0.size(), b0.size()), (3, 3));
        assert!(a0.try_send(2, 0, &[b"to b"]).is_ok());
        assert_eq!(drain(&mut b0), vec![(1, b"to b".to_vec())]);
        assert!(b0.try_send(1, 0, &[b"back"]).is_ok());
        assert_eq!(drain(&mut a0), vec![(2, b"back".to_vec())]);
        // The base is untouched: A0 still reaches A1 as peer 1.
        let mut a1 = a1;
        assert!(a0.try_send(1, 0, &[b"inside"]).is_ok());
        assert_eq!(drain(&mut a1), vec![(0, b"inside".to_vec())]);
        drop(a1_joint);
        assert!(matches!(a0.try_send(3, 0, &[b"x"]), Err(TransportError::NoSuchPeer(3))));
    }

    #[test]
    fn a_part_that_names_itself_or_a_missing_rank_is_refused() {
        let mut joint = loopback_world(2, 1);
        let mut j = Joined::new(Box::new(loopback_world(1, 1).pop().expect("one"))).expect("wrap");
        let me = joint.remove(0);
        assert!(j.attach(Box::new(me), vec![0]).is_err());
        let mut joint = loopback_world(2, 1);
        assert!(j.attach(Box::new(joint.remove(0)), vec![5]).is_err());
        assert_eq!(j.size(), 1);
    }
}
