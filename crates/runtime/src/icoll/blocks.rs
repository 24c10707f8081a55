//! The one-round collectives (gather, scatter, allgather, alltoall and
//! their v and w forms) as nonblocking and persistent requests: blocks of
//! staged user buffers to and from every peer (`sched::direct`).

use std::sync::Arc;

use wanmpi_engine::coll::sched::{direct, Block, LocalCopy};
use wanmpi_engine::coll::{TAG_ALLGATHER, TAG_ALLTOALL, TAG_GATHER, TAG_SCATTER};
use wanmpi_engine::datatype::Datatype;
use wanmpi_engine::{error::err, ErrorClass, MpiResult};

use super::start::{nothing, role, Built, Role, Shape, UBuf};
use super::{start_error, Sink};
use crate::collectives::{Buf, VBuf};
use crate::comm::CommId;
use crate::p2p::check_datatype;
use crate::reqtable::Req;
use crate::runtime::Runtime;
use crate::staged::{Staged, StagedBlocks};

/// A v-variant buffer captured by a plan.
#[derive(Clone)]
pub struct UVBuf {
    pub addr: usize,
    pub counts: Vec<usize>,
    pub displs: Vec<isize>,
    pub dt: Datatype,
}

impl UVBuf {
    pub fn of(b: VBuf<'_>) -> UVBuf {
        UVBuf { addr: b.ptr as usize, counts: b.counts.to_vec(), displs: b.displs.to_vec(), dt: b.dt.clone() }
    }
    /// # Safety
    /// The starting call's contract keeps the buffer valid.
    pub(super) unsafe fn stage(&self) -> MpiResult<StagedBlocks> {
        StagedBlocks::new(self.addr as *mut u8, &self.counts, &self.displs, &self.dt)
    }
}

/// Blocks staged one after another: bytes, offsets, lengths, the blocks.
pub(super) type StagedAll = (Vec<u8>, Vec<usize>, Vec<usize>, Vec<Staged>);

/// One buffer per peer with its own datatype, displacements in bytes
/// (MPI_Alltoallw).
#[derive(Clone)]
pub struct WBuf {
    pub addr: usize,
    pub counts: Vec<usize>,
    pub byte_displs: Vec<isize>,
    pub dts: Vec<Datatype>,
}

impl WBuf {
    /// Peer `j`'s block, staged.
    ///
    /// # Safety
    /// The starting call's contract keeps the buffer valid.
    unsafe fn stage(&self, j: usize) -> MpiResult<Staged> {
        Staged::output((self.addr as *mut u8).wrapping_offset(self.byte_displs[j]), self.counts[j], &self.dts[j])
    }

    /// Blocks described: the shortest of its three arrays.
    pub(crate) fn blocks(&self) -> usize {
        self.counts.len().min(self.byte_displs.len()).min(self.dts.len())
    }

    /// Every block staged, one after another: the bytes, each block's
    /// offset and length in them, and the staged blocks (to write back).
    ///
    /// # Safety
    /// As `stage`.
    pub(super) unsafe fn stage_all(&self) -> MpiResult<StagedAll> {
        let n = self.blocks();
        let (mut bytes, mut at, mut len, mut staged) = (vec![], vec![], vec![], vec![]);
        for j in 0..n {
            let s = self.stage(j)?;
            at.push(bytes.len());
            len.push(s.bytes().len());
            bytes.extend_from_slice(s.bytes());
            staged.push(s);
        }
        Ok((bytes, at, len, staged))
    }
}

/// Every peer but `me` (on an inter-communicator, every remote rank):
/// block j at `at[j]` of `len[j]` bytes.
fn peers(me: Option<usize>, at: &[usize], len: &[usize], family: i32) -> Vec<Block> {
    (0..at.len()).filter(|&j| Some(j) != me).map(|j| Block { peer: j, at: at[j], len: len[j], family }).collect()
}

/// This rank among the schedule's peers, if it is one of them (not on an
/// inter-communicator, whose peers are the other group).
fn me(sh: &Shape) -> Option<usize> {
    (!sh.inter).then_some(sh.rank)
}

