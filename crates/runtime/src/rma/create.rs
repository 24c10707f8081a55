//! Making and freeing windows (MPI-4.0 §12.2): every flavor is a private
//! duplicate of the communicator (its context carries the window's
//! traffic), everyone's size and displacement unit (so an origin can check
//! ranges before sending), and the memory.

use std::sync::Arc;

use wanmpi_engine::datatype::{BasicType, Datatype};
use wanmpi_engine::op::{Op, PredefOp};
use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use super::memory::{Mapping, Memory, Owned};
use super::shared::{self, Ticket};
use super::{Access, Exposure, WinId, Window};
use crate::collectives::Buf;
use crate::comm::CommId;
use crate::info::Info;
use crate::runtime::Runtime;

/// MPI_WIN_FLAVOR_* (MPICH's values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Create = 1,
    Allocate = 2,
    Dynamic = 3,
    Shared = 4,
}

/// What memory a new window gets.
enum Want {
    User { base: usize, size: usize },
    Allocate { size: usize },
    Shared { size: usize },
    Dynamic,
}

impl Runtime {
    /// MPI_Win_create over the program's `size` bytes at `base`.
    pub fn win_create(&self, base: usize, size: usize, disp_unit: usize, info: Info, comm: CommId) -> MpiResult<WinId> {
        self.make_window(Want::User { base, size }, disp_unit, info, comm).map(|(w, _)| w)
    }

    /// MPI_Win_allocate: a window over `size` zeroed bytes of ours; returns
    /// their address too.
    pub fn win_allocate(&self, size: usize, disp_unit: usize, info: Info, comm: CommId) -> MpiResult<(WinId, usize)> {
        self.make_window(Want::Allocate { size }, disp_unit, info, comm)
    }

    /// MPI_Win_allocate_shared: one mapping holding every rank's part, in
    /// rank order, contiguous; every rank of `comm` must be on this host.
    pub fn win_allocate_shared(&self, size: usize, disp_unit: usize, info: Info, comm: CommId) -> MpiResult<(WinId, usize)> {
        self.make_window(Want::Shared { size }, disp_unit, info, comm)
    }

    /// MPI_Win_create_dynamic.
    pub fn win_create_dynamic(&self, info: Info, comm: CommId) -> MpiResult<WinId> {
        self.make_window(Want::Dynamic, 1, info, comm).map(|(w, _)| w)
    }

