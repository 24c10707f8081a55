//! Site-aware collectives, as MagPIe and MPICH-G2 did: when a communicator
//! spans sites joined by slow links, cross each slow link once instead of
//! log2(p) times. Work inside a site runs the flat algorithms over a view of
//! the site's ranks (`Site`); only site leaders (the lowest rank of each
//! site, or the root in its own site) talk across sites, all at once in one
//! exchange.
//!
//! | collective | across sites | hops on the critical path |
//! | --- | --- | --- |
//! | barrier | fan-in to the site's leader, leaders signal every other leader, fan-out | 1 WAN + 2 site hops |
//! | bcast | the root sends to every other site's leader at once, then each site's binomial bcast | 1 WAN + site |
//! | allreduce | site reduce to the leader, leaders swap partials all to all and combine them in site order, site bcast | 1 WAN + 2 x site |
//! | allgather | site gather to the leader, leaders swap their sites' blocks all to all, site bcast | 1 WAN + 2 x site |
//!
//! A non-commutative allreduce keeps the flat order-preserving algorithm
//! unless every site's ranks are one contiguous run (then combining the
//! partials in site order is rank order). Reduce, gather(v), scatter(v)
//! and allgatherv are in `hier/`, on the same `Layout` and `Site`;
//! alltoall(v) keeps its one-exchange algorithm, which already crosses
//! once. The table of all of them is in `mod.rs`.

use super::comm::{post, CollComm, CollError, RecvItem, SendItem};
use crate::datatype::BasicType;
use crate::op::Op;

/// Tag offsets of the phases inside a site, and the tag of the leaders'
/// exchange, so no phase matches another's messages.
pub(super) const FIRST_PHASE: i32 = 1000;
pub(super) const SECOND_PHASE: i32 = 2000;
pub(super) const TAG_LEADERS: i32 = 3000;

/// The sites of a communicator: each site's ranks in ascending order,
/// sites ordered by their lowest rank.
pub(super) struct Layout {
    pub sites: Vec<Vec<usize>>,
    /// Index of this rank's site.
    pub mine: usize,
}

impl Layout {
    /// The layout, or `None` when every rank is in one site.
    pub fn of(comm: &dyn CollComm) -> Option<Layout> {
        let site: Vec<usize> = (0..comm.size()).map(|r| comm.site_of(r)).collect();
        Layout::from_sites(comm.rank(), &site)
    }

    /// The layout of ranks whose sites are `site` (rank `rank`'s view), or
    /// `None` when they are all one site.
    pub fn from_sites(rank: usize, site: &[usize]) -> Option<Layout> {
        let mut ids: Vec<usize> = Vec::new();
        let mut sites: Vec<Vec<usize>> = Vec::new();
        for (r, &s) in site.iter().enumerate() {
            match ids.iter().position(|&x| x == s) {
                Some(i) => sites[i].push(r),
                None => {
                    ids.push(s);
                    sites.push(vec![r]);
                }
            }
        }
        if sites.len() < 2 {
            return None;
        }
        let mine = sites.iter().position(|s| s.contains(&rank))?;
        Some(Layout { sites, mine })
    }

    pub fn my_site(&self) -> &[usize] {
        &self.sites[self.mine]
    }

    /// Every site is one run of consecutive ranks.
    pub fn contiguous(&self) -> bool {
        self.sites.iter().all(|s| s.windows(2).all(|w| w[1] == w[0] + 1))
    }
}

/// One site's ranks as a communicator of their own, with phase tags kept
/// apart; its ranks are indices into `members`.
pub(super) struct Site<'a> {
    comm: &'a mut dyn CollComm,
    members: &'a [usize],
    rank: usize,
    tag_base: i32,
}

impl<'a> Site<'a> {
    pub fn new(comm: &'a mut dyn CollComm, members: &'a [usize], tag_base: i32) -> Site<'a> {
        let me = comm.rank();
        let rank = members.iter().position(|&r| r == me).unwrap_or(0);
        Site { comm, members, rank, tag_base }
    }
}

impl CollComm for Site<'_> {
    fn rank(&self) -> usize {
        self.rank
    }
    fn size(&self) -> usize {
        self.members.len()
    }
    fn exchange(&mut self, sends: &[SendItem<'_>], recvs: &mut [RecvItem<'_>]) -> Result<(), CollError> {
        let m = self.members;
        let base = self.tag_base;
        let sends: Vec<SendItem<'_>> = sends.iter().map(|s| SendItem { buf: s.buf, peer: m[s.peer], tag: s.tag + base }).collect();
        let mut recvs: Vec<RecvItem<'_>> = recvs.iter_mut().map(|r| RecvItem { buf: &mut *r.buf, peer: m[r.peer], tag: r.tag + base }).collect();
        self.comm.exchange(&sends, &mut recvs).map_err(|e| match e {
            CollError::LengthMismatch { peer, expected, got } => CollError::LengthMismatch { peer: m[peer], expected, got },
            e => e,
        })
    }
}

