//! Site-aware rooted collectives (reduce, gather(v), scatter(v)) and
//! allgatherv: the rest of the family whose layout, site view and
//! all-leaders algorithms (barrier, bcast, allreduce, allgather) are in
//! `sites.rs`.
//!
//! A rooted operation is led, in the root's site, by the root itself, and in
//! every other site by its lowest rank; leaders talk only to the root, so
//! each slow link carries one message per operation (scatterv: two, sent
//! together). Inside a site the flat algorithms run over `Site`, a view of
//! the site's ranks with its own tags.
//!
//! | collective | across sites | hops on the critical path |
//! | --- | --- | --- |
//! | reduce | site reduce to the leader, leaders send partials to the root, which combines them in site order | site + 1 WAN |
//! | gather | site gather to the leader, leaders send their site's blocks to the root | site + 1 WAN |
//! | gatherv | the root's site: linear to the root; other sites: lengths then blocks to the leader, which sends the root one message (lengths, then blocks) | 1 WAN + <= site + 1 |
//! | scatter | the root sends every other leader its site's blocks at once, then each site's binomial scatter | 1 WAN + site |
//! | scatterv | the root sends its own site's blocks and, to every other leader, the site's counts and then its blocks, all at once; the leader scatters them linearly | 1 WAN + 1 |
//! | allgatherv | site gatherv to the leader (linear), leaders swap their sites' blocks all to all, site bcast of everything packed | 1 + 1 WAN + site |
//!
//! Only the root knows gatherv's and scatterv's counts. For gatherv the
//! leader learns its members' lengths from them (a site gather of 8-byte
//! lengths) and prefixes its message to the root with them, so the root
//! checks every rank's length against its count as the flat algorithm does.
//! For scatterv the root sends each leader the site's counts and then the
//! data as two messages posted together (one WAN latency, since the data
//! travels while the leader reads the counts); every rank still checks its
//! own receive length against what it gets.
//!
//! A non-commutative reduce is combined in site order, which is rank order
//! only when every site is one contiguous run of ranks; otherwise the
//! caller keeps the flat order-preserving tree (`reduce_allowed`).

mod allgather;
mod gather;
mod reduce;
mod scatter;

pub(in crate::coll) use allgather::allgatherv;
pub(in crate::coll) use gather::{gather, gatherv};
pub(in crate::coll) use reduce::{combine_in_order, reduce, reduce_allowed};
pub(in crate::coll) use scatter::{scatter, scatterv};

use super::comm::{post, CollComm, CollError, RecvItem};
use super::sites::Layout;

/// Tag of scatterv's data message from the root to a leader (its counts go
/// first with `TAG_LEADERS`).
pub(in crate::coll) const TAG_LEADERS_DATA: i32 = super::sites::TAG_LEADERS + 1;

/// The index of the site holding `rank` (sites hold ascending ranks).
fn site_index(l: &Layout, rank: usize) -> usize {
    l.sites.iter().position(|s| s.binary_search(&rank).is_ok()).unwrap_or(0)
}

/// Who leads each site in an operation rooted at `root`.
struct Rooted<'l> {
    l: &'l Layout,
    root: usize,
    root_site: usize,
}

impl<'l> Rooted<'l> {
    fn new(l: &'l Layout, root: usize) -> Self {
        Rooted { l, root, root_site: site_index(l, root) }
    }

    /// The root in its own site, the lowest rank elsewhere.
    fn leader(&self, site: usize) -> usize {
        if site == self.root_site {
            self.root
        } else {
            self.l.sites[site][0]
        }
    }

    /// The leader of this rank's site, as a rank of `Site`.
    fn my_local_leader(&self) -> usize {
        let leader = self.leader(self.l.mine);
        self.l.my_site().iter().position(|&r| r == leader).unwrap_or(0)
    }

    /// At the root: one message from every other site's leader, all posted
    /// at once, `len(site)` bytes each. One buffer per site; the root's own
    /// site's stays empty.
    fn collect_from_leaders(&self, comm: &mut dyn CollComm, tag: i32, len: impl Fn(usize) -> usize) -> Result<Vec<Vec<u8>>, CollError> {
        let n = self.l.sites.len();
        let mut parts: Vec<Vec<u8>> = (0..n).map(|s| if s == self.root_site { Vec::new() } else { vec![0u8; len(s)] }).collect();
        let mut recvs: Vec<RecvItem<'_>> =
            parts.iter_mut().enumerate().filter(|(s, _)| *s != self.root_site).map(|(s, buf)| RecvItem { buf, peer: self.leader(s), tag }).collect();
        post(comm, &[], &mut recvs)?;
        drop(recvs);
        Ok(parts)
    }
}

/// `lens` as 8-byte little-endian numbers.
fn encode_lengths(lens: impl Iterator<Item = usize>) -> Vec<u8> {
    lens.flat_map(|n| (n as u64).to_le_bytes()).collect()
}

/// The numbers of `encode_lengths`; a length this machine cannot address
/// is refused.
fn decode_lengths(bytes: &[u8]) -> Result<Vec<usize>, CollError> {
    bytes
        .chunks_exact(8)
        .map(|c| {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            usize::try_from(u64::from_le_bytes(b)).map_err(|_| CollError::Comm("a site leader announced a block larger than memory".into()))
        })
        .collect()
}

/// Displacements of `counts` packed back to back.
fn packed(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0, |at, c| {
            let d = *at;
            *at += c;
            Some(d)
        })
        .collect()
}