fn no_in_place(sh: &Shape, in_place: bool) -> MpiResult<()> {
    if sh.inter && in_place {
        return err(ErrorClass::Buffer, "MPI_IN_PLACE is not allowed on inter-communicators");
    }
    Ok(())
}

fn check_block(what: &str, got: usize, want: usize) -> MpiResult<()> {
    if got != want {
        return err(ErrorClass::Truncate, format!("{what}: {got} bytes where the receive expects {want}"));
    }
    Ok(())
}

fn built(out: Vec<u8>, input: Vec<u8>, sends: &[Block], recvs: &[Block], copies: &[LocalCopy], seq: u32, sinks: Vec<Sink>) -> MpiResult<Built> {
    let len = out.len();
    let s = direct(out, input, sends, recvs, copies, seq).map_err(start_error)?;
    Ok((s, sinks.into_iter().map(|k| (0..len, k)).collect()))
}

impl Runtime {
    /// MPI_Igather(v) and their persistent forms (`send == None`:
    /// MPI_IN_PLACE at the root). `recv` gives each rank's count and
    /// displacement; a plain gather passes equal counts.
    ///
    /// # Safety
    /// The buffers must stay valid until the collective completes.
    pub unsafe fn igatherv(&self, send: Option<Buf<'_>>, recv: VBuf<'_>, root: i32, comm: CommId, persistent: bool) -> MpiResult<Req> {
        let (send, recv) = (send.map(UBuf::of), UVBuf::of(recv));
        self.coll_request(
            comm,
            Arc::new(move |sh: &Shape, seq| {
                let role = role(root, sh)?;
                // SAFETY: the caller's contract.
                let input = match (&send, role) {
                    (_, Role::Idle) => return Ok(nothing()),
                    // The root of an inter-communicator gather sends nothing.
                    (_, Role::Root) if sh.inter => vec![],
                    (Some(s), _) => s.packed()?,
                    (None, Role::Leaf(_)) => return err(ErrorClass::Buffer, "MPI_IN_PLACE in gather is only allowed at the root"),
                    (None, Role::Root) => vec![],
                };
                if let Role::Leaf(root) = role {
                    let to = [Block { peer: root, at: 0, len: input.len(), family: TAG_GATHER }];
                    return built(vec![], input, &to, &[], &[], seq, vec![]);
                }
                check_datatype(&recv.dt)?;
                if recv.counts.len() != sh.size {
                    return err(ErrorClass::Count, format!("{} receive counts for {} ranks", recv.counts.len(), sh.size));
                }
                let out = unsafe { recv.stage()? };
                let (bc, bd) = (out.byte_counts.clone(), out.byte_displs.clone());
                let mut copies = vec![];
                if let (Some(_), Some(me)) = (&send, me(sh)) {
                    check_block("gather's own block", input.len(), bc[me])?;
                    copies.push(LocalCopy { from: 0, to: bd[me], len: bc[me] });
                }
                let sink = Sink::Blocks(out);
                built(sink.current(), input, &[], &peers(me(sh), &bd, &bc, TAG_GATHER), &copies, seq, vec![sink])
            }),
            persistent,
        )
    }

