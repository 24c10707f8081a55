//! MPI_Allgather and MPI_Allgatherv (MPI-3.1 §5.7): Bruck's algorithm.

use super::args::{check_len, mul, split_disjoint, Blocks, Overlap};
use super::comm::{CollComm, CollError};
use super::hier;
use super::sites::Layout;
use super::TAG_ALLGATHER;

/// Every rank gets every rank's `block` bytes, rank i's at `i * block`.
/// `send == None` is MPI_IN_PLACE: each rank's block is already in `recv`.
pub fn allgather(comm: &mut dyn CollComm, send: Option<&[u8]>, recv: &mut [u8], block: usize) -> Result<(), CollError> {
    let (rank, size) = (comm.rank(), comm.size());
    check_len("allgather receive buffer", recv.len(), mul("allgather", block, size)?)?;
    if let Some(l) = Layout::of(comm) {
        if let Some(s) = send {
            check_len("allgather send buffer", s.len(), block)?;
            recv[rank * block..(rank + 1) * block].copy_from_slice(s);
        }
        return super::sites::allgather(comm, &l, recv, block);
    }
    let counts = vec![block; size];
    let displs: Vec<usize> = (0..size).map(|i| i * block).collect();
    allgatherv(comm, send, recv, Blocks::new(&counts, &displs))
}

/// Every rank gets rank i's bytes at `recv_blocks.range(i)` (bytes).
/// `send == None` is MPI_IN_PLACE.
///
/// Bruck: each rank keeps the blocks of ranks `rank, rank+1, ...` (mod
/// size) back to back; in each round it sends everything it has to
/// `rank - have` and receives as much from `rank + have`, doubling what it
/// holds. ceil(log2(size)) rounds of one exchange for any size, which suits
/// wide-area links better than a ring's size-1 rounds; every rank knows all
/// counts, so variable blocks need no extra round.
pub fn allgatherv(comm: &mut dyn CollComm, send: Option<&[u8]>, recv: &mut [u8], recv_blocks: Blocks<'_>) -> Result<(), CollError> {
    let (rank, size) = (comm.rank(), comm.size());
    recv_blocks.check("allgatherv receive blocks", size, recv.len())?;
    let ranges: Vec<_> = (0..size).map(|i| recv_blocks.range(i)).collect();
    if let Some(mut o) = Overlap::of(&ranges) {
        let own = send.unwrap_or(&recv[ranges[rank].clone()]).to_vec();
        let (counts, displs) = (o.counts.clone(), o.displs.clone());
        allgatherv(comm, Some(&own), &mut o.side, Blocks::new(&counts, &displs))?;
        o.place(recv, &ranges);
        return Ok(());
    }
    // The pieces are filled at the end.
    let mut pieces = split_disjoint("allgatherv receive blocks", recv, &ranges)?;
    if let Some(l) = Layout::of(comm) {
        let own = match send {
            Some(s) => {
                check_len("allgatherv send buffer", s.len(), recv_blocks.counts[rank])?;
                s.to_vec()
            }
            None => pieces[rank].to_vec(),
        };
        return hier::allgatherv(comm, &l, &own, pieces, recv_blocks.counts);
    }
    // offsets[j]: where rank (rank + j)'s block starts in `tmp`.
    let mut offsets = Vec::with_capacity(size + 1);
    offsets.push(0usize);
    for j in 0..size {
        offsets.push(offsets[j] + recv_blocks.counts[(rank + j) % size]);
    }
    let mut tmp = vec![0u8; offsets[size]];
    let own = &mut tmp[..offsets[1]];
    match send {
        Some(s) => {
            check_len("allgatherv send buffer", s.len(), own.len())?;
            own.copy_from_slice(s);
        }
        None => own.copy_from_slice(pieces[rank]),
    }

    let mut have = 1;
    while have < size {
        let n = have.min(size - have);
        let to = (rank + size - have) % size;
        let from = (rank + have) % size;
        let (held, free) = tmp.split_at_mut(offsets[have]);
        let incoming = &mut free[..offsets[have + n] - offsets[have]];
        comm.exchange(
            &[super::comm::SendItem { buf: &held[..offsets[n]], peer: to, tag: TAG_ALLGATHER }],
            &mut [super::comm::RecvItem { buf: incoming, peer: from, tag: TAG_ALLGATHER }],
        )?;
        have += n;
    }

    for j in 0..size {
        pieces[(rank + j) % size].copy_from_slice(&tmp[offsets[j]..offsets[j + 1]]);
    }
    Ok(())
}
