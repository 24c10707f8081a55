//! MPI_Allreduce (MPI-3.1 §5.9.6): recursive doubling.

use super::args::{check_len, reduction_bytes};
use super::comm::{CollComm, CollError};
use super::sites::Layout;
use super::TAG_ALLREDUCE;
use crate::datatype::BasicType;
use crate::op::Op;

/// Every rank ends with the reduction of all ranks' `count` elements in
/// `recv`. `send == None` is MPI_IN_PLACE: the input is `recv`.
///
/// Recursive doubling: in round k, ranks whose (folded) numbers differ in
/// bit k swap their partial results, log2 rounds of one exchange each.
/// When size is not a power of two, with `rem` ranks beyond the largest
/// power of two, the first 2*rem ranks fold pairwise first (even gives to
/// odd) and get the result back at the end: two extra hops for those ranks. Each partial
/// always covers a contiguous run of ranks, and the lower run is always the
/// left operand, so non-commutative ops are safe.
pub fn allreduce(comm: &mut dyn CollComm, send: Option<&[u8]>, recv: &mut [u8], count: usize, ty: BasicType, op: &Op) -> Result<(), CollError> {
    let (rank, size) = (comm.rank(), comm.size());
    let n = reduction_bytes(count, ty, op)?;
    check_len("allreduce receive buffer", recv.len(), n)?;
    if let Some(s) = send {
        check_len("allreduce send buffer", s.len(), n)?;
        recv.copy_from_slice(s);
    }
    if let Some(l) = Layout::of(comm) {
        if super::sites::allreduce(comm, &l, recv, count, ty, op)? {
            return Ok(());
        }
    }
    let pof2 = if size.is_power_of_two() { size } else { size.next_power_of_two() / 2 };
    let rem = size - pof2;
    let mut tmp = vec![0u8; n];

    // Fold: even ranks below 2*rem hand their data to the next odd rank.
    let folded = if rank < 2 * rem {
        if rank % 2 == 0 {
            comm.send(recv, rank + 1, TAG_ALLREDUCE)?;
            None
        } else {
            comm.recv(&mut tmp, rank - 1, TAG_ALLREDUCE)?;
            op.apply(ty, count, &tmp, recv)?;
            Some(rank / 2)
        }
    } else {
        Some(rank - rem)
    };

    if let Some(me) = folded {
        let mut mask = 1;
        while mask < pof2 {
            let other = me ^ mask;
            let peer = if other < rem { other * 2 + 1 } else { other + rem };
            comm.sendrecv(recv, &mut tmp, peer, TAG_ALLREDUCE)?;
            if peer < rank {
                op.apply(ty, count, &tmp, recv)?;
            } else {
                op.apply(ty, count, recv, &mut tmp)?;
                recv.copy_from_slice(&tmp);
            }
            mask <<= 1;
        }
    }

    // Unfold: odd ranks below 2*rem return the result to their even partner.
    if rank < 2 * rem {
        if rank % 2 == 1 {
            comm.send(recv, rank - 1, TAG_ALLREDUCE)?;
        } else {
            comm.recv(recv, rank + 1, TAG_ALLREDUCE)?;
        }
    }
    Ok(())
}
