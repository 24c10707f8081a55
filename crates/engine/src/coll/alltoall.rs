//! MPI_Alltoall and MPI_Alltoallv (MPI-3.1 §5.8).

use super::args::{check_len, mul, split_disjoint, Blocks, Overlap};
use super::comm::{post, CollComm, CollError, RecvItem, SendItem};
use super::TAG_ALLTOALL;

/// Rank i's block j (`block` bytes at `j * block` of `send`) goes to rank j,
/// which stores it at `i * block` of `recv`. `send == None` is MPI_IN_PLACE:
/// the data to send is taken from `recv` and replaced.
pub fn alltoall(comm: &mut dyn CollComm, send: Option<&[u8]>, recv: &mut [u8], block: usize) -> Result<(), CollError> {
    let size = comm.size();
    let total = mul("alltoall", block, size)?;
    check_len("alltoall receive buffer", recv.len(), total)?;
    if let Some(s) = send {
        check_len("alltoall send buffer", s.len(), total)?;
    }
    let counts = vec![block; size];
    let displs: Vec<usize> = (0..size).map(|i| i * block).collect();
    let blocks = Blocks::new(&counts, &displs);
    alltoallv(comm, send.map(|s| (s, blocks)), recv, blocks)
}

/// Sends `send_blocks.range(j)` of the send buffer to rank j and receives
/// rank i's data into `recv_blocks.range(i)` (all in bytes). `send == None`
/// is MPI_IN_PLACE: `recv` is sent with `recv_blocks`, then overwritten.
///
/// Every send and receive is posted at once in one exchange, so the whole
/// operation costs one wide-area round trip whatever the size; posts start
/// at `rank + 1` so that ranks do not all hit the same peer first.
pub fn alltoallv(comm: &mut dyn CollComm, send: Option<(&[u8], Blocks<'_>)>, recv: &mut [u8], recv_blocks: Blocks<'_>) -> Result<(), CollError> {
    let (rank, size) = (comm.rank(), comm.size());
    recv_blocks.check("alltoallv receive blocks", size, recv.len())?;
    let in_place_copy;
    let (sbuf, send_blocks) = match send {
        Some((buf, blocks)) => {
            blocks.check("alltoallv send blocks", size, buf.len())?;
            (buf, blocks)
        }
        None => {
            in_place_copy = recv.to_vec();
            (&in_place_copy[..], recv_blocks)
        }
    };
    let ranges: Vec<_> = (0..size).map(|i| recv_blocks.range(i)).collect();
    if let Some(mut o) = Overlap::of(&ranges) {
        let (counts, displs) = (o.counts.clone(), o.displs.clone());
        alltoallv(comm, Some((sbuf, send_blocks)), &mut o.side, Blocks::new(&counts, &displs))?;
        o.place(recv, &ranges);
        return Ok(());
    }
    let mut pieces = split_disjoint("alltoallv receive blocks", recv, &ranges)?;
    let own = &sbuf[send_blocks.range(rank)];
    if own.len() != pieces[rank].len() {
        return Err(CollError::LengthMismatch { peer: rank, expected: pieces[rank].len(), got: own.len() });
    }
    pieces[rank].copy_from_slice(own);

    let sends: Vec<SendItem<'_>> =
        (1..size).map(|k| (rank + k) % size).map(|peer| SendItem { buf: &sbuf[send_blocks.range(peer)], peer, tag: TAG_ALLTOALL }).collect();
    let mut slots: Vec<Option<&mut [u8]>> = pieces.into_iter().map(Some).collect();
    let mut recvs: Vec<RecvItem<'_>> = (1..size)
        .map(|k| (rank + size - k) % size)
        .filter_map(|peer| slots[peer].take().map(|buf| RecvItem { buf, peer, tag: TAG_ALLTOALL }))
        .collect();
    post(comm, &sends, &mut recvs)
}
