//! A test-only [`CollComm`]: one thread per rank, messages over channels,
//! matched by (source, tag) in the order each sender sent them — the
//! guarantees the real point-to-point layer gives collectives.

use std::collections::{HashMap, VecDeque};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::thread;
use std::time::Duration;

use super::comm::{CollComm, CollError, RecvItem, SendItem};

/// How long a receive waits before the test is declared hung.
const RECV_TIMEOUT: Duration = Duration::from_secs(20);

struct Msg {
    from: usize,
    tag: i32,
    data: Vec<u8>,
    /// The sender's `wan_depth` when it sent this.
    wan_depth: usize,
}

/// A message's data and the `wan_depth` it was sent at, waiting for its
/// receive.
type Early = (Vec<u8>, usize);

/// What one rank's run cost, counted by its `ThreadComm`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    /// `exchange` calls: sequential steps on this rank.
    pub exchanges: usize,
    /// Exchanges that received from another site.
    pub wan_exchanges: usize,
    /// Messages this rank received from another site.
    pub wan_recvs: usize,
    /// Messages this rank sent to another site.
    pub wan_sends: usize,
    /// The most site-to-site messages on any causal chain that ends at this
    /// rank (a Lamport clock that ticks only across sites): the WAN
    /// crossings on this rank's critical path.
    pub wan_depth: usize,
}

pub(crate) struct ThreadComm {
    rank: usize,
    size: usize,
    peers: Vec<Sender<Msg>>,
    inbox: Receiver<Msg>,
    /// Arrived but not yet matched, per (source, tag), in arrival order.
    unexpected: HashMap<(usize, i32), VecDeque<Early>>,
    /// Number of `exchange` calls, i.e. sequential steps of the algorithm.
    pub exchanges: usize,
    /// Site of every rank (empty: one site).
    sites: Vec<usize>,
    /// Exchanges that received from another site: WAN crossings on this
    /// rank's path.
    pub wan_exchanges: usize,
    wan_recvs: usize,
    wan_sends: usize,
    wan_depth: usize,
}

impl ThreadComm {
    fn take(&mut self, peer: usize, tag: i32) -> Result<Vec<u8>, CollError> {
        if let Some((data, depth)) = self.unexpected.get_mut(&(peer, tag)).and_then(VecDeque::pop_front) {
            self.note_match(peer, depth);
            return Ok(data);
        }
        loop {
            let m = self
                .inbox
                .recv_timeout(RECV_TIMEOUT)
                .map_err(|e| CollError::Comm(format!("rank {}: nothing from rank {peer} with tag {tag}: {e}", self.rank)))?;
            if (m.from, m.tag) == (peer, tag) {
                self.note_match(peer, m.wan_depth);
                return Ok(m.data);
            }
            self.unexpected.entry((m.from, m.tag)).or_default().push_back((m.data, m.wan_depth));
        }
    }

    /// Advances the WAN clock for a message from `from` sent at `depth`,
    /// once a receive took it: what this rank does next may depend on it
    /// (a message that merely arrived early does not count yet).
    fn note_match(&mut self, from: usize, depth: usize) {
        let cross = self.site_of(from) != self.site_of(self.rank);
        self.wan_depth = self.wan_depth.max(depth + usize::from(cross));
        self.wan_recvs += usize::from(cross);
    }

    fn counts(&self) -> Counts {
        Counts {
            exchanges: self.exchanges,
            wan_exchanges: self.wan_exchanges,
            wan_recvs: self.wan_recvs,
            wan_sends: self.wan_sends,
            wan_depth: self.wan_depth,
        }
    }

    /// Messages that reached this rank and were never received, as
    /// (source, tag, length).
    fn leftovers(mut self) -> Vec<(usize, i32, usize)> {
        while let Ok(m) = self.inbox.try_recv() {
            self.unexpected.entry((m.from, m.tag)).or_default().push_back((m.data, m.wan_depth));
        }
        let mut out: Vec<_> =
            self.unexpected.into_iter().flat_map(|((from, tag), q)| q.into_iter().map(move |(d, _)| (from, tag, d.len()))).collect();
        out.sort();
        out
    }
}

