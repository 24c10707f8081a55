//! What a program can ask of or set on a window (MPI-4.0 §§12.2.5–12.2.7,
//! 12.6): its group, predefined attributes, name, info, the memory of a
//! shared window's ranks, and the regions of a dynamic window.

use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use super::create::{bad_win, Flavor};
use super::{WinId, Window};
use crate::group::Group;
use crate::info::Info;
use crate::reqtable::PROC_NULL;
use crate::runtime::Runtime;

/// MPI_WIN_BASE, MPI_WIN_SIZE, MPI_WIN_DISP_UNIT, MPI_WIN_CREATE_FLAVOR.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WinAttrs {
    pub base: usize,
    pub size: usize,
    pub disp_unit: usize,
    pub flavor: Flavor,
}

/// The window hints of MPI-4.0 §12.2.1 and their defaults (None: no default).
const HINTS: [(&str, Option<&str>); 7] = [
    ("no_locks", None),
    ("accumulate_ordering", Some("rar,raw,war,waw")),
    ("accumulate_ops", Some("same_op_no_op")),
    ("mpi_accumulate_granularity", None),
    ("same_size", None),
    ("same_disp_unit", None),
    ("alloc_shared_noncontig", None),
];

/// `old` updated by the known hints of `new`; defaults filled in.
pub(crate) fn known_hints(old: &Info, new: &Info) -> MpiResult<Info> {
    let mut out = Info::default();
    for (k, default) in HINTS {
        if let Some(v) = new.get(k).or(old.get(k)).or(default) {
            out.set(k, v)?;
        }
    }
    Ok(out)
}

impl Runtime {
    fn with_win<T>(&self, w: WinId, f: impl FnOnce(&mut Window) -> MpiResult<T>) -> MpiResult<T> {
        let mut st = self.lock();
        f(st.wins.map.get_mut(&w.0).ok_or_else(|| bad_win(w))?)
    }

    /// MPI_Win_get_group.
    pub fn win_group(&self, w: WinId) -> MpiResult<Group> {
        self.with_win(w, |win| Ok((*win.group).clone()))
    }

    /// This process's rank in the window's group.
    pub fn win_rank(&self, w: WinId) -> MpiResult<usize> {
        let me = self.rank();
        self.with_win(w, |win| win.group.rank_of(me).ok_or_else(|| MpiError::new(ErrorClass::Intern, "not a member of own window")))
    }

    pub fn win_attrs(&self, w: WinId) -> MpiResult<WinAttrs> {
        self.with_win(w, |win| Ok(WinAttrs { base: win.mem.base(), size: win.mem.size(), disp_unit: win.disp_unit, flavor: win.flavor }))
    }

    pub fn win_set_name(&self, w: WinId, name: &str) -> MpiResult<()> {
        self.with_win(w, |win| {
            win.name = name.to_string();
            Ok(())
        })
    }
    pub fn win_get_name(&self, w: WinId) -> MpiResult<String> {
        self.with_win(w, |win| Ok(win.name.clone()))
    }
    /// MPI_Win_set_info: the window keeps the hints MPI defines (later
    /// ones replace earlier ones) and ignores the rest, as MPI allows.
    pub fn win_set_info(&self, w: WinId, info: Info) -> MpiResult<()> {
        self.with_win(w, |win| {
            win.info = known_hints(&win.info, &info)?;
            Ok(())
        })
    }
    pub fn win_get_info(&self, w: WinId) -> MpiResult<Info> {
        self.with_win(w, |win| Ok(win.info.clone()))
    }

    /// MPI_Win_shared_query: (size, displacement unit, address) of `rank`'s
    /// part of a shared window; MPI_PROC_NULL names the first non-empty part.
    pub fn win_shared_query(&self, w: WinId, rank: i32) -> MpiResult<(usize, usize, usize)> {
        self.with_win(w, |win| {
            if win.flavor != Flavor::Shared {
                return Err(MpiError::new(ErrorClass::RmaFlavor, "MPI_Win_shared_query needs a window from MPI_Win_allocate_shared"));
            }
            let me = win.group.rank_of(self.rank()).unwrap_or(0);
            let r = if rank == PROC_NULL {
                win.peers.iter().position(|p| p.0 > 0).unwrap_or(0)
            } else {
                usize::try_from(rank)
                    .ok()
                    .filter(|&r| r < win.peers.len())
                    .ok_or_else(|| MpiError::new(ErrorClass::Rank, format!("rank {rank} is not in the window's group")))?
            };
            let offset = |k: usize| win.peers[..k].iter().map(|p| p.0 as usize).sum::<usize>();
            let start = win.mem.base() - offset(me);
            let (size, unit) = win.peers[r];
            // An empty part has no address (MPICH's tests expect NULL).
            let addr = if size == 0 { 0 } else { start + offset(r) };
            Ok((size as usize, unit as usize, addr))
        })
    }

    /// MPI_Win_attach.
    pub fn win_attach(&self, w: WinId, addr: usize, size: usize) -> MpiResult<()> {
        self.with_win(w, |win| win.mem.attach(addr, size))
    }
    /// MPI_Win_detach.
    pub fn win_detach(&self, w: WinId, addr: usize) -> MpiResult<()> {
        self.with_win(w, |win| win.mem.detach(addr))
    }
}
