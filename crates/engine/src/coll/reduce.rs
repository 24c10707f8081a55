//! MPI_Reduce (MPI-3.1 §5.9.1): binomial tree, order-preserving.

use super::args::{bad, check_len, check_root, reduction_bytes};
use super::comm::{post, CollComm, CollError, RecvItem};
use super::hier;
use super::sites::Layout;
use super::tree::Binomial;
use super::TAG_REDUCE;
use crate::datatype::BasicType;
use crate::op::Op;

/// Reduces `count` elements of `ty` from every rank into `recv` at `root`.
/// `send == None` is MPI_IN_PLACE (root only): the root's input is `recv`.
/// `recv` is only touched at the root, where it must hold
/// `count * ty.extent()` bytes.
pub fn reduce(
    comm: &mut dyn CollComm,
    send: Option<&[u8]>,
    recv: &mut [u8],
    count: usize,
    ty: BasicType,
    op: &Op,
    root: usize,
) -> Result<(), CollError> {
    let (rank, size) = (comm.rank(), comm.size());
    check_root(root, size)?;
    let n = reduction_bytes(count, ty, op)?;
    if rank == root {
        check_len("reduce receive buffer", recv.len(), n)?;
    }
    let input = match send {
        Some(s) => {
            check_len("reduce send buffer", s.len(), n)?;
            s.to_vec()
        }
        None if rank == root => recv.to_vec(),
        None => return Err(bad("MPI_IN_PLACE in reduce is only allowed at the root".into())),
    };
    if let Some(result) = reduce_any(comm, input, count, ty, op, root)? {
        recv.copy_from_slice(&result);
    }
    Ok(())
}

/// The reduction on checked arguments, result at `root` (`None`
/// elsewhere): across sites when the communicator spans sites, unless the
/// op's order rules it out (`hier::reduce_allowed`); else `reduce_to`.
pub(super) fn reduce_any(
    comm: &mut dyn CollComm,
    input: Vec<u8>,
    count: usize,
    ty: BasicType,
    op: &Op,
    root: usize,
) -> Result<Option<Vec<u8>>, CollError> {
    match Layout::of(comm).filter(|l| hier::reduce_allowed(l, op)) {
        Some(l) => hier::reduce(comm, &l, input, count, ty, op, root),
        None => reduce_to(comm, input, count, ty, op, root),
    }
}

/// The tree reduction itself, on checked arguments: returns the result at
/// `root`, `None` elsewhere.
///
/// Each node receives all its children's partial results at once, then
/// combines them in rank order (its own data first). A commutative op uses
/// a tree rooted at `root`. A non-commutative one uses a tree rooted at
/// rank 0 over unrotated ranks, where every subtree is a contiguous run of
/// ranks and the left operand is always the lower run; rank 0 then forwards
/// the result to `root` (one extra hop, only when root != 0).
pub(super) fn reduce_to(
    comm: &mut dyn CollComm,
    mut acc: Vec<u8>,
    count: usize,
    ty: BasicType,
    op: &Op,
    root: usize,
) -> Result<Option<Vec<u8>>, CollError> {
    let (rank, size) = (comm.rank(), comm.size());
    let tree_root = if op.is_commutative() { root } else { 0 };
    let tree = Binomial::new(size, rank, tree_root);
    let children = tree.children();
    let mut partials = vec![vec![0u8; acc.len()]; children.len()];
    let mut recvs: Vec<RecvItem<'_>> =
        partials.iter_mut().zip(&children).map(|(buf, c)| RecvItem { buf, peer: Binomial::real(size, c.rel, tree_root), tag: TAG_REDUCE }).collect();
    post(comm, &[], &mut recvs)?;
    drop(recvs);
    for mut higher in partials {
        op.apply(ty, count, &acc, &mut higher)?;
        acc = higher;
    }
    if let Some(parent) = tree.parent() {
        comm.send(&acc, Binomial::real(size, parent, tree_root), TAG_REDUCE)?;
    }
    if tree_root == root {
        return Ok((rank == root).then_some(acc));
    }
    if rank == tree_root {
        comm.send(&acc, root, TAG_REDUCE)?;
        Ok(None)
    } else if rank == root {
        comm.recv(&mut acc, tree_root, TAG_REDUCE)?;
        Ok(Some(acc))
    } else {
        Ok(None)
    }
}
