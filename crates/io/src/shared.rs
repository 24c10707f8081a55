//! The shared file pointer (MPI-4.0 §14.4.4): one position, in etypes of
//! the current view, for all ranks of a file. It lives in a hidden sidecar
//! file next to the data file (`.NAME.shfp.ID`, ID agreed at open), read
//! and advanced under an exclusive record lock, so ranks on any hosts that
//! share the file system see one pointer. The sidecar is made on first use
//! (a file read-only in its directory works until a shared pointer is
//! needed) and removed at close.

use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use wanmpi_engine::MpiResult;

use crate::lock::RangeLock;
use crate::oserr::os_error;

pub struct SharedPointer {
    path: PathBuf,
    /// The position before anything was stored (the end of the file for
    /// MPI_MODE_APPEND, else 0).
    initial: i64,
    /// The open sidecar; the mutex also keeps this rank's threads apart,
    /// which record locks do not.
    file: Mutex<Option<File>>,
}

/// The sidecar's name for data file `path` and the agreed `id`.
pub fn sidecar_path(path: &Path, id: u64) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    path.with_file_name(format!(".{name}.shfp.{id:x}"))
}

impl SharedPointer {
    pub fn new(path: PathBuf, initial: i64) -> SharedPointer {
        SharedPointer { path, initial, file: Mutex::new(None) }
    }

    /// Runs `f(current) -> new` on the pointer under the lock; returns the
    /// value before.
    fn update(&self, f: impl FnOnce(i64) -> i64) -> MpiResult<i64> {
        let shown = self.path.display().to_string();
        let mut g = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if g.is_none() {
            let f = OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o644).open(&self.path);
            *g = Some(f.map_err(|e| os_error(&e, "cannot make the shared file pointer", &shown))?);
        }
        let Some(file) = g.as_ref() else { unreachable!("opened above") };
        let _lock = RangeLock::take(file.as_raw_fd(), true, 0, 0).map_err(|e| os_error(&e, "cannot lock the shared file pointer", &shown))?;
        let mut b = [0u8; 8];
        let n = file.read_at(&mut b, 0).map_err(|e| os_error(&e, "cannot read the shared file pointer", &shown))?;
        let old = if n == 8 { i64::from_le_bytes(b) } else { self.initial };
        let new = f(old);
        if new != old || n != 8 {
            file.write_all_at(&new.to_le_bytes(), 0).map_err(|e| os_error(&e, "cannot write the shared file pointer", &shown))?;
        }
        Ok(old)
    }

    /// Advances the pointer by `n` etypes; returns where it was.
    pub fn fetch_add(&self, n: i64) -> MpiResult<i64> {
        self.update(|v| v + n)
    }

    pub fn get(&self) -> MpiResult<i64> {
        self.update(|v| v)
    }

    pub fn set(&self, v: i64) -> MpiResult<()> {
        self.update(|_| v).map(|_| ())
    }

    /// Closes and removes the sidecar (one rank, after the others closed).
    pub fn remove(&self) {
        self.file.lock().unwrap_or_else(|p| p.into_inner()).take();
        // Absent when no rank used the pointer.
        let _ = std::fs::remove_file(&self.path);
    }
}