    /// MPI_Iscatter(v) and their persistent forms (`recv == None`:
    /// MPI_IN_PLACE at the root).
    ///
    /// # Safety
    /// The buffers must stay valid until the collective completes.
    pub unsafe fn iscatterv(&self, send: VBuf<'_>, recv: Option<Buf<'_>>, root: i32, comm: CommId, persistent: bool) -> MpiResult<Req> {
        let (send, recv) = (UVBuf::of(send), recv.map(UBuf::of));
        self.coll_request(
            comm,
            Arc::new(move |sh: &Shape, seq| {
                let role = role(root, sh)?;
                if role == Role::Idle {
                    return Ok(nothing());
                }
                // SAFETY: the caller's contract.
                let out = match &recv {
                    Some(r) if !(sh.inter && role == Role::Root) => Some(unsafe { Staged::output(r.addr as *mut u8, r.count, &r.dt)? }),
                    _ => None,
                };
                let out_len = out.as_ref().map_or(0, |o| o.bytes().len());
                let sinks: Vec<Sink> = out.into_iter().map(Sink::Whole).collect();
                if let Role::Leaf(root) = role {
                    if sinks.is_empty() {
                        return err(ErrorClass::Buffer, "MPI_IN_PLACE in scatter is only allowed at the root");
                    }
                    let from = [Block { peer: root, at: 0, len: out_len, family: TAG_SCATTER }];
                    return built(vec![0; out_len], vec![], &[], &from, &[], seq, sinks);
                }
                check_datatype(&send.dt)?;
                if send.counts.len() != sh.size {
                    return err(ErrorClass::Count, format!("{} send counts for {} ranks", send.counts.len(), sh.size));
                }
                let input = unsafe { send.stage()? };
                let (bc, bd) = (input.byte_counts.clone(), input.byte_displs.clone());
                let mut copies = vec![];
                if let (false, Some(me)) = (sinks.is_empty(), me(sh)) {
                    check_block("scatter's own block", bc[me], out_len)?;
                    copies.push(LocalCopy { from: bd[me], to: 0, len: out_len });
                }
                built(vec![0; out_len], input.bytes().to_vec(), &peers(me(sh), &bd, &bc, TAG_SCATTER), &[], &copies, seq, sinks)
            }),
            persistent,
        )
    }

    /// MPI_Iallgather(v) and their persistent forms (`send == None`: MPI_IN_PLACE).
    ///
    /// # Safety
    /// The buffers must stay valid until the collective completes.
    pub unsafe fn iallgatherv(&self, send: Option<Buf<'_>>, recv: VBuf<'_>, comm: CommId, persistent: bool) -> MpiResult<Req> {
        check_datatype(recv.dt)?;
        let (send, recv) = (send.map(UBuf::of), UVBuf::of(recv));
        self.coll_request(
            comm,
            Arc::new(move |sh: &Shape, seq| {
                no_in_place(sh, send.is_none())?;
                if recv.counts.len() != sh.size {
                    return err(ErrorClass::Count, format!("{} receive counts for {} ranks", recv.counts.len(), sh.size));
                }
                // SAFETY: the caller's contract.
                let out = unsafe { recv.stage()? };
                let (bc, bd) = (out.byte_counts.clone(), out.byte_displs.clone());
                let sink = Sink::Blocks(out);
                let current = sink.current();
                let (input, copies) = match (&send, me(sh)) {
                    (Some(s), me) => {
                        let input = s.packed()?;
                        let copies = match me {
                            Some(me) => {
                                check_block("allgather's own block", input.len(), bc[me])?;
                                vec![LocalCopy { from: 0, to: bd[me], len: bc[me] }]
                            }
                            None => vec![],
                        };
                        (input, copies)
                    }
                    (None, me) => {
                        let me = me.unwrap_or(0);
                        (current[bd[me]..bd[me] + bc[me]].to_vec(), vec![])
                    }
                };
                let len = input.len();
                let to: Vec<Block> =
                    (0..sh.size).filter(|&j| Some(j) != me(sh)).map(|j| Block { peer: j, at: 0, len, family: TAG_ALLGATHER }).collect();
                built(current, input, &to, &peers(me(sh), &bd, &bc, TAG_ALLGATHER), &copies, seq, vec![sink])
            }),
            persistent,
        )
    }

