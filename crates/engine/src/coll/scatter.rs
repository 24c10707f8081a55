//! MPI_Scatter and MPI_Scatterv (MPI-3.1 §5.6).

use super::args::{bad, check_len, check_root, mul, Blocks};
use super::comm::{post, CollComm, CollError, SendItem};
use super::hier;
use super::sites::Layout;
use super::tree::Binomial;
use super::{TAG_SCATTER, TAG_SCATTERV};

/// Sends `block` bytes to every rank from `send` at `root` (rank i's at
/// `i * block`; `send` only significant at the root). `recv == None` is
/// MPI_IN_PLACE (root only: its block stays in `send`).
///
/// Binomial tree: each rank receives its whole subtree's blocks from its
/// parent in one message and hands each child its part, largest first:
/// ceil(log2(size)) hops.
pub fn scatter(comm: &mut dyn CollComm, send: &[u8], recv: Option<&mut [u8]>, block: usize, root: usize) -> Result<(), CollError> {
    let (rank, size) = (comm.rank(), comm.size());
    check_root(root, size)?;
    if let Some(r) = &recv {
        check_len("scatter receive buffer", r.len(), block)?;
    } else if rank != root {
        return Err(bad("MPI_IN_PLACE in scatter is only allowed at the root".into()));
    }
    if let Some(l) = Layout::of(comm) {
        if rank == root {
            check_len("scatter send buffer", send.len(), mul("scatter", block, size)?)?;
        }
        return hier::scatter(comm, &l, send, recv, block, root);
    }
    let tree = Binomial::new(size, rank, root);
    let tmp = match tree.parent() {
        None => {
            check_len("scatter send buffer", send.len(), mul("scatter", block, size)?)?;
            // Relative order: the root's block first.
            let mut t = Vec::with_capacity(send.len());
            t.extend_from_slice(&send[root * block..]);
            t.extend_from_slice(&send[..root * block]);
            t
        }
        Some(parent) => {
            let mut t = vec![0u8; mul("scatter", block, tree.span())?];
            comm.recv(&mut t, Binomial::real(size, parent, root), TAG_SCATTER)?;
            t
        }
    };
    let sends: Vec<SendItem<'_>> = tree
        .children()
        .iter()
        .rev()
        .map(|c| {
            let at = (c.rel - tree.rel()) * block;
            SendItem { buf: &tmp[at..at + c.span * block], peer: Binomial::real(size, c.rel, root), tag: TAG_SCATTER }
        })
        .collect();
    post(comm, &sends, &mut [])?;
    if let Some(r) = recv {
        r.copy_from_slice(&tmp[..block]);
    }
    Ok(())
}

/// Sends `send_blocks.range(i)` of `send` to rank i (bytes; both only
/// significant at the root). `recv == None` is MPI_IN_PLACE (root only).
///
/// Linear: the root posts all sends at once, one hop. Across sites,
/// `hier::scatterv` sends each other site's blocks to its leader instead.
pub fn scatterv(comm: &mut dyn CollComm, send: &[u8], send_blocks: Blocks<'_>, recv: Option<&mut [u8]>, root: usize) -> Result<(), CollError> {
    let (rank, size) = (comm.rank(), comm.size());
    check_root(root, size)?;
    let sites = Layout::of(comm);
    if rank != root {
        let r = recv.ok_or_else(|| bad("MPI_IN_PLACE in scatterv is only allowed at the root".into()))?;
        return match sites {
            Some(l) => hier::scatterv(comm, &l, send, send_blocks, Some(r), root),
            None => comm.recv(r, root, TAG_SCATTERV),
        };
    }
    // Send blocks may overlap: they are only read.
    send_blocks.check("scatterv send blocks", size, send.len())?;
    if let Some(r) = &recv {
        check_len("scatterv receive buffer", r.len(), send_blocks.counts[rank])?;
    }
    if let Some(l) = sites {
        return hier::scatterv(comm, &l, send, send_blocks, recv, root);
    }
    if let Some(r) = recv {
        r.copy_from_slice(&send[send_blocks.range(rank)]);
    }
    let sends: Vec<SendItem<'_>> =
        (0..size).filter(|i| *i != rank).map(|peer| SendItem { buf: &send[send_blocks.range(peer)], peer, tag: TAG_SCATTERV }).collect();
    post(comm, &sends, &mut [])
}
