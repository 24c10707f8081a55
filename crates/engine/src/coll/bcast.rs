//! MPI_Bcast (MPI-3.1 §5.4): binomial tree.

use super::args::check_root;
use super::comm::{post, CollComm, CollError, SendItem};
use super::sites::Layout;
use super::tree::Binomial;
use super::TAG_BCAST;

/// Each rank receives `buf` from its parent, then sends it to all its
/// children at once, largest subtree first: ceil(log2(size)) hops.
pub fn bcast(comm: &mut dyn CollComm, buf: &mut [u8], root: usize) -> Result<(), CollError> {
    let (rank, size) = (comm.rank(), comm.size());
    check_root(root, size)?;
    if let Some(l) = Layout::of(comm) {
        return super::sites::bcast(comm, &l, buf, root);
    }
    let tree = Binomial::new(size, rank, root);
    if let Some(parent) = tree.parent() {
        comm.recv(buf, Binomial::real(size, parent, root), TAG_BCAST)?;
    }
    let sends: Vec<SendItem<'_>> =
        tree.children().iter().rev().map(|c| SendItem { buf, peer: Binomial::real(size, c.rel, root), tag: TAG_BCAST }).collect();
    post(comm, &sends, &mut [])
}
