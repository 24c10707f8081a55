//! File management and views (MPI-4.0 §14.2.4-14.3, §14.6.1): size,
//! preallocation, sync, hints, atomicity, and MPI_File_set_view. The
//! collective calls that change the file (set_size, preallocate) are done
//! by rank 0 alone and their outcome shared, so every rank returns after
//! the change and with the same result.

use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use wanmpi_engine::datatype::Datatype;
use wanmpi_engine::{error::err, ErrorClass, MpiResult};
use wanmpi_runtime::{Group, Info};

use crate::agree;
use crate::amode;
use crate::datarep::Datarep;
use crate::file::File;
use crate::oserr::{last, os_error};
use crate::view::View;

/// MPI_DISPLACEMENT_CURRENT (MPICH's value).
pub const DISPLACEMENT_CURRENT: i64 = -54278278;

impl File {
    fn check_writable(&self, what: &str) -> MpiResult<()> {
        if !amode::writable(self.amode) {
            return err(ErrorClass::ReadOnly, format!("{what}: {} was opened MPI_MODE_RDONLY", self.name));
        }
        Ok(())
    }

    fn size_arg(&self, size: i64, what: &str) -> MpiResult<u64> {
        u64::try_from(size).or_else(|_| err(ErrorClass::Arg, format!("{what}: size {size} is negative")))
    }

    /// MPI_File_set_size: truncates or extends to `size` bytes.
    pub fn set_size(&self, size: i64) -> MpiResult<()> {
        let local = self.check_writable("MPI_File_set_size").and_then(|_| self.size_arg(size, "MPI_File_set_size"));
        let size = agree::all_ok(&self.rt, self.comm, local)?;
        agree::same(&self.rt, self.comm, size as i64, "the size of MPI_File_set_size")?;
        let done =
            if self.rt.comm_rank(self.comm)? == 0 { self.data.set_len(size).map_err(|e| os_error(&e, "cannot resize", &self.name)) } else { Ok(()) };
        agree::root_ok(&self.rt, self.comm, 0, done)
    }

    /// MPI_File_preallocate: makes room for `size` bytes; never shrinks.
    pub fn preallocate(&self, size: i64) -> MpiResult<()> {
        let local = self.check_writable("MPI_File_preallocate").and_then(|_| self.size_arg(size, "MPI_File_preallocate"));
        let size = agree::all_ok(&self.rt, self.comm, local)?;
        agree::same(&self.rt, self.comm, size as i64, "the size of MPI_File_preallocate")?;
        let done = if self.rt.comm_rank(self.comm)? == 0 && size > 0 { self.allocate(size) } else { Ok(()) };
        agree::root_ok(&self.rt, self.comm, 0, done)
    }

    fn allocate(&self, size: u64) -> MpiResult<()> {
        // SAFETY: plain syscall on our open descriptor.
        let rc = unsafe { libc::posix_fallocate(self.data.as_raw_fd(), 0, size as libc::off_t) };
        match rc {
            0 => Ok(()),
            // A file system without fallocate: extending is what is left.
            libc::EOPNOTSUPP | libc::EINVAL => {
                let now = self.size()? as u64;
                if now < size {
                    self.data.set_len(size).map_err(|e| os_error(&e, "cannot extend", &self.name))?;
                }
                Ok(())
            }
            e => Err(os_error(&std::io::Error::from_raw_os_error(e), "cannot preallocate", &self.name)),
        }
    }

    /// MPI_File_get_size, in bytes.
    pub fn size(&self) -> MpiResult<i64> {
        Ok(self.data.metadata().map_err(|e| os_error(&e, "cannot stat", &self.name))?.len() as i64)
    }

    /// MPI_File_sync: this rank's writes reach the storage; collective, and
    /// returns only once every rank synced (the sync-barrier-sync of
    /// MPI-4.0 §14.6.1 then needs no barrier of its own).
    pub fn sync(&self) -> MpiResult<()> {
        // SAFETY: plain syscall on our open descriptor.
        let local = if unsafe { libc::fsync(self.data.as_raw_fd()) } == 0 { Ok(()) } else { Err(last("cannot sync", &self.name)) };
        agree::all_ok(&self.rt, self.comm, local)
    }

    /// MPI_File_get_group: the group of the communicator the file was opened on.
    pub fn group(&self) -> MpiResult<Group> {
        self.rt.comm_group(self.comm)
    }

    /// MPI_File_get_info: the hints in use (those the program gave, and
    /// the file's name).
    pub fn info(&self) -> Info {
        let mut i = self.info.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let _ = i.set("filename", &self.name);
        i
    }

    /// MPI_File_set_info (collective): hints are kept, none changes how wanmpi works.
    pub fn set_info(&self, hints: &Info) -> MpiResult<()> {
        let mut i = self.info.lock().unwrap_or_else(|p| p.into_inner());
        for k in 0..hints.nkeys() {
            if let Some(key) = hints.nth_key(k) {
                i.set(key, hints.get(key).unwrap_or_default())?;
            }
        }
        Ok(())
    }

    /// MPI_File_set_atomicity (collective, the flag the same everywhere).
    pub fn set_atomicity(&self, on: bool) -> MpiResult<()> {
        agree::same(&self.rt, self.comm, on as i64, "the flag of MPI_File_set_atomicity")?;
        self.atomic.store(on, Ordering::SeqCst);
        Ok(())
    }

    pub fn atomicity(&self) -> bool {
        self.atomic.load(Ordering::SeqCst)
    }

    /// MPI_File_set_view (collective): the pointers go back to 0. The etype's
    /// size must agree across ranks; disp, filetype and info may differ.
    /// `user` is the registered representation named `datarep`, if any.
    pub fn set_view(
        &self,
        disp: i64,
        etype: Datatype,
        filetype: Datatype,
        datarep: &str,
        user: Option<Arc<dyn Datarep>>,
        info: &Info,
    ) -> MpiResult<()> {
        let disp = if disp == DISPLACEMENT_CURRENT {
            if self.amode & amode::SEQUENTIAL == 0 {
                Err(wanmpi_engine::MpiError::new(ErrorClass::Arg, "MPI_DISPLACEMENT_CURRENT needs a file opened MPI_MODE_SEQUENTIAL"))
            } else {
                self.shared.get().and_then(|p| self.view().byte_offset(p)).map(|b| b as i64)
            }
        } else {
            Ok(disp)
        };
        let view = agree::all_ok(&self.rt, self.comm, disp.and_then(|d| View::new(d, etype, filetype, datarep, user, !amode::writable(self.amode))))?;
        agree::same(&self.rt, self.comm, view.esize() as i64, "the etype's size in MPI_File_set_view")?;
        *self.view.write().unwrap_or_else(|p| p.into_inner()) = view;
        *self.pointer.lock().unwrap_or_else(|p| p.into_inner()) = 0;
        self.set_info(info)?;
        let reset = if self.rt.comm_rank(self.comm)? == 0 { self.shared.set(0) } else { Ok(()) };
        agree::root_ok(&self.rt, self.comm, 0, reset)
    }

    /// The current view (MPI_File_get_view).
    pub fn view(&self) -> View {
        self.view.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// MPI_File_get_type_extent: the extent of `dt` in the file's data
    /// representation.
    pub fn type_extent(&self, dt: &Datatype) -> MpiResult<isize> {
        self.view().type_extent(dt)
    }

    /// MPI_File_get_byte_offset.
    pub fn byte_offset(&self, offset: i64) -> MpiResult<i64> {
        Ok(self.view().byte_offset(offset)? as i64)
    }
}
