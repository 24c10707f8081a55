//! MPI_Reduce_scatter and MPI_Reduce_scatter_block (MPI-3.1 §5.10).

use super::args::{bad, check_len, mul, reduction_bytes};
use super::comm::{post, CollComm, CollError, SendItem};
use super::reduce::reduce_any;
use super::TAG_REDUCE_SCATTER;
use crate::datatype::BasicType;
use crate::op::Op;

/// Reduces `sum(recvcounts)` elements element-wise over all ranks, then
/// leaves block i (`recvcounts[i]` elements, in order) at rank i, in
/// `recv`. `send == None` is MPI_IN_PLACE: the full input is in `recv`,
/// which must then hold all of it; the result lands at its start.
///
/// Binomial reduce to rank 0 (order-preserving for any op), then rank 0
/// posts every block at once: ceil(log2(size)) + 1 hops, with no more
/// data on the wire than the reduction itself needs. Across sites the
/// reduce is the site-aware one (`hier::reduce`): two slow crossings.
pub fn reduce_scatter(
    comm: &mut dyn CollComm,
    send: Option<&[u8]>,
    recv: &mut [u8],
    recvcounts: &[usize],
    ty: BasicType,
    op: &Op,
) -> Result<(), CollError> {
    let (rank, size) = (comm.rank(), comm.size());
    if recvcounts.len() != size {
        return Err(bad(format!("reduce_scatter: {} receive counts for {size} ranks", recvcounts.len())));
    }
    let total =
        recvcounts.iter().try_fold(0usize, |acc, c| acc.checked_add(*c)).ok_or_else(|| bad("reduce_scatter: receive counts overflow".into()))?;
    let total_bytes = reduction_bytes(total, ty, op)?;
    let extent = ty.extent();
    let own_bytes = recvcounts[rank] * extent;
    let input = match send {
        Some(s) => {
            check_len("reduce_scatter send buffer", s.len(), total_bytes)?;
            check_len("reduce_scatter receive buffer", recv.len(), own_bytes)?;
            s.to_vec()
        }
        None => {
            check_len("reduce_scatter in-place buffer", recv.len(), total_bytes)?;
            recv.to_vec()
        }
    };
    let out = &mut recv[..own_bytes];
    match reduce_any(comm, input, total, ty, op, 0)? {
        Some(full) => {
            let mut sends = Vec::with_capacity(size);
            let mut at = 0;
            for (peer, count) in recvcounts.iter().enumerate() {
                let piece = &full[at..at + count * extent];
                if peer == rank {
                    out.copy_from_slice(piece);
                } else {
                    sends.push(SendItem { buf: piece, peer, tag: TAG_REDUCE_SCATTER });
                }
                at += count * extent;
            }
            post(comm, &sends, &mut [])
        }
        None => comm.recv(out, 0, TAG_REDUCE_SCATTER),
    }
}

/// MPI_Reduce_scatter_block: every rank gets `recvcount` elements.
pub fn reduce_scatter_block(
    comm: &mut dyn CollComm,
    send: Option<&[u8]>,
    recv: &mut [u8],
    recvcount: usize,
    ty: BasicType,
    op: &Op,
) -> Result<(), CollError> {
    let size = comm.size();
    mul("reduce_scatter_block", recvcount, size)?;
    reduce_scatter(comm, send, recv, &vec![recvcount; size], ty, op)
}
