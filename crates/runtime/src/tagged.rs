//! Collective traffic under a user's tag (MPI_Comm_create_group and the
//! `_from_group(s)` calls of MPI-4), on tags of its own.

use wanmpi_engine::coll::{CollComm, CollError, RecvItem, SendItem};

use crate::coll_adapter::CollAdapter;

/// The collective traffic of one MPI_Comm_create_group (or _from_group)
/// call: the blocking
/// algorithms' tags moved into a negative range of their own for the
/// user's `tag`, so concurrent calls on one communicator (different tags,
/// overlapping groups) and the communicator's own collectives never match
/// each other's messages.
pub(crate) struct Tagged<'a> {
    pub inner: CollAdapter<'a>,
    pub tag: i32,
}

impl Tagged<'_> {
    fn map(&self, t: i32) -> i32 {
        // Blocking algorithms' tags are below 4096.
        -(1 + (self.tag % (1 << 18)) * 4096 + t.rem_euclid(4096))
    }
}

impl CollComm for Tagged<'_> {
    fn rank(&self) -> usize {
        self.inner.rank()
    }
    fn size(&self) -> usize {
        self.inner.size()
    }
    fn site_of(&self, rank: usize) -> usize {
        self.inner.site_of(rank)
    }
    fn exchange(&mut self, sends: &[SendItem<'_>], recvs: &mut [RecvItem<'_>]) -> Result<(), CollError> {
        let sends: Vec<SendItem<'_>> = sends.iter().map(|s| SendItem { buf: s.buf, peer: s.peer, tag: self.map(s.tag) }).collect();
        let mut recvs: Vec<RecvItem<'_>> = recvs.iter_mut().map(|r| RecvItem { buf: &mut *r.buf, peer: r.peer, tag: self.map(r.tag) }).collect();
        self.inner.exchange(&sends, &mut recvs)
    }
}
