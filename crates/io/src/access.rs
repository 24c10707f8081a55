//! Data access (MPI-4.0 §14.4): reads and writes at an explicit offset,
//! at the individual file pointer or at the shared one, their collective
//! forms and the ordered ones. The memory side is packed to (or unpacked
//! from) one contiguous stream; the view maps the stream onto runs of file
//! bytes, each moved with one pread/pwrite. In atomic mode an access holds
//! a record lock over the file bytes it spans, so overlapping accesses of
//! other ranks see it whole or not at all.
//!
//! Collective writes end with a barrier: a rank reading after the call sees
//! every rank's data, which programs written against two-phase collective
//! I/O tend to count on. Ordered accesses place each rank's data after
//! that of the lower ranks, from the shared pointer on: the counts are
//! gathered, rank 0 advances the pointer by their sum and sends the start.

use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;

use wanmpi_engine::datatype::Datatype;
use wanmpi_engine::{error::err, ErrorClass, MpiError, MpiResult};
use wanmpi_runtime::Status;

use crate::agree;
use crate::amode;
use crate::file::File;
use crate::lock::RangeLock;
use crate::oserr::os_error;
use crate::view::View;

/// Where an access starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    /// An explicit offset, in etypes of the view.
    Offset(i64),
    /// The individual file pointer.
    Individual,
    /// The shared file pointer.
    Shared,
}

/// The status of an access that moved `bytes` bytes of the memory buffer.
pub fn status(bytes: usize) -> Status {
    Status { bytes, ..Status::empty() }
}

impl File {
    fn check_access(&self, write: bool, at: At, dt: &Datatype) -> MpiResult<()> {
        if write && !amode::writable(self.amode) {
            return err(ErrorClass::ReadOnly, format!("{} was opened MPI_MODE_RDONLY: it cannot be written", self.name));
        }
        if !write && !amode::readable(self.amode) {
            return err(ErrorClass::Access, format!("{} was opened MPI_MODE_WRONLY: it cannot be read", self.name));
        }
        if self.amode & amode::SEQUENTIAL != 0 && at != At::Shared {
            return err(
                ErrorClass::UnsupportedOperation,
                format!("{} was opened MPI_MODE_SEQUENTIAL: only shared file pointers may be used", self.name),
            );
        }
        dt.check_committed().map_err(|_| MpiError::new(ErrorClass::Type, format!("the datatype {} is not committed", dt.name())))
    }

    /// Etypes in `bytes` (MPI_ERR_IO unless whole, as MPICH).
    fn etypes(view: &View, bytes: usize) -> MpiResult<i64> {
        if !bytes.is_multiple_of(view.esize()) {
            return err(ErrorClass::Io, format!("{bytes} bytes are not a whole number of etypes of {} bytes", view.esize()));
        }
        Ok((bytes / view.esize()) as i64)
    }

    /// A record lock over the file bytes of `runs`, in atomic mode.
    fn atomic_lock(&self, runs: &[(u64, usize)], write: bool) -> MpiResult<Option<RangeLock>> {
        let (Some(first), Some(last)) = (runs.first(), runs.last()) else { return Ok(None) };
        if !self.atomicity() {
            return Ok(None);
        }
        let (lo, hi) = (first.0.min(last.0), (first.0 + first.1 as u64).max(last.0 + last.1 as u64));
        RangeLock::take(self.data.as_raw_fd(), write, lo, hi - lo).map(Some).map_err(|e| os_error(&e, "cannot lock", &self.name))
    }

    fn write_bytes(&self, view: &View, at: i64, data: &[u8]) -> MpiResult<()> {
        let runs = view.runs(view.data_pos(at)?, data.len())?;
        let _lock = self.atomic_lock(&runs, true)?;
        let mut from = 0;
        for (off, n) in runs {
            self.data.write_all_at(&data[from..from + n], off).map_err(|e| os_error(&e, "cannot write", &self.name))?;
            from += n;
        }
        Ok(())
    }

