//! Data access (MPI-4.0 §14.4): reads and writes at an explicit offset,
//! at the individual file pointer or at the shared one, their collective
//! forms and the ordered ones. The memory side is packed to (or unpacked
//! from) a contiguous stream, a chunk at a time; the view maps the stream
//! onto runs of file bytes, each moved with one pread/pwrite. In atomic mode an access holds
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
use crate::datarep::{Datarep, Items};
use crate::file::File;
use crate::lock::RangeLock;
use crate::oserr::os_error;
use crate::view::View;

/// Bytes staged at a time between memory and the file: large accesses
/// cost this much memory, not their size.
const CHUNK: usize = 8 << 20;

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
        dt.check_committed().map_err(|_| MpiError::new(ErrorClass::Type, format!("the datatype {} is not committed", dt.name())))?;
        Ok(())
    }

    /// Etypes in `bytes` (MPI_ERR_IO unless whole, as MPICH).
    fn etypes(view: &View, bytes: usize) -> MpiResult<i64> {
        if !bytes.is_multiple_of(view.esize()) {
            return err(ErrorClass::Io, format!("{bytes} bytes are not a whole number of etypes of {} bytes", view.esize()));
        }
        Ok((bytes / view.esize()) as i64)
    }

    /// In atomic mode, a record lock over the file bytes that stream bytes
    /// `[pos, pos + len)` span (views are monotonic: from the first byte's
    /// place to the last's).
    fn atomic_lock(&self, view: &View, pos: u64, len: usize, write: bool) -> MpiResult<Option<RangeLock>> {
        if !self.atomicity() || len == 0 {
            return Ok(None);
        }
        let lo = view.runs(pos, 1)?.first().map_or(0, |r| r.0);
        let hi = view.runs(pos + len as u64 - 1, 1)?.first().map_or(lo, |r| r.0 + 1);
        RangeLock::take(self.data.as_raw_fd(), write, lo, hi.saturating_sub(lo).max(1)).map(Some).map_err(|e| os_error(&e, "cannot lock", &self.name))
    }

    /// Writes the packed bytes of `count` x `dt` at `buf` to the view's
    /// stream from etype `at`, a chunk at a time; returns the bytes written.
    unsafe fn put(&self, view: &View, at: i64, buf: *const u8, count: usize, dt: &Datatype) -> MpiResult<usize> {
        if let Some(rep) = &view.user {
            return self.put_converted(view, at, buf, count, dt, &**rep);
        }
        let (pos, total) = (view.data_pos(at)?, dt.packed_size(count));
        let _lock = self.atomic_lock(view, pos, total, true)?;
        let mut chunk = Vec::with_capacity(CHUNK.min(total));
        let mut done = 0;
        while done < total {
            chunk.clear();
            dt.pack_range(buf, count, done, CHUNK, &mut chunk);
            self.write_stream(view, pos + done as u64, &chunk)?;
            done += chunk.len();
        }
        Ok(total)
    }

    /// Writes `data` to the view's stream from byte `pos`.
    fn write_stream(&self, view: &View, pos: u64, data: &[u8]) -> MpiResult<()> {
        let mut from = 0;
        for (off, n) in view.runs(pos, data.len())? {
            self.data.write_all_at(&data[from..from + n], off).map_err(|e| os_error(&e, "cannot write", &self.name))?;
            from += n;
        }
        Ok(())
    }

    /// [`File::put`] in a registered representation: each piece of items
    /// goes through the write conversion into a staging buffer (or is
    /// packed as it is, for MPI_CONVERSION_FN_NULL), then to the file.
    /// Returns the memory bytes written.
    unsafe fn put_converted(&self, view: &View, at: i64, buf: *const u8, count: usize, dt: &Datatype, rep: &dyn Datarep) -> MpiResult<usize> {
        let items = Items::of(dt, rep)?;
        let convert = rep.converts_writes();
        if !convert {
            same_sizes(&items, rep, dt, "write")?;
        }
        let pos = view.data_pos(at)?;
        let _lock = self.atomic_lock(view, pos, items.file_len(count)?, true)?;
        let mut staging = Vec::new();
        for (start, piece) in items.pieces(count) {
            staging.clear();
            if convert {
                staging.resize(piece.file, 0);
                rep.write(buf, dt, piece.items as usize, &mut staging, start.items)?;
            } else {
                dt.pack_range(buf, count, start.mem, piece.mem, &mut staging);
            }
            self.write_stream(view, pos + start.file as u64, &staging)?;
        }
        Ok(items.per.mem * count)
    }

    /// [`File::get`] in a registered representation: each piece is read
    /// into a staging buffer, then its whole items go through the read
    /// conversion (or are unpacked as they are). Stops at the end of the
    /// file; returns (memory bytes, stream bytes) of the items read.
    unsafe fn get_converted(&self, view: &View, at: i64, buf: *mut u8, count: usize, dt: &Datatype, rep: &dyn Datarep) -> MpiResult<(usize, usize)> {
        let items = Items::of(dt, rep)?;
        let convert = rep.converts_reads();
        if !convert {
            same_sizes(&items, rep, dt, "read")?;
        }
        let pos = view.data_pos(at)?;
        let _lock = self.atomic_lock(view, pos, items.file_len(count)?, false)?;
        let (mut mem, mut stream) = (0, 0);
        let mut staging = Vec::new();
        for (start, piece) in items.pieces(count) {
            staging.resize(piece.file, 0);
            let got = self.read_runs(&view.runs(pos + start.file as u64, piece.file)?, &mut staging)?;
            let whole = if got == piece.file { piece } else { items.whole_in(start.items, got) };
            if whole.items > 0 {
                if convert {
                    rep.read(buf, dt, whole.items as usize, &staging[..whole.file], start.items)?;
                } else {
                    dt.unpack_range(&staging[..whole.file], buf, count, start.mem);
                }
            }
            mem += whole.mem;
            stream += whole.file;
            if got < piece.file {
                break;
            }
        }
        Ok((mem, stream))
    }

    /// Reads into `count` x `dt` at `buf` from the view's stream at etype
    /// `at`, a chunk at a time, up to the end of the file; returns the
    /// bytes read (of memory, of the view's stream).
    unsafe fn get(&self, view: &View, at: i64, buf: *mut u8, count: usize, dt: &Datatype) -> MpiResult<(usize, usize)> {
        if let Some(rep) = &view.user {
            return self.get_converted(view, at, buf, count, dt, &**rep);
        }
        let (pos, total) = (view.data_pos(at)?, dt.packed_size(count));
        let _lock = self.atomic_lock(view, pos, total, false)?;
        let mut chunk = vec![0u8; CHUNK.min(total)];
        let mut done = 0;
        while done < total {
            let want = CHUNK.min(total - done);
            let got = self.read_runs(&view.runs(pos + done as u64, want)?, &mut chunk[..want])?;
            dt.unpack_range(&chunk[..got], buf, count, done);
            done += got;
            if got < want {
                break;
            }
        }
        Ok((done, done))
    }

    /// Fills `out` from the file `runs`; fewer bytes at the end of the file.
    fn read_runs(&self, runs: &[(u64, usize)], out: &mut [u8]) -> MpiResult<usize> {
        let mut got = 0;
        for &(off, n) in runs {
            let mut done = 0;
            while done < n {
                match self.data.read_at(&mut out[got + done..got + n], off + done as u64) {
                    Ok(0) => return Ok(got + done),
                    Ok(k) => done += k,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(os_error(&e, "cannot read", &self.name)),
                }
            }
            got += n;
        }
        Ok(got)
    }

    /// Writes `count` x `dt` from `buf` at `at` (MPI_File_write_at,
    /// MPI_File_write, MPI_File_write_shared).
    ///
    /// # Safety
    /// `buf` must hold `count` elements of `dt`.
    pub unsafe fn write(&self, at: At, buf: *const u8, count: usize, dt: &Datatype) -> MpiResult<Status> {
        self.check_access(true, at, dt)?;
        let view = self.view();
        let n = Self::etypes(&view, view.stream_len(dt, count)?)?;
        let bytes = match at {
            At::Offset(o) => self.put(&view, o, buf, count, dt)?,
            At::Individual => {
                let mut p = self.pointer.lock().unwrap_or_else(|p| p.into_inner());
                let bytes = self.put(&view, *p, buf, count, dt)?;
                *p += n;
                bytes
            }
            At::Shared => {
                let start = self.shared.fetch_add(n)?;
                self.put(&view, start, buf, count, dt)?
            }
        };
        Ok(status(bytes))
    }

    /// Reads up to `count` x `dt` into `buf` from `at`; the status counts
    /// what was there (less at the end of the file).
    ///
    /// # Safety
    /// `buf` must have room for `count` elements of `dt`.
    pub unsafe fn read(&self, at: At, buf: *mut u8, count: usize, dt: &Datatype) -> MpiResult<Status> {
        self.check_access(false, at, dt)?;
        let view = self.view();
        let n = Self::etypes(&view, view.stream_len(dt, count)?)?;
        let bytes = match at {
            At::Offset(o) => self.get(&view, o, buf, count, dt)?.0,
            At::Individual => {
                let mut p = self.pointer.lock().unwrap_or_else(|p| p.into_inner());
                let (bytes, stream) = self.get(&view, *p, buf, count, dt)?;
                *p += (stream / view.esize()) as i64;
                bytes
            }
            At::Shared => {
                let start = self.shared.fetch_add(n)?;
                self.get(&view, start, buf, count, dt)?.0
            }
        };
        Ok(status(bytes))
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
        let n = self.check_access(true, At::Shared, dt).and_then(|_| view.stream_len(dt, count).and_then(|len| Self::etypes(&view, len)));
        let start = self.ordered_start(*n.as_ref().unwrap_or(&0))?;
        let r = n.and_then(|_| self.put(&view, start, buf, count, dt)).map(status);
        self.rt.barrier(self.comm)?;
        r
    }

    /// MPI_File_read_ordered.
    ///
    /// # Safety
    /// As for [`File::read`].
    pub unsafe fn read_ordered(&self, buf: *mut u8, count: usize, dt: &Datatype) -> MpiResult<Status> {
        let view = self.view();
        let n = self.check_access(false, At::Shared, dt).and_then(|_| view.stream_len(dt, count).and_then(|len| Self::etypes(&view, len)));
        let start = self.ordered_start(*n.as_ref().unwrap_or(&0))?;
        n?;
        Ok(status(self.get(&view, start, buf, count, dt)?.0))
    }
}

/// MPI_CONVERSION_FN_NULL copies bytes as they are: only for items that
/// take as many bytes in the file as in memory.
fn same_sizes(items: &Items, rep: &dyn Datarep, dt: &Datatype, what: &str) -> MpiResult<()> {
    if items.same_sizes() {
        return Ok(());
    }
    err(
        ErrorClass::Conversion,
        format!(
            "data representation \"{}\" has no {what} conversion function, and {} has elements whose file extent is not their size in memory",
            rep.name(),
            dt.name()
        ),
    )
}