    fn make_window(&self, want: Want, disp_unit: usize, info: Info, comm: CommId) -> MpiResult<(WinId, usize)> {
        if self.comm_is_inter(comm)? {
            return Err(MpiError::new(ErrorClass::Comm, "windows need an intra-communicator"));
        }
        if disp_unit == 0 {
            return Err(MpiError::new(ErrorClass::Disp, "the displacement unit must be positive"));
        }
        let dup = self.comm_dup(comm)?;
        let my_size = match want {
            Want::User { size, .. } | Want::Allocate { size } | Want::Shared { size } => size,
            Want::Dynamic => 0,
        };
        let n = self.comm_size(dup)?;
        let u64s = Datatype::basic(BasicType::Uint64);
        let mine = [my_size as u64, disp_unit as u64];
        let mut all = vec![0u64; 2 * n];
        // SAFETY: both buffers hold what the counts say and outlive the call.
        unsafe { self.allgather(Some(Buf::new(mine.as_ptr() as *mut u8, 2, &u64s)), Buf::new(all.as_mut_ptr().cast(), 2, &u64s), dup)? };
        let peers: Vec<(u64, u64)> = all.chunks(2).map(|c| (c[0], c[1])).collect();
        let mem = match want {
            Want::User { base, size } => Ok(Memory::Fixed { base, size, _owned: None, _mapping: None }),
            Want::Allocate { size } => Owned::new(size).map(|o| Memory::Fixed { base: o.addr(), size, _owned: Some(o), _mapping: None }),
            Want::Shared { size } => self.map_shared(dup, &peers).map(|(m, base)| Memory::Fixed { base, size, _owned: None, _mapping: Some(m) }),
            Want::Dynamic => Ok(Memory::Dynamic { regions: vec![] }),
        };
        // Everyone fails together, or the others would wait on this rank.
        let failed = self.any(dup, mem.is_err())?;
        let mem = match (mem, failed) {
            (Ok(m), false) => m,
            (Err(e), _) => {
                let _ = self.comm_free(dup);
                return Err(e);
            }
            (Ok(_), true) => {
                let _ = self.comm_free(dup);
                return Err(MpiError::new(ErrorClass::NoMem, "another rank could not make its part of the window"));
            }
        };
        let flavor = match want {
            Want::User { .. } => Flavor::Create,
            Want::Allocate { .. } => Flavor::Allocate,
            Want::Shared { .. } => Flavor::Shared,
            Want::Dynamic => Flavor::Dynamic,
        };
        let base = mem.base();
        let mut st = self.lock();
        let c = st.comms.get(dup).ok_or_else(|| MpiError::new(ErrorClass::Intern, "the window's communicator vanished"))?;
        let (ctx, group) = (c.p2p_ctx(), Arc::clone(&c.group));
        let w = Window {
            comm: dup,
            ctx,
            group,
            mem,
            disp_unit,
            peers,
            flavor,
            name: String::new(),
            info: super::query::known_hints(&Info::default(), &info)?,
            exposure: Exposure::default(),
            access: Access::default(),
            replies: vec![],
        };
        st.wins.next += 1;
        let id = st.wins.next;
        st.wins.map.insert(id, w);
        Ok((WinId(id), base))
    }

    /// True on every rank when `mine` is true on any.
    fn any(&self, comm: CommId, mine: bool) -> MpiResult<bool> {
        let ints = Datatype::basic(BasicType::Int);
        let (a, mut b) = (mine as i32, 0i32);
        // SAFETY: one int each way.
        unsafe {
            self.allreduce(Some((&a as *const i32).cast()), Buf::new((&mut b as *mut i32).cast(), 1, &ints), &Op::Predef(PredefOp::Max), comm)?
        };
        Ok(b != 0)
    }

    /// The lowest rank of `comm` whose `mine` is an error, and its words,
    /// on every rank (None when no rank failed): a failure anywhere is one
    /// every rank can report, naming the rank and the reason.
    fn first_failure(&self, comm: CommId, mine: Option<&str>) -> MpiResult<Option<(usize, String)>> {
        let (me, n) = (self.comm_rank(comm)?, self.comm_size(comm)?);
        let ints = Datatype::basic(BasicType::Int);
        let (a, mut first) = (if mine.is_some() { me as i32 } else { n as i32 }, 0i32);
        // SAFETY: one int each way.
        unsafe {
            self.allreduce(Some((&a as *const i32).cast()), Buf::new((&mut first as *mut i32).cast(), 1, &ints), &Op::Predef(PredefOp::Min), comm)?
        };
        if first < 0 || first as usize >= n {
            return Ok(None);
        }
        let mut text = [0u8; 512];
        if let (true, Some(why)) = (first as usize == me, mine) {
            // Cut at a character boundary, leaving a NUL.
            let mut end = why.len().min(text.len() - 1);
            while !why.is_char_boundary(end) {
                end -= 1;
            }
            text[..end].copy_from_slice(&why.as_bytes()[..end]);
        }
        let bytes = Datatype::basic(BasicType::Byte);
        // SAFETY: 512 bytes, outliving the call.
        unsafe { self.bcast(Buf::new(text.as_mut_ptr(), text.len(), &bytes), first, comm)? };
        let end = text.iter().position(|&b| b == 0).unwrap_or(text.len());
        Ok(Some((first as usize, String::from_utf8_lossy(&text[..end]).into_owned())))
    }