impl CollComm for ThreadComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.size
    }

    fn site_of(&self, rank: usize) -> usize {
        self.sites.get(rank).copied().unwrap_or(0)
    }

    fn exchange(&mut self, sends: &[SendItem<'_>], recvs: &mut [RecvItem<'_>]) -> Result<(), CollError> {
        self.exchanges += 1;
        if recvs.iter().any(|r| self.site_of(r.peer) != self.site_of(self.rank)) {
            self.wan_exchanges += 1;
        }
        let depth = self.wan_depth;
        for s in sends {
            let peer = self.peers.get(s.peer).ok_or_else(|| CollError::Comm(format!("no rank {}", s.peer)))?;
            self.wan_sends += usize::from(self.site_of(s.peer) != self.site_of(self.rank));
            peer.send(Msg { from: self.rank, tag: s.tag, data: s.buf.to_vec(), wan_depth: depth })
                .map_err(|_| CollError::Comm(format!("rank {} is gone", s.peer)))?;
        }
        for r in recvs.iter_mut() {
            if r.peer >= self.size {
                return Err(CollError::Comm(format!("no rank {}", r.peer)));
            }
            let data = self.take(r.peer, r.tag)?;
            if data.len() != r.buf.len() {
                return Err(CollError::LengthMismatch { peer: r.peer, expected: r.buf.len(), got: data.len() });
            }
            r.buf.copy_from_slice(&data);
        }
        Ok(())
    }
}

/// A `ThreadComm` that hides its sites from the algorithms (the default
/// `site_of`: one site), so a test can run the flat algorithms on a
/// layout and still count the crossings.
pub(crate) struct Flat<'a>(pub &'a mut ThreadComm);

impl CollComm for Flat<'_> {
    fn rank(&self) -> usize {
        self.0.rank
    }

    fn size(&self) -> usize {
        self.0.size
    }

    fn exchange(&mut self, sends: &[SendItem<'_>], recvs: &mut [RecvItem<'_>]) -> Result<(), CollError> {
        self.0.exchange(sends, recvs)
    }
}

/// Runs `f` on `size` ranks, one thread each, and returns each rank's
/// result with its exchange count. Fails the test if any message was sent
/// and never received: an algorithm must consume exactly what it sends.
pub(crate) fn run<T: Send>(size: usize, f: impl Fn(&mut ThreadComm) -> T + Sync) -> Vec<(T, usize)> {
    run_on_sites(&vec![0; size], f).into_iter().map(|(t, ex, _)| (t, ex)).collect()
}

/// `run` with rank r in site `sites[r]`; also returns each rank's WAN
/// crossings (exchanges that received from another site).
pub(crate) fn run_on_sites<T: Send>(sites: &[usize], f: impl Fn(&mut ThreadComm) -> T + Sync) -> Vec<(T, usize, usize)> {
    run_counted(sites, f).into_iter().map(|(t, c)| (t, c.exchanges, c.wan_exchanges)).collect()
}

/// `run` with rank r in site `sites[r]`, returning everything each rank's
/// comm counted.
pub(crate) fn run_counted<T: Send>(sites: &[usize], f: impl Fn(&mut ThreadComm) -> T + Sync) -> Vec<(T, Counts)> {
    let size = sites.len();
    let (senders, inboxes): (Vec<_>, Vec<_>) = (0..size).map(|_| channel::<Msg>()).unzip();
    let f = &f;
    type Outcome<T> = (T, Counts, Vec<(usize, i32, usize)>);
    let outcomes: Vec<Outcome<T>> = thread::scope(|s| {
        let handles: Vec<_> = inboxes
            .into_iter()
            .enumerate()
            .map(|(rank, inbox)| {
                let peers = senders.clone();
                s.spawn(move || {
                    let mut comm = ThreadComm {
                        rank,
                        size,
                        peers,
                        inbox,
                        unexpected: HashMap::new(),
                        exchanges: 0,
                        sites: sites.to_vec(),
                        wan_exchanges: 0,
                        wan_recvs: 0,
                        wan_sends: 0,
                        wan_depth: 0,
                    };
                    let out = f(&mut comm);
                    (out, comm)
                })
            })
            .collect();
        // Join all before looking at leftovers, so late sends are counted.
        let joined: Vec<_> = handles.into_iter().map(|h| h.join().expect("rank thread panicked")).collect();
        joined.into_iter().map(|(out, comm)| (out, comm.counts(), comm.leftovers())).collect()
    });
    outcomes
        .into_iter()
        .enumerate()
        .map(|(rank, (out, ex, left))| {
            assert!(left.is_empty(), "rank {rank} never received (source, tag, bytes): {left:?}");
            (out, ex)
        })
        .collect()
}
