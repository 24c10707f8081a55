//! MPI_Scan and MPI_Exscan (MPI-3.1 §5.11): recursive doubling.
//!
//! In round k each rank swaps with `rank ^ 2^k` the reduction of its
//! aligned block of 2^k ranks. A rank folds what comes from below into both
//! its block total and its prefix, and what comes from above into its block
//! total only. Lower ranks are always the left operand, so non-commutative
//! ops are safe. ceil(log2(size)) rounds of one exchange.

use super::args::{check_len, reduction_bytes};
use super::comm::{CollComm, CollError};
use super::{TAG_EXSCAN, TAG_SCAN};
use crate::datatype::BasicType;
use crate::op::Op;

/// Inclusive prefix reduction: rank i gets ranks 0..=i reduced in `recv`.
/// `send == None` is MPI_IN_PLACE: the input is `recv`.
pub fn scan(comm: &mut dyn CollComm, send: Option<&[u8]>, recv: &mut [u8], count: usize, ty: BasicType, op: &Op) -> Result<(), CollError> {
    let n = reduction_bytes(count, ty, op)?;
    check_len("scan receive buffer", recv.len(), n)?;
    if let Some(s) = send {
        check_len("scan send buffer", s.len(), n)?;
        recv.copy_from_slice(s);
    }
    let block_total = recv.to_vec();
    prefix(comm, block_total, recv, true, count, ty, op, TAG_SCAN)
}

/// Exclusive prefix reduction: rank i > 0 gets ranks 0..i reduced in
/// `recv`; rank 0's `recv` is left as it was (MPI leaves it undefined).
/// `send == None` is MPI_IN_PLACE: the input is `recv`.
pub fn exscan(comm: &mut dyn CollComm, send: Option<&[u8]>, recv: &mut [u8], count: usize, ty: BasicType, op: &Op) -> Result<(), CollError> {
    let n = reduction_bytes(count, ty, op)?;
    check_len("exscan receive buffer", recv.len(), n)?;
    let block_total = match send {
        Some(s) => {
            check_len("exscan send buffer", s.len(), n)?;
            s.to_vec()
        }
        None => recv.to_vec(),
    };
    prefix(comm, block_total, recv, false, count, ty, op, TAG_EXSCAN)
}

/// The shared recursive doubling. `prefix` already holds the rank's own
/// input when `inclusive`; otherwise it is set by the first block from below.
#[allow(clippy::too_many_arguments)]
fn prefix(
    comm: &mut dyn CollComm,
    mut block_total: Vec<u8>,
    prefix: &mut [u8],
    inclusive: bool,
    count: usize,
    ty: BasicType,
    op: &Op,
    tag: i32,
) -> Result<(), CollError> {
    let (rank, size) = (comm.rank(), comm.size());
    let mut have_prefix = inclusive;
    let mut tmp = vec![0u8; block_total.len()];
    let mut mask = 1;
    while mask < size {
        let peer = rank ^ mask;
        if peer < size {
            comm.sendrecv(&block_total, &mut tmp, peer, tag)?;
            if peer < rank {
                op.apply(ty, count, &tmp, &mut block_total)?;
                if have_prefix {
                    op.apply(ty, count, &tmp, prefix)?;
                } else {
                    prefix.copy_from_slice(&tmp);
                    have_prefix = true;
                }
            } else {
                op.apply(ty, count, &block_total, &mut tmp)?;
                std::mem::swap(&mut block_total, &mut tmp);
            }
        }
        mask <<= 1;
    }
    Ok(())
}
