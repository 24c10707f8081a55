//! MPI_Gather and MPI_Gatherv (MPI-3.1 §5.5).

use super::args::{bad, check_len, check_root, mul, split_disjoint, Blocks, Overlap};
use super::comm::{post, CollComm, CollError, RecvItem};
use super::hier;
use super::sites::Layout;
use super::tree::Binomial;
use super::{TAG_GATHER, TAG_GATHERV};

/// Gathers `block` bytes from every rank into `recv` at `root`, rank i's at
/// `i * block`. `send == None` is MPI_IN_PLACE (root only: its block is
/// already in `recv`). `recv` is only touched at the root.
///
/// Binomial tree: each rank collects its subtree's blocks (children's
/// subtrees follow its own in rank order, so they land side by side), then
/// passes them up in one message: ceil(log2(size)) hops.
pub fn gather(comm: &mut dyn CollComm, send: Option<&[u8]>, recv: &mut [u8], block: usize, root: usize) -> Result<(), CollError> {
    let (rank, size) = (comm.rank(), comm.size());
    check_root(root, size)?;
    let is_root = rank == root;
    if is_root {
        check_len("gather receive buffer", recv.len(), mul("gather", block, size)?)?;
    }
    let mine = match send {
        Some(s) => {
            check_len("gather send buffer", s.len(), block)?;
            s.to_vec()
        }
        None if is_root => recv[rank * block..(rank + 1) * block].to_vec(),
        None => return Err(bad("MPI_IN_PLACE in gather is only allowed at the root".into())),
    };
    if let Some(l) = Layout::of(comm) {
        return hier::gather(comm, &l, &mine, recv, block, root);
    }
    let tree = Binomial::new(size, rank, root);
    let mut tmp = vec![0u8; mul("gather", block, tree.span())?];
    tmp[..block].copy_from_slice(&mine);

    let mut recvs = Vec::new();
    let mut rest = &mut tmp[block..];
    for c in tree.children() {
        let (piece, tail) = std::mem::take(&mut rest).split_at_mut(c.span * block);
        recvs.push(RecvItem { buf: piece, peer: Binomial::real(size, c.rel, root), tag: TAG_GATHER });
        rest = tail;
    }
    post(comm, &[], &mut recvs)?;
    drop(recvs);

    match tree.parent() {
        Some(parent) => comm.send(&tmp, Binomial::real(size, parent, root), TAG_GATHER),
        None => {
            // tmp is in relative order: rotate back to real ranks.
            let split = (size - root) * block;
            recv[root * block..].copy_from_slice(&tmp[..split]);
            recv[..root * block].copy_from_slice(&tmp[split..]);
            Ok(())
        }
    }
}

/// Gathers a block of any length from every rank: at the root, rank i's
/// bytes go to `recv_blocks.range(i)` (counts and displacements in bytes,
/// only significant at the root). `send == None` is MPI_IN_PLACE (root only).
///
/// Linear: every rank sends straight to the root, which posts all receives
/// at once. One hop. (Only the root knows the counts, so a tree would need
/// an extra round to tell inner nodes their subtree sizes.) Across sites,
/// `hier::gatherv` sends one message per site instead.
pub fn gatherv(comm: &mut dyn CollComm, send: Option<&[u8]>, recv: &mut [u8], recv_blocks: Blocks<'_>, root: usize) -> Result<(), CollError> {
    let (rank, size) = (comm.rank(), comm.size());
    check_root(root, size)?;
    let sites = Layout::of(comm);
    if rank != root {
        let s = send.ok_or_else(|| bad("MPI_IN_PLACE in gatherv is only allowed at the root".into()))?;
        return match sites {
            Some(l) => hier::gatherv(comm, &l, Some(s), &mut [], recv_blocks, root),
            None => comm.send(s, root, TAG_GATHERV),
        };
    }
    recv_blocks.check("gatherv receive blocks", size, recv.len())?;
    let ranges: Vec<_> = (0..size).map(|i| recv_blocks.range(i)).collect();
    if let Some(s) = send {
        check_len("gatherv send buffer", s.len(), recv_blocks.counts[rank])?;
    }
    if let Some(mut o) = Overlap::of(&ranges) {
        let own = send.unwrap_or(&recv[ranges[rank].clone()]).to_vec();
        let (counts, displs) = (o.counts.clone(), o.displs.clone());
        gatherv(comm, Some(&own), &mut o.side, Blocks::new(&counts, &displs), root)?;
        o.place(recv, &ranges);
        return Ok(());
    }
    if let Some(l) = sites {
        return hier::gatherv(comm, &l, send, recv, recv_blocks, root);
    }
    let mut pieces = split_disjoint("gatherv receive blocks", recv, &ranges)?;
    if let Some(s) = send {
        pieces[rank].copy_from_slice(s);
    }
    let mut recvs: Vec<RecvItem<'_>> =
        pieces.into_iter().enumerate().filter(|(i, _)| *i != rank).map(|(peer, buf)| RecvItem { buf, peer, tag: TAG_GATHERV }).collect();
    post(comm, &[], &mut recvs)
}
