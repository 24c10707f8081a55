//! Neighbourhood collectives (MPI-4.0 §8.6) as one-round schedules: block
//! k of the send buffer to destination k, block j of the receive buffer
//! from source j; MPI_PROC_NULL neighbours are skipped (their receive
//! block is left alone). An allgather is an alltoall whose send blocks all
//! start at the same place.
//!
//! Matching: on a Cartesian grid a rank can be both neighbours of another
//! in one dimension (a periodic dimension of 2), so each direction has its
//! own tag: what goes out in slot k arrives in the receiver's slot k ^ 1
//! (my "+1" neighbour sees me as its "-1"). On a graph, repeated edges
//! between two ranks match in the order of the neighbour lists.

use std::sync::Arc;

use wanmpi_engine::coll::sched::{direct, Block};
use wanmpi_engine::{error::err, ErrorClass, MpiResult};

use super::blocks::{UVBuf, WBuf};
use super::start::Shape;
use super::{start_error, Sink};
use crate::collectives::VBuf;
use crate::comm::CommId;
use crate::p2p::check_datatype;
use crate::reqtable::Req;
use crate::runtime::Runtime;

/// Tag family of the neighbourhood collectives; Cartesian slot k adds k.
const TAG_NEIGHBOR: i32 = 40;

/// A rank's neighbours in its topology's order (`None`: MPI_PROC_NULL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbors {
    pub sources: Vec<Option<usize>>,
    pub dests: Vec<Option<usize>>,
    /// Cartesian: slots come in (-1, +1) pairs per dimension.
    pub cart: bool,
}

impl Neighbors {
    fn send_family(&self, k: usize) -> i32 {
        if self.cart {
            TAG_NEIGHBOR + k as i32
        } else {
            TAG_NEIGHBOR
        }
    }
    fn recv_family(&self, j: usize) -> i32 {
        if self.cart {
            TAG_NEIGHBOR + (j ^ 1) as i32
        } else {
            TAG_NEIGHBOR
        }
    }
    fn check(&self, size: usize) -> MpiResult<()> {
        if self.cart && (self.sources.len() != self.dests.len() || !self.sources.len().is_multiple_of(2)) {
            return err(ErrorClass::Topology, "a Cartesian neighbourhood has two neighbours per dimension");
        }
        if self.cart && 2 * (TAG_NEIGHBOR as usize + self.sources.len()) >= 0x1_0000 {
            return err(ErrorClass::Topology, "too many dimensions for a neighbourhood collective");
        }
        match self.sources.iter().chain(&self.dests).flatten().find(|&&r| r >= size) {
            Some(r) => err(ErrorClass::Rank, format!("neighbour {r} outside a communicator of {size}")),
            None => Ok(()),
        }
    }
}

/// Send and receive blocks: (byte offset, length) per slot.
fn blocks(n: &Neighbors, sd: &[usize], sc: &[usize], rd: &[usize], rc: &[usize]) -> (Vec<Block>, Vec<Block>) {
    let sends = n.dests.iter().enumerate().filter_map(|(k, d)| d.map(|peer| Block { peer, at: sd[k], len: sc[k], family: n.send_family(k) }));
    let recvs = n.sources.iter().enumerate().filter_map(|(j, s)| s.map(|peer| Block { peer, at: rd[j], len: rc[j], family: n.recv_family(j) }));
    (sends.collect(), recvs.collect())
}

impl Runtime {
    /// MPI_(I)neighbor_alltoall(v), _allgather(v) and their persistent forms:
    /// `send` has a block per destination, `recv` one per source.
    ///
    /// # Safety
    /// The buffers must stay valid until the collective completes.
    pub unsafe fn ineighbor_alltoallv(&self, n: Neighbors, send: VBuf<'_>, recv: VBuf<'_>, comm: CommId, persistent: bool) -> MpiResult<Req> {
        check_datatype(send.dt)?;
        check_datatype(recv.dt)?;
        if send.counts.len() != n.dests.len() || recv.counts.len() != n.sources.len() {
            return err(ErrorClass::Count, "one count per neighbour on each side");
        }
        let (send, recv) = (UVBuf::of(send), UVBuf::of(recv));
        self.coll_request(
            comm,
            Arc::new(move |sh: &Shape, seq| {
                if sh.inter {
                    return err(ErrorClass::Topology, "an inter-communicator has no topology");
                }
                n.check(sh.size)?;
                // SAFETY: the caller's contract.
                let (input, out) = unsafe { (send.stage()?, recv.stage()?) };
                let (sends, recvs) = blocks(&n, &input.byte_displs, &input.byte_counts, &out.byte_displs, &out.byte_counts);
                let sink = Sink::Blocks(out);
                let current = sink.current();
                let len = current.len();
                let s = direct(current, input.bytes().to_vec(), &sends, &recvs, &[], seq).map_err(start_error)?;
                Ok((s, vec![(0..len, sink)]))
            }),
            persistent,
        )
    }

    /// MPI_(I)neighbor_alltoallw and its persistent form.
    ///
    /// # Safety
    /// The buffers must stay valid until the collective completes.
    pub unsafe fn ineighbor_alltoallw(&self, n: Neighbors, send: WBuf, recv: WBuf, comm: CommId, persistent: bool) -> MpiResult<Req> {
        for dt in send.dts.iter().chain(&recv.dts) {
            check_datatype(dt)?;
        }
        if send.blocks() != n.dests.len() || recv.blocks() != n.sources.len() {
            return err(ErrorClass::Count, "one count, displacement and type per neighbour on each side");
        }
        self.coll_request(
            comm,
            Arc::new(move |sh: &Shape, seq| {
                if sh.inter {
                    return err(ErrorClass::Topology, "an inter-communicator has no topology");
                }
                n.check(sh.size)?;
                // SAFETY: the caller's contract.
                let (input, sd, sc, _) = unsafe { send.stage_all()? };
                let (current, rd, rc, sinks) = unsafe { recv.stage_all()? };
                let (sends, recvs) = blocks(&n, &sd, &sc, &rd, &rc);
                let s = direct(current, input, &sends, &recvs, &[], seq).map_err(start_error)?;
                let ranges = rd.iter().zip(&rc).map(|(&d, &c)| d..d + c);
                Ok((s, ranges.zip(sinks.into_iter().map(Sink::Whole)).collect()))
            }),
            persistent,
        )
    }
}