    /// Maps the memory of an MPI_Win_allocate_shared window, named nowhere
    /// (`shared.rs`): rank 0 makes a memfd and broadcasts where it is, the
    /// others open it through /proc and check it, and rank 0 closes its fd
    /// once every rank has mapped it (the mappings keep the memory). A
    /// failure on any rank fails the window on every rank, naming the rank
    /// and what was wrong. Returns the mapping and this rank's part.
    fn map_shared(&self, comm: CommId, peers: &[(u64, u64)]) -> MpiResult<(Mapping, usize)> {
        let me = self.comm_rank(comm)?;
        // Every rank sums the same sizes: an overflow fails all alike.
        let total = peers.iter().try_fold(0usize, |sum, p| sum.checked_add(usize::try_from(p.0).ok()?));
        let total = total.ok_or_else(|| "the parts of the window add up to more than this host can address".to_string());
        let offset: usize = peers[..me].iter().map(|p| p.0 as usize).sum();
        // No early return between here and `first_failure`: every rank
        // must take part in both collectives whatever happened to it.
        let mut ticket = [0u8; shared::TICKET_BYTES];
        let mut made = None;
        if me == 0 {
            let m = total.clone().and_then(shared::make);
            if let Ok((_, _, t)) = &m {
                ticket = Ticket::encode(Some(t));
            }
            made = Some(m.map(|(file, map, _)| (Some(file), map)));
        }
        let bytes = Datatype::basic(BasicType::Byte);
        // SAFETY: the ticket's bytes, outliving the call.
        unsafe { self.bcast(Buf::new(ticket.as_mut_ptr(), ticket.len(), &bytes), 0, comm)? };
        let mapped = match made {
            Some(m) => m.map_err(|e| format!("could not make the window's shared memory: {e}")),
            None => match Ticket::decode(&ticket) {
                Ok(Some(t)) => total
                    .and_then(|n| shared::open(&t, n))
                    .map(|map| (None, map))
                    .map_err(|e| format!("could not open rank 0's shared memory (pid {}, fd {}): {e}", t.pid, t.fd)),
                Ok(None) => Err("rank 0 made no shared memory".to_string()),
                Err(e) => Err(format!("rank 0 sent {e}")),
            },
        };
        let failure = self.first_failure(comm, mapped.as_ref().err().map(String::as_str))?;
        // Every rank has mapped the memory or given up: rank 0's fd may go.
        let map = mapped.ok().map(|(_file, map)| map);
        if let Some((rank, why)) = failure {
            return Err(MpiError::new(ErrorClass::RmaShared, format!("MPI_Win_allocate_shared: rank {rank} {why}")));
        }
        let map = map.ok_or_else(|| MpiError::new(ErrorClass::Intern, "a shared window failed on no rank but this one"))?;
        let base = map.ptr as usize + offset;
        Ok((map, base))
    }

    /// MPI_Win_free: waits for this process's operations, then for every
    /// rank (so nobody still targets this memory), then forgets the window.
    pub fn win_free(&self, w: WinId) -> MpiResult<()> {
        let comm = {
            let st = self.lock();
            let win = st.wins.get(w).ok_or_else(|| bad_win(w))?;
            if !win.access.locks.is_empty() || win.access.lock_all || win.access.started.is_some() || win.access.posted.is_some() {
                return Err(MpiError::new(ErrorClass::RmaSync, "MPI_Win_free inside an epoch (unlock, complete or wait first)"));
            }
            win.comm
        };
        self.wait_until(|st| Ok(st.wins.get(w).is_none_or(|x| x.access.unanswered(None) == 0).then_some(())))?;
        self.barrier(comm)?;
        self.lock().wins.map.remove(&w.0);
        self.comm_free(comm)
    }
}

pub(crate) fn bad_win(w: WinId) -> MpiError {
    MpiError::new(ErrorClass::Win, format!("window {} is not valid (freed?)", w.0))
}