    /// Up to `len` bytes from etype `at` on; fewer at the end of the file.
    fn read_bytes(&self, view: &View, at: i64, len: usize) -> MpiResult<Vec<u8>> {
        let runs = view.runs(view.data_pos(at)?, len)?;
        let _lock = self.atomic_lock(&runs, false)?;
        let mut out = vec![0u8; len];
        let mut got = 0;
        'runs: for (off, n) in runs {
            let mut done = 0;
            while done < n {
                match self.data.read_at(&mut out[got + done..got + n], off + done as u64) {
                    Ok(0) => {
                        got += done;
                        break 'runs;
                    }
                    Ok(k) => done += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(os_error(&e, "cannot read", &self.name)),
                }
            }
            got += n;
        }
        out.truncate(got);
        Ok(out)
    }

    /// Writes `count` x `dt` from `buf` at `at` (MPI_File_write_at,
    /// MPI_File_write, MPI_File_write_shared).
    ///
    /// # Safety
    /// `buf` must hold `count` elements of `dt`.
    pub unsafe fn write(&self, at: At, buf: *const u8, count: usize, dt: &Datatype) -> MpiResult<Status> {
        self.check_access(true, at, dt)?;
        let view = self.view();
        let mut data = Vec::with_capacity(dt.packed_size(count));
        dt.pack(buf, count, &mut data);
        let n = Self::etypes(&view, data.len())?;
        match at {
            At::Offset(o) => self.write_bytes(&view, o, &data)?,
            At::Individual => {
                let mut p = self.pointer.lock().unwrap_or_else(|p| p.into_inner());
                self.write_bytes(&view, *p, &data)?;
                *p += n;
            }
            At::Shared => {
                let start = self.shared.fetch_add(n)?;
                self.write_bytes(&view, start, &data)?;
            }
        }
        Ok(status(data.len()))
    }

    /// Reads up to `count` x `dt` into `buf` from `at`; the status counts
    /// what was there (less at the end of the file).
    ///
    /// # Safety
    /// `buf` must have room for `count` elements of `dt`.
    pub unsafe fn read(&self, at: At, buf: *mut u8, count: usize, dt: &Datatype) -> MpiResult<Status> {
        self.check_access(false, at, dt)?;
        let view = self.view();
        let len = dt.packed_size(count);
        let n = Self::etypes(&view, len)?;
        let data = match at {
            At::Offset(o) => self.read_bytes(&view, o, len)?,
            At::Individual => {
                let mut p = self.pointer.lock().unwrap_or_else(|p| p.into_inner());
                let data = self.read_bytes(&view, *p, len)?;
                *p += (data.len() / view.esize()) as i64;
                data
            }
            At::Shared => {
                let start = self.shared.fetch_add(n)?;
                self.read_bytes(&view, start, len)?
            }
        };
        dt.unpack(&data, buf, count);
        Ok(status(data.len()))
    }

    /// The collective write (MPI_File_write_all, _at_all): each rank's
    /// write, then a barrier.
    ///
    /// # Safety
    /// As for [`File::write`].
    pub unsafe fn write_all(&self, at: At, buf: *const u8, count: usize, dt: &Datatype) -> MpiResult<Status> {
        let r = self.write(at, buf, count, dt);
        self.rt.barrier(self.comm)?;
        r
    }

    /// The collective read (MPI_File_read_all, _at_all).
    ///
    /// # Safety
    /// As for [`File::read`].
    pub unsafe fn read_all(&self, at: At, buf: *mut u8, count: usize, dt: &Datatype) -> MpiResult<Status> {
        self.read(at, buf, count, dt)
    }

    /// Where this rank's part of an ordered access of `n` etypes starts;
    /// the shared pointer moves past every rank's part.
    fn ordered_start(&self, n: i64) -> MpiResult<i64> {
        let all = agree::allgather(&self.rt, self.comm, n)?;
        let me = self.rt.comm_rank(self.comm)?;
        let before: i64 = all[..me].iter().sum();
        let base = if me == 0 {
            match self.shared.fetch_add(all.iter().sum()) {
                Ok(v) => v,
                Err(e) => -(e.class as i64),
            }
        } else {
            0
        };
        let base = agree::bcast(&self.rt, self.comm, base, 0)?;
        if base < 0 {
            return Err(MpiError::new(agree::class_from(-base), "rank 0 could not advance the shared file pointer"));
        }
        Ok(base + before)
    }

    /// MPI_File_write_ordered.
    ///
    /// # Safety
    /// As for [`File::write`].
    pub unsafe fn write_ordered(&self, buf: *const u8, count: usize, dt: &Datatype) -> MpiResult<Status> {
        let view = self.view();
        let data = self.check_access(true, At::Shared, dt).and_then(|_| {
            let mut data = Vec::with_capacity(dt.packed_size(count));
            dt.pack(buf, count, &mut data);
            Self::etypes(&view, data.len()).map(|n| (data, n))
        });
        let start = self.ordered_start(data.as_ref().map_or(0, |d| d.1))?;
        let r = data.and_then(|(d, _)| self.write_bytes(&view, start, &d).map(|_| status(d.len())));
        self.rt.barrier(self.comm)?;
        r
    }

    /// MPI_File_read_ordered.
    ///
    /// # Safety
    /// As for [`File::read`].
    pub unsafe fn read_ordered(&self, buf: *mut u8, count: usize, dt: &Datatype) -> MpiResult<Status> {
        let view = self.view();
        let len = dt.packed_size(count);
        let n = self.check_access(false, At::Shared, dt).and_then(|_| Self::etypes(&view, len));
        let start = self.ordered_start(*n.as_ref().unwrap_or(&0))?;
        n?;
        let data = self.read_bytes(&view, start, len)?;
        dt.unpack(&data, buf, count);
        Ok(status(data.len()))
    }
}