/// Fan-in to the site's leader, leaders signal each other, fan-out: one
/// hop each inside the site (a site's ranks are few and near), one across.
pub(super) fn barrier(comm: &mut dyn CollComm, l: &Layout) -> Result<(), CollError> {
    let members = l.my_site();
    let (leader, rank) = (members[0], comm.rank());
    let signal = |peers: &[usize], tag: i32| -> (Vec<SendItem<'static>>, Vec<RecvItem<'static>>) {
        let sends = peers.iter().map(|&p| SendItem { buf: &[], peer: p, tag }).collect();
        let recvs = peers.iter().map(|&p| RecvItem { buf: &mut [], peer: p, tag }).collect();
        (sends, recvs)
    };
    if rank != leader {
        comm.send(&[], leader, FIRST_PHASE + super::TAG_BARRIER)?;
        return comm.recv(&mut [], leader, SECOND_PHASE + super::TAG_BARRIER);
    }
    let (_, mut arrivals) = signal(&members[1..], FIRST_PHASE + super::TAG_BARRIER);
    post(comm, &[], &mut arrivals)?;
    let others: Vec<usize> = l.sites.iter().enumerate().filter(|(i, _)| *i != l.mine).map(|(_, s)| s[0]).collect();
    let (sends, mut recvs) = signal(&others, TAG_LEADERS);
    comm.exchange(&sends, &mut recvs)?;
    let (release, _) = signal(&members[1..], SECOND_PHASE + super::TAG_BARRIER);
    post(comm, &release, &mut [])
}

pub(super) fn bcast(comm: &mut dyn CollComm, l: &Layout, buf: &mut [u8], root: usize) -> Result<(), CollError> {
    // The root leads its own site; other sites are led by their lowest rank.
    let leader = |s: &[usize]| if s.contains(&root) { root } else { s[0] };
    let rank = comm.rank();
    if rank == root {
        let sends: Vec<SendItem<'_>> =
            l.sites.iter().filter(|s| !s.contains(&root)).map(|s| SendItem { buf, peer: s[0], tag: TAG_LEADERS }).collect();
        post(comm, &sends, &mut [])?;
    } else if rank == leader(l.my_site()) {
        comm.recv(buf, root, TAG_LEADERS)?;
    }
    let members = l.my_site().to_vec();
    let local_root = members.iter().position(|&r| r == leader(&members)).unwrap_or(0);
    super::bcast::bcast(&mut Site::new(comm, &members, FIRST_PHASE), buf, local_root)
}

/// Allreduce across sites; `Ok(false)` when the op's order rules it out
/// (the caller then runs the flat algorithm).
pub(super) fn allreduce(comm: &mut dyn CollComm, l: &Layout, recv: &mut [u8], count: usize, ty: BasicType, op: &Op) -> Result<bool, CollError> {
    if !super::hier::reduce_allowed(l, op) {
        return Ok(false);
    }
    let members = l.my_site().to_vec();
    let leader = comm.rank() == members[0];
    let input = recv.to_vec();
    super::reduce::reduce(&mut Site::new(comm, &members, FIRST_PHASE), Some(&input), recv, count, ty, op, 0)?;
    if leader {
        let n = recv.len();
        let others: Vec<(usize, usize)> = l.sites.iter().enumerate().filter(|(i, _)| *i != l.mine).map(|(i, s)| (i, s[0])).collect();
        let mut parts = vec![vec![0u8; n]; l.sites.len()];
        parts[l.mine].copy_from_slice(recv);
        {
            let sends: Vec<SendItem<'_>> = others.iter().map(|&(_, p)| SendItem { buf: recv, peer: p, tag: TAG_LEADERS }).collect();
            let mut bufs: Vec<(usize, &mut Vec<u8>)> = parts.iter_mut().enumerate().filter(|(i, _)| *i != l.mine).collect();
            let mut recvs: Vec<RecvItem<'_>> =
                bufs.iter_mut().zip(&others).map(|((_, b), &(_, p))| RecvItem { buf: b.as_mut_slice(), peer: p, tag: TAG_LEADERS }).collect();
            comm.exchange(&sends, &mut recvs)?;
        }
        // Site order is rank order when sites are contiguous.
        recv.copy_from_slice(&super::hier::combine_in_order(parts, count, ty, op)?);
    }
    super::bcast::bcast(&mut Site::new(comm, &members, SECOND_PHASE), recv, 0)?;
    Ok(true)
}

pub(super) fn allgather(comm: &mut dyn CollComm, l: &Layout, recv: &mut [u8], block: usize) -> Result<(), CollError> {
    let members = l.my_site().to_vec();
    let rank = comm.rank();
    let mine = recv[rank * block..(rank + 1) * block].to_vec();
    let mut site_blocks = vec![0u8; block * members.len()];
    super::gather::gather(&mut Site::new(comm, &members, FIRST_PHASE), Some(&mine), &mut site_blocks, block, 0)?;
    if rank == members[0] {
        let others: Vec<(usize, usize)> = l.sites.iter().enumerate().filter(|(i, _)| *i != l.mine).map(|(i, s)| (i, s[0])).collect();
        let mut got: Vec<Vec<u8>> = l.sites.iter().map(|s| vec![0u8; block * s.len()]).collect();
        {
            let sends: Vec<SendItem<'_>> = others.iter().map(|&(_, p)| SendItem { buf: &site_blocks, peer: p, tag: TAG_LEADERS }).collect();
            let mut bufs: Vec<&mut Vec<u8>> = got.iter_mut().enumerate().filter(|(i, _)| *i != l.mine).map(|(_, b)| b).collect();
            let mut recvs: Vec<RecvItem<'_>> =
                bufs.iter_mut().zip(&others).map(|(b, &(_, p))| RecvItem { buf: b.as_mut_slice(), peer: p, tag: TAG_LEADERS }).collect();
            comm.exchange(&sends, &mut recvs)?;
        }
        got[l.mine] = site_blocks;
        for (s, blocks) in l.sites.iter().zip(&got) {
            for (k, &r) in s.iter().enumerate() {
                recv[r * block..(r + 1) * block].copy_from_slice(&blocks[k * block..(k + 1) * block]);
            }
        }
    }
    super::bcast::bcast(&mut Site::new(comm, &members, SECOND_PHASE), recv, 0)
}
