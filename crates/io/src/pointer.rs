//! Positioning the file pointers (MPI-4.0 §14.4.3-14.4.4): MPI_File_seek
//! and MPI_File_get_position on the individual pointer, their collective
//! _shared forms on the shared one. Positions are in etypes of the view.

use wanmpi_engine::{error::err, ErrorClass, MpiResult};

use crate::agree;
use crate::file::File;

/// MPI_SEEK_SET, MPI_SEEK_CUR, MPI_SEEK_END (MPICH's values).
pub const SEEK_SET: i32 = 600;
pub const SEEK_CUR: i32 = 602;
pub const SEEK_END: i32 = 604;

impl File {
    /// The new position `offset` from `whence`, given the current one.
    fn sought(&self, offset: i64, whence: i32, current: impl FnOnce() -> MpiResult<i64>) -> MpiResult<i64> {
        let from = match whence {
            SEEK_SET => 0,
            SEEK_CUR => current()?,
            SEEK_END => self.view().end(self.size()? as u64),
            _ => return err(ErrorClass::Arg, format!("whence {whence} is none of MPI_SEEK_SET, MPI_SEEK_CUR, MPI_SEEK_END")),
        };
        match from.checked_add(offset) {
            Some(p) if p >= 0 => Ok(p),
            _ => err(ErrorClass::Arg, format!("seeking {offset} etypes from {from} leaves the file")),
        }
    }

    /// MPI_File_seek.
    pub fn seek(&self, offset: i64, whence: i32) -> MpiResult<()> {
        let mut p = self.pointer.lock().unwrap_or_else(|p| p.into_inner());
        let cur = *p;
        *p = self.sought(offset, whence, || Ok(cur))?;
        Ok(())
    }

    /// MPI_File_get_position.
    pub fn position(&self) -> i64 {
        *self.pointer.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// MPI_File_seek_shared: collective, with the same arguments everywhere;
    /// rank 0 moves the pointer and every rank returns after.
    pub fn seek_shared(&self, offset: i64, whence: i32) -> MpiResult<()> {
        agree::same(&self.rt, self.comm, offset, "the offset of MPI_File_seek_shared")?;
        agree::same(&self.rt, self.comm, whence as i64, "the whence of MPI_File_seek_shared")?;
        let moved = if self.rt.comm_rank(self.comm)? == 0 {
            self.sought(offset, whence, || self.shared.get()).and_then(|p| self.shared.set(p))
        } else {
            Ok(())
        };
        agree::root_ok(&self.rt, self.comm, 0, moved)
    }

    /// MPI_File_get_position_shared.
    pub fn position_shared(&self) -> MpiResult<i64> {
        self.shared.get()
    }
}
