//! MPI_Reduce across sites: a site reduce to each leader, then every other
//! leader sends its site's partial to the root, which combines them.

use super::super::comm::{CollComm, CollError};
use super::super::reduce::reduce_to;
use super::super::sites::{Layout, Site, FIRST_PHASE, TAG_LEADERS};
use super::Rooted;
use crate::datatype::BasicType;
use crate::op::Op;

/// Whether combining per-site partials in site order keeps MPI's order:
/// always for a commutative op, else only when every site is one run of
/// consecutive ranks (sites are ordered by their lowest rank).
pub(in crate::coll) fn reduce_allowed(l: &Layout, op: &Op) -> bool {
    op.is_commutative() || l.contiguous()
}

/// The reduction of `input` over all ranks at `root` (`None` elsewhere);
/// `reduce_allowed` must hold. Arguments are checked by the caller.
pub(in crate::coll) fn reduce(
    comm: &mut dyn CollComm,
    l: &Layout,
    input: Vec<u8>,
    count: usize,
    ty: BasicType,
    op: &Op,
    root: usize,
) -> Result<Option<Vec<u8>>, CollError> {
    let r = Rooted::new(l, root);
    let members = l.my_site().to_vec();
    let local_leader = r.my_local_leader();
    let Some(partial) = reduce_to(&mut Site::new(comm, &members, FIRST_PHASE), input, count, ty, op, local_leader)? else {
        return Ok(None);
    };
    if comm.rank() != root {
        comm.send(&partial, root, TAG_LEADERS)?;
        return Ok(None);
    }
    let mut parts = r.collect_from_leaders(comm, TAG_LEADERS, |_| partial.len())?;
    parts[r.root_site] = partial;
    combine_in_order(parts, count, ty, op).map(Some)
}

/// `parts[0] op parts[1] op ...`, each lower part the left operand.
pub(in crate::coll) fn combine_in_order(parts: Vec<Vec<u8>>, count: usize, ty: BasicType, op: &Op) -> Result<Vec<u8>, CollError> {
    let mut parts = parts.into_iter();
    let mut acc = parts.next().unwrap_or_default();
    for mut right in parts {
        op.apply(ty, count, &acc, &mut right)?;
        acc = right;
    }
    Ok(acc)
}
