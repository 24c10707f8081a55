//! MPI_Barrier (MPI-3.1 §5.3): the dissemination algorithm.

use super::comm::{CollComm, CollError, RecvItem, SendItem};
use super::sites::Layout;
use super::TAG_BARRIER;

/// In round k every rank signals `rank + 2^k` and waits for `rank - 2^k`
/// (mod size); after ceil(log2(size)) rounds each rank has heard, directly
/// or not, from all others. Works for any size; messages are empty.
pub fn barrier(comm: &mut dyn CollComm) -> Result<(), CollError> {
    if let Some(l) = Layout::of(comm) {
        return super::sites::barrier(comm, &l);
    }
    let (rank, size) = (comm.rank(), comm.size());
    let mut dist = 1;
    while dist < size {
        let to = (rank + dist) % size;
        let from = (rank + size - dist) % size;
        comm.exchange(&[SendItem { buf: &[], peer: to, tag: TAG_BARRIER }], &mut [RecvItem { buf: &mut [], peer: from, tag: TAG_BARRIER }])?;
        dist *= 2;
    }
    Ok(())
}
