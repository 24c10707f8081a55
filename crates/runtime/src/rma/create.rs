//! Making and freeing windows (MPI-4.0 §12.2): every flavor is a private
//! duplicate of the communicator (its context carries the window's
//! traffic), everyone's size and displacement unit (so an origin can check
//! ranges before sending), and the memory.

use std::ffi::CString;
use std::sync::Arc;

use wanmpi_engine::datatype::{BasicType, Datatype};
use wanmpi_engine::op::{Op, PredefOp};
use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use super::memory::{Mapping, Memory, Owned};
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

    /// Maps the shared segment of an MPI_Win_allocate_shared window: rank 0
    /// makes it under a name it broadcasts, the others open it, and the
    /// name goes once all have it mapped. Returns the mapping and this
    /// rank's part.
    fn map_shared(&self, comm: CommId, peers: &[(u64, u64)]) -> MpiResult<(Mapping, usize)> {
        let me = self.comm_rank(comm)?;
        let total: u64 = peers.iter().map(|p| p.0).sum();
        let offset: u64 = peers[..me].iter().map(|p| p.0).sum();
        // Rank 0 makes the segment before it tells the name: the broadcast
        // is what lets the others open it. An empty name says it failed.
        let mut name = [0u8; 64];
        let mut made = None;
        if me == 0 {
            let s = format!("/wanmpi-win-{}-{}", std::process::id(), comm.0);
            let c = CString::new(s.clone()).map_err(|_| MpiError::new(ErrorClass::Intern, "bad segment name"))?;
            let m = open_and_map(&c, true, total.max(1) as usize);
            if m.is_ok() {
                name[..s.len()].copy_from_slice(s.as_bytes());
            }
            made = Some(m);
        }
        let bytes = Datatype::basic(BasicType::Byte);
        // SAFETY: 64 bytes, outliving the call.
        unsafe { self.bcast(Buf::new(name.as_mut_ptr(), 64, &bytes), 0, comm)? };
        let end = name.iter().position(|&b| b == 0).unwrap_or(64);
        let cname = CString::new(&name[..end]).map_err(|_| MpiError::new(ErrorClass::Intern, "bad segment name"))?;
        let mapped = match made {
            Some(m) => m,
            None if end == 0 => Err(MpiError::new(ErrorClass::RmaShared, "rank 0 could not make the shared window segment")),
            None => open_and_map(&cname, false, total.max(1) as usize),
        };
        // Rank 0 removes the name once nobody needs it to open the segment.
        let failed = self.any(comm, mapped.is_err())?;
        if me == 0 && end > 0 {
            // SAFETY: a valid C string.
            unsafe { libc::shm_unlink(cname.as_ptr()) };
        }
        let m = mapped?;
        if failed {
            return Err(MpiError::new(
                ErrorClass::RmaShared,
                "a rank of the communicator cannot map this host's shared segment (are all ranks on one host?)",
            ));
        }
        let base = m.ptr as usize + offset as usize;
        Ok((m, base))
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

fn open_and_map(name: &CString, create: bool, len: usize) -> MpiResult<Mapping> {
    let sys = |what: &str| MpiError::new(ErrorClass::RmaShared, format!("{what}: {}", std::io::Error::last_os_error()));
    let flags = if create { libc::O_CREAT | libc::O_EXCL | libc::O_RDWR } else { libc::O_RDWR };
    // SAFETY: a valid C string; the fd is closed below.
    let fd = unsafe { libc::shm_open(name.as_ptr(), flags, 0o600) };
    if fd < 0 {
        return Err(sys("cannot open the shared window segment"));
    }
    let close = || {
        // SAFETY: our fd.
        unsafe { libc::close(fd) };
    };
    // SAFETY: plain syscalls on our fd.
    if create && unsafe { libc::posix_fallocate(fd, 0, len as libc::off_t) } != 0 {
        close();
        return Err(MpiError::new(ErrorClass::NoMem, format!("cannot reserve {len} bytes of shared memory")));
    }
    // SAFETY: maps `len` bytes of our fd.
    let ptr = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd, 0) };
    close();
    if ptr == libc::MAP_FAILED {
        return Err(sys("cannot map the shared window segment"));
    }
    Ok(Mapping { ptr: ptr.cast(), len })
}