    /// MPI_Ialltoall(v) and their persistent forms (`send == None`: MPI_IN_PLACE).
    ///
    /// # Safety
    /// The buffers must stay valid until the collective completes.
    pub unsafe fn ialltoallv(&self, send: Option<VBuf<'_>>, recv: VBuf<'_>, comm: CommId, persistent: bool) -> MpiResult<Req> {
        check_datatype(recv.dt)?;
        let (send, recv) = (send.map(UVBuf::of), UVBuf::of(recv));
        self.coll_request(
            comm,
            Arc::new(move |sh: &Shape, seq| {
                no_in_place(sh, send.is_none())?;
                let size = sh.size;
                if recv.counts.len() != size || send.as_ref().is_some_and(|s| s.counts.len() != size) {
                    return err(ErrorClass::Count, format!("alltoall needs {size} counts on both sides"));
                }
                // SAFETY: the caller's contract.
                let out = unsafe { recv.stage()? };
                let (rc, rd) = (out.byte_counts.clone(), out.byte_displs.clone());
                let sink = Sink::Blocks(out);
                let current = sink.current();
                let (input, sc, sd) = match &send {
                    Some(s) => {
                        let i = unsafe { s.stage()? };
                        let (c, d) = (i.byte_counts.clone(), i.byte_displs.clone());
                        (i.bytes().to_vec(), c, d)
                    }
                    None => (current.clone(), rc.clone(), rd.clone()),
                };
                let copies = own_block(me(sh), &sc, &sd, &rc, &rd)?;
                let (sends, recvs) = (peers(me(sh), &sd, &sc, TAG_ALLTOALL), peers(me(sh), &rd, &rc, TAG_ALLTOALL));
                built(current, input, &sends, &recvs, &copies, seq, vec![sink])
            }),
            persistent,
        )
    }

    /// MPI_Ialltoallw and its persistent form (`send == None`: MPI_IN_PLACE).
    ///
    /// # Safety
    /// The buffers must stay valid until the collective completes.
    pub unsafe fn ialltoallw(&self, send: Option<WBuf>, recv: WBuf, comm: CommId, persistent: bool) -> MpiResult<Req> {
        for dt in send.iter().flat_map(|s| &s.dts).chain(&recv.dts) {
            check_datatype(dt)?;
        }
        self.coll_request(
            comm,
            Arc::new(move |sh: &Shape, seq| {
                no_in_place(sh, send.is_none())?;
                let size = sh.size;
                if recv.blocks() != size || send.as_ref().is_some_and(|s| s.blocks() != size) {
                    return err(ErrorClass::Count, format!("alltoallw needs {size} counts, displacements and types on both sides"));
                }
                // Each peer's block is staged on its own; buffer 0 holds them one after another.
                // SAFETY: the caller's contract.
                let (current, rd, rc, sinks) = unsafe { recv.stage_all()? };
                let (input, sd, sc) = match &send {
                    Some(w) => {
                        let (b, d, c, _) = unsafe { w.stage_all()? };
                        (b, d, c)
                    }
                    None => (current.clone(), rd.clone(), rc.clone()),
                };
                let copies = own_block(me(sh), &sc, &sd, &rc, &rd)?;
                let s = direct(current, input, &peers(me(sh), &sd, &sc, TAG_ALLTOALL), &peers(me(sh), &rd, &rc, TAG_ALLTOALL), &copies, seq)
                    .map_err(start_error)?;
                let ranges = rd.iter().zip(&rc).map(|(&d, &c)| d..d + c);
                Ok((s, ranges.zip(sinks.into_iter().map(Sink::Whole)).collect()))
            }),
            persistent,
        )
    }
}

/// The local copy of an alltoall's own block (none on an inter-communicator).
fn own_block(me: Option<usize>, sc: &[usize], sd: &[usize], rc: &[usize], rd: &[usize]) -> MpiResult<Vec<LocalCopy>> {
    let Some(me) = me else { return Ok(vec![]) };
    check_block("alltoall's own block", sc[me], rc[me])?;
    Ok(vec![LocalCopy { from: sd[me], to: rd[me], len: rc[me] }])
}

/// Equal blocks of `count` elements per rank: the v-layout of a plain
/// gather, scatter, allgather or alltoall buffer.
pub fn equal_blocks(count: usize, size: usize) -> (Vec<usize>, Vec<isize>) {
    (vec![count; size], (0..size).map(|j| (j * count) as isize).collect())
}
