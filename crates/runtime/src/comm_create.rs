//! Creating and freeing communicators (MPI-3.1 §6.4, §6.6): every new
//! communicator gets a context pair agreed by its members (see `context`).

use std::sync::Arc;

use wanmpi_engine::coll::{self, CollComm};
use wanmpi_engine::datatype::BasicType;
use wanmpi_engine::op::{Op, PredefOp};
use wanmpi_engine::{error::err, ErrorClass, MpiError, MpiResult};

use crate::coll_adapter::{coll_error, CollAdapter};
use crate::comm::{Comm, CommId, COMM_SELF, COMM_WORLD};
use crate::dynamic::GLOBAL_LEN;
use crate::group::{Comparison, Group};
use crate::info::{comm_hints, comm_hints_used, Info, ALLOW_OVERTAKING};
use crate::p2p::comm_ref;
use crate::runtime::{Runtime, State};
use crate::tagged::Tagged;

/// MPI_UNDEFINED (MPICH's value), the color that opts out of a split.
pub const UNDEFINED: i32 = -32766;

/// Tag of the leaders' exchange during inter-communicator setup, on the
/// collective context (user tags cannot reach it).
pub(crate) const TAG_INTER_SETUP: i32 = -100;

fn mask_bytes(m: &[u64]) -> Vec<u8> {
    m.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn mask_from(b: &[u8]) -> Vec<u64> {
    b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect()
}

impl Runtime {
    /// Agrees a context pair over `a`'s group (see `agree.rs`) and takes it.
    pub(crate) fn agree_over(&self, a: &mut dyn CollComm, key: u64) -> MpiResult<u32> {
        self.agree(key, &mut |w: &[u64]| and_over(a, None, None, w))
    }

    pub(crate) fn install(&self, st: &mut State, mut c: Comm, info: Info) -> CommId {
        let info = comm_hints(&Info::default(), &info);
        let relaxed = info.get_bool(ALLOW_OVERTAKING).unwrap_or(false);
        st.engine.set_allow_overtaking(c.p2p_ctx(), relaxed);
        c.info = info;
        let id = st.comms.insert(c);
        crate::ulfm::born(st, id);
        id
    }

    pub fn comm_size(&self, comm: CommId) -> MpiResult<usize> {
        Ok(comm_ref(&self.lock(), comm)?.size())
    }
    pub fn comm_rank(&self, comm: CommId) -> MpiResult<usize> {
        Ok(comm_ref(&self.lock(), comm)?.rank)
    }
    pub fn comm_group(&self, comm: CommId) -> MpiResult<Group> {
        Ok((*comm_ref(&self.lock(), comm)?.group).clone())
    }
    /// MPI_Comm_test_inter.
    pub fn comm_is_inter(&self, comm: CommId) -> MpiResult<bool> {
        Ok(comm_ref(&self.lock(), comm)?.is_inter())
    }
    /// How many ranks a collective's per-rank arrays cover: the remote
    /// group's size on an inter-communicator, the size otherwise.
    pub fn comm_peer_size(&self, comm: CommId) -> MpiResult<usize> {
        Ok(comm_ref(&self.lock(), comm)?.peer_group().size())
    }

    /// MPI_Comm_remote_size / MPI_Comm_remote_group.
    pub fn comm_remote_group(&self, comm: CommId) -> MpiResult<Group> {
        let st = self.lock();
        let c = comm_ref(&st, comm)?;
        c.remote.as_ref().map(|g| (**g).clone()).ok_or_else(|| MpiError::new(ErrorClass::Comm, "not an inter-communicator"))
    }

    /// MPI_Comm_dup (attributes copied through their keyvals' copy callbacks).
    pub fn comm_dup(&self, comm: CommId) -> MpiResult<CommId> {
        let info = comm_ref(&self.lock(), comm)?.info.clone();
        self.comm_dup_with_info(comm, info)
    }

    /// MPI_Comm_dup_with_info.
    pub fn comm_dup_with_info(&self, comm: CommId, info: Info) -> MpiResult<CommId> {
        let (group, remote, rank, errh, key) = {
            let st = self.lock();
            let c = comm_ref(&st, comm)?;
            (c.group.clone(), c.remote.clone(), c.rank, c.errhandler.clone(), u64::from(c.pair))
        };
        let pair = match &remote {
            None => self.agree_over(&mut self.adapter(comm)?, key)?,
            Some(_) => self.inter_agree(comm, &group)?,
        };
        let attrs = match self.copy_attrs(comm) {
            Ok(a) => a,
            Err(e) => {
                // A copy callback failed: no communicator, and its context back.
                self.lock().contexts.release(pair);
                return Err(e);
            }
        };
        let mut st = self.lock();
        let mut c = Comm::new(group, remote, rank, pair, String::new());
        c.errhandler = errh;
        c.attrs = attrs;
        Ok(self.install(&mut st, c, info))
    }

    /// MPI_Comm_split: `None` for MPI_UNDEFINED colors.
    pub fn comm_split(&self, comm: CommId, color: i32, key: i32) -> MpiResult<Option<CommId>> {
        if color < 0 && color != UNDEFINED {
            return err(ErrorClass::Arg, format!("split color {color} is negative and not MPI_UNDEFINED"));
        }
        if comm_ref(&self.lock(), comm)?.is_inter() {
            return self.split_inter(comm, color, key);
        }
        let mut a = self.adapter(comm)?;
        let mine: Vec<u8> = [color, key].iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut all = vec![0u8; 8 * a.size];
        coll::allgather(&mut a, Some(&mine), &mut all, 8).map_err(coll_error)?;
        let key = u64::from(comm_ref(&self.lock(), comm)?.pair);
        // Every process takes part in the agreement; those left out give the pair back.
        let pair = self.agree_over(&mut a, key)?;
        if color == UNDEFINED {
            self.lock().contexts.release(pair);
            return Ok(None);
        }
        let parent = Arc::clone(&a.group);
        let mut members: Vec<(i32, usize)> = (0..a.size)
            .filter_map(|r| {
                let c = i32::from_le_bytes(all[8 * r..8 * r + 4].try_into().ok()?);
                let k = i32::from_le_bytes(all[8 * r + 4..8 * r + 8].try_into().ok()?);
                (c == color).then_some((k, r))
            })
            .collect();
        members.sort();
        let group = Group::new(members.iter().filter_map(|&(_, r)| parent.world(r)).collect());
        let rank = members.iter().position(|&(_, r)| r == a.rank).expect("own rank is in its color");
        let mut st = self.lock();
        Ok(Some(self.install(&mut st, Comm::new(Arc::new(group), None, rank, pair, String::new()), Info::default())))
    }

    /// MPI_Comm_create: `None` at processes outside `group`.
    pub fn comm_create(&self, comm: CommId, group: &Group) -> MpiResult<Option<CommId>> {
        if comm_ref(&self.lock(), comm)?.is_inter() {
            return self.create_inter(comm, group);
        }
        let mut a = self.adapter(comm)?;
        if group.members().iter().any(|w| a.group.rank_of(*w).is_none()) {
            return err(ErrorClass::Group, "the group is not a subset of the communicator's group");
        }
        let key = u64::from(comm_ref(&self.lock(), comm)?.pair);
        let pair = self.agree_over(&mut a, key)?;
        let mut st = self.lock();
        let Some(rank) = group.rank_of(self.rank) else {
            st.contexts.release(pair);
            return Ok(None);
        };
        Ok(Some(self.install(&mut st, Comm::new(Arc::new(group.clone()), None, rank, pair, String::new()), Info::default())))
    }

    /// MPI_Comm_create_group (MPI-4.0 §7.4.2): collective over the members
    /// of `group` only, told apart from other such calls on `comm` by `tag`.
    /// `None` when this process is not in `group` (a local call then).
    pub fn comm_create_group(&self, comm: CommId, group: &Group, tag: i32) -> MpiResult<Option<CommId>> {
        if !(0..=crate::reqtable::TAG_UB).contains(&tag) {
            return err(ErrorClass::Tag, format!("tag {tag} is negative"));
        }
        let (parent, ctx, key) = {
            let st = self.lock();
            let c = comm_ref(&st, comm)?;
            if c.is_inter() {
                return err(ErrorClass::Comm, "MPI_Comm_create_group needs an intra-communicator");
            }
            (Arc::clone(&c.group), c.coll_ctx(), (u64::from(c.pair) << 32) | tag as u64)
        };
        if group.members().iter().any(|w| parent.rank_of(*w).is_none()) {
            return err(ErrorClass::Group, "the group is not a subset of the communicator's group");
        }
        let Some(rank) = group.rank_of(self.rank) else { return Ok(None) };
        let members = Arc::new(group.clone());
        let inner = CollAdapter { rt: self, group: Arc::clone(&members), ctx, rank, size: members.size() };
        let pair = self.agree_over(&mut Tagged { inner, tag }, key)?;
        let mut st = self.lock();
        Ok(Some(self.install(&mut st, Comm::new(members, None, rank, pair, String::new()), Info::default())))
    }

    /// MPI_Comm_free.
    pub fn comm_free(&self, comm: CommId) -> MpiResult<()> {
        if comm == COMM_WORLD || comm == COMM_SELF {
            return err(ErrorClass::Comm, "MPI_COMM_WORLD and MPI_COMM_SELF cannot be freed");
        }
        self.delete_all_attrs(comm)?;
        let mut st = self.lock();
        let c = st.comms.remove(comm).ok_or_else(|| MpiError::new(ErrorClass::Comm, "communicator is not valid"))?;
        st.contexts.release(c.pair);
        drop(st);
        self.forget_parent(comm);
        Ok(())
    }

    /// MPI_Comm_compare.
    pub fn comm_compare(&self, a: CommId, b: CommId) -> MpiResult<Comparison> {
        let st = self.lock();
        let (ca, cb) = (comm_ref(&st, a)?, comm_ref(&st, b)?);
        if a == b {
            return Ok(Comparison::Ident);
        }
        if ca.is_inter() != cb.is_inter() {
            return Ok(Comparison::Unequal);
        }
        Ok(match ca.group.compare(&cb.group) {
            Comparison::Ident => Comparison::Congruent,
            other => other,
        })
    }

    /// MPI_Comm_set_info: the hints MPI defines are kept (a key not given
    /// keeps its value), others ignored (`comm_hints`).
    pub fn comm_set_info(&self, comm: CommId, info: Info) -> MpiResult<()> {
        let mut st = self.lock();
        let c = comm_ref(&st, comm)?;
        let (ctx, kept) = (c.p2p_ctx(), comm_hints(&c.info, &info));
        st.engine.set_allow_overtaking(ctx, kept.get_bool(ALLOW_OVERTAKING).unwrap_or(false));
        if let Some(c) = st.comms.get_mut(comm) {
            c.info = kept;
        }
        Ok(())
    }

    /// MPI_Comm_get_info: the hints in use, defaults included.
    pub fn comm_get_info(&self, comm: CommId) -> MpiResult<Info> {
        Ok(comm_hints_used(&comm_ref(&self.lock(), comm)?.info))
    }

    pub fn comm_set_name(&self, comm: CommId, name: &str) -> MpiResult<()> {
        let mut st = self.lock();
        comm_ref(&st, comm)?;
        if let Some(c) = st.comms.get_mut(comm) {
            c.name = name.to_string();
        }
        Ok(())
    }

    pub fn comm_get_name(&self, comm: CommId) -> MpiResult<String> {
        Ok(comm_ref(&self.lock(), comm)?.name.clone())
    }

    /// MPI_Intercomm_create: the leaders swap their groups over the peer
    /// communicator, then both groups agree a context (bridged by them).
    pub fn intercomm_create(&self, local: CommId, local_leader: i32, peer: CommId, remote_leader: i32, tag: i32) -> MpiResult<CommId> {
        let mut a = self.adapter(local)?;
        let leader = usize::try_from(local_leader)
            .ok()
            .filter(|l| *l < a.size)
            .ok_or_else(|| MpiError::new(ErrorClass::Rank, format!("local leader {local_leader} is not a rank of the local communicator")))?;
        let mut link = None;
        let mut remote_bytes = vec![];
        if a.rank == leader {
            let (peer_group, peer_ctx) = {
                let st = self.lock();
                let p = comm_ref(&st, peer)?;
                (Arc::clone(p.peer_group()), p.p2p_ctx())
            };
            let rl = usize::try_from(remote_leader)
                .ok()
                .and_then(|r| peer_group.world(r))
                .ok_or_else(|| MpiError::new(ErrorClass::Rank, format!("remote leader {remote_leader} is not a rank of the peer communicator")))?;
            let pair_group = Arc::new(Group::new(vec![self.rank, rl]));
            let mut x = CollAdapter { rt: self, group: pair_group, ctx: peer_ctx, rank: 0, size: 2 };
            let mut rsize = [0u8; 8];
            swap(&mut x, &(a.size as u64).to_le_bytes(), &mut rsize, tag)?;
            // Peer ids are this process's own: the group travels as names
            // among jobs (the same as world ranks inside one job).
            remote_bytes = vec![0u8; GLOBAL_LEN * u64::from_le_bytes(rsize) as usize];
            swap(&mut x, &self.globals_of(a.group.members()), &mut remote_bytes, tag)?;
            link = Some(x);
        }
        // The leader tells its group the remote group.
        let mut rsize = ((remote_bytes.len() / GLOBAL_LEN) as u64).to_le_bytes();
        coll::bcast(&mut a, &mut rsize, leader).map_err(coll_error)?;
        remote_bytes.resize(GLOBAL_LEN * u64::from_le_bytes(rsize) as usize, 0);
        coll::bcast(&mut a, &mut remote_bytes, leader).map_err(coll_error)?;
        let remote = Group::new(self.locals_of(&remote_bytes)?);
        // Both sides know both groups now: the key is the lower group's
        // first member (by name among jobs: ids differ between processes)
        // and the tag.
        let mine = self.globals_of(&a.group.members()[..1]);
        let first = mine.min(remote_bytes[..GLOBAL_LEN].to_vec());
        let key = crate::dynamic::name_key(&first) ^ u64::from(tag as u32);
        let pair = self.agree(key, &mut |w: &[u64]| {
            let mut swap_words = |mine: &[u8], theirs: &mut [u8]| match link.as_mut() {
                Some(x) => swap(x, mine, theirs, tag),
                None => Ok(()),
            };
            let link: Option<&mut Link<'_>> = if a.rank == leader { Some(&mut swap_words) } else { None };
            and_over(&mut a, Some(leader), link, w)
        })?;
        let mut st = self.lock();
        let c = Comm::new(Arc::clone(&a.group), Some(Arc::new(remote)), a.rank, pair, String::new());
        Ok(self.install(&mut st, c, Info::default()))
    }

    /// Agrees a context pair over both groups of an inter-communicator.
    pub(crate) fn inter_agree(&self, inter: CommId, local: &Arc<Group>) -> MpiResult<u32> {
        let (remote, ctx, rank, key) = {
            let st = self.lock();
            let c = comm_ref(&st, inter)?;
            (c.remote.clone().expect("inter-communicator"), c.coll_ctx(), c.rank, u64::from(c.pair))
        };
        let mut a = CollAdapter { rt: self, group: Arc::clone(local), ctx, rank, size: local.size() };
        let pair_group = Arc::new(Group::new(vec![self.rank, remote.world(0).expect("remote group is not empty")]));
        let mut x = CollAdapter { rt: self, group: pair_group, ctx, rank: 0, size: 2 };
        self.agree(key, &mut |w: &[u64]| {
            let mut swap_words = |mine: &[u8], theirs: &mut [u8]| swap(&mut x, mine, theirs, TAG_INTER_SETUP);
            let link: Option<&mut Link<'_>> = if rank == 0 { Some(&mut swap_words) } else { None };
            and_over(&mut a, Some(0), link, w)
        })
    }

    /// MPI_Intercomm_merge: the group with `high == false` comes first (ties
    /// broken by the leaders' world ranks).
    pub fn intercomm_merge(&self, inter: CommId, high: bool) -> MpiResult<CommId> {
        let (local, remote, ctx, rank) = {
            let st = self.lock();
            let c = comm_ref(&st, inter)?;
            let r = c.remote.clone().ok_or_else(|| MpiError::new(ErrorClass::Comm, "MPI_Intercomm_merge needs an inter-communicator"))?;
            (c.group.clone(), r, c.coll_ctx(), c.rank)
        };
        // Leaders swap their `high` flags; each side learns the other's.
        let mut a = CollAdapter { rt: self, group: Arc::clone(&local), ctx, rank, size: local.size() };
        // Leaders swap `high` and who they are among jobs: (job uid, world
        // rank) orders the groups when both said the same (world ranks
        // alone do not compare across jobs joined by spawn or connect).
        let me = |high: bool| -> Vec<u8> { [&[u8::from(high)][..], &self.job_uid().to_le_bytes(), &self.rank.to_le_bytes()].concat() };
        let mut flag = [me(high), me(false)].concat();
        if rank == 0 {
            let pair_group = Arc::new(Group::new(vec![self.rank, remote.world(0).expect("remote group is not empty")]));
            let mut x = CollAdapter { rt: self, group: pair_group, ctx, rank: 0, size: 2 };
            let mut theirs = [0u8; 13];
            swap(&mut x, &flag[..13], &mut theirs, TAG_INTER_SETUP - 1)?;
            flag[13..].copy_from_slice(&theirs);
        }
        coll::bcast(&mut a, &mut flag, 0).map_err(coll_error)?;
        let who = |b: &[u8]| (u64::from_le_bytes(b[1..9].try_into().expect("8 bytes")), u32::from_le_bytes(b[9..13].try_into().expect("4 bytes")));
        let (my_high, their_high) = (flag[0] != 0, flag[13] != 0);
        let local_first = if my_high == their_high { who(&flag[..13]) < who(&flag[13..]) } else { !my_high };
        let members: Vec<u32> = if local_first {
            local.members().iter().chain(remote.members()).copied().collect()
        } else {
            remote.members().iter().chain(local.members()).copied().collect()
        };
        let group = Group::new(members);
        let pair = self.inter_agree(inter, &local)?;
        let new_rank = group.rank_of(self.rank).expect("own rank is in the merged group");
        let mut st = self.lock();
        Ok(self.install(&mut st, Comm::new(Arc::new(group), None, new_rank, pair, String::new()), Info::default()))
    }
}

/// Swaps bytes with the other side's leader.
pub(crate) type Link<'a> = dyn FnMut(&[u8], &mut [u8]) -> MpiResult<()> + 'a;

/// The AND of `words` over `a`'s group, and on an inter-communicator
/// (`leader`: the group's leader) over the other group's too: the leader
/// swaps its group's AND with the other leader through `link` (given at
/// the leader only) and broadcasts the total.
pub(crate) fn and_over(a: &mut dyn CollComm, leader: Option<usize>, link: Option<&mut Link<'_>>, words: &[u64]) -> MpiResult<Vec<u64>> {
    let mine = mask_bytes(words);
    let mut out = vec![0u8; mine.len()];
    coll::allreduce(a, Some(&mine), &mut out, words.len(), BasicType::Uint64, &Op::Predef(PredefOp::Band)).map_err(coll_error)?;
    let Some(leader) = leader else { return Ok(mask_from(&out)) };
    if let Some(link) = link {
        let mut theirs = vec![0u8; out.len()];
        link(&out, &mut theirs)?;
        for (o, t) in out.iter_mut().zip(theirs) {
            *o &= t;
        }
    }
    coll::bcast(a, &mut out, leader).map_err(coll_error)?;
    Ok(mask_from(&out))
}

/// Sends `mine` to the other member of a two-process adapter and receives
/// `theirs` from it.
pub(crate) fn swap(x: &mut CollAdapter<'_>, mine: &[u8], theirs: &mut [u8], tag: i32) -> MpiResult<()> {
    use wanmpi_engine::coll::{CollComm, RecvItem, SendItem};
    x.exchange(&[SendItem { buf: mine, peer: 1, tag }], &mut [RecvItem { buf: theirs, peer: 1, tag }]).map_err(coll_error)
}
