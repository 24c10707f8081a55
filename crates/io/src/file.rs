//! An open MPI file (MPI-4.0 §14.2): its descriptor, its private
//! communicator, its view, file pointers and modes; MPI_File_open,
//! MPI_File_close and MPI_File_delete.
//!
//! Opening is collective over a duplicate of the caller's communicator
//! (file collectives then never meet the program's messages). The access
//! mode must be the same everywhere (MPI_ERR_NOT_SAME, as MPICH). When
//! the mode asks for creation, rank 0 creates the file alone first, so
//! MPI_MODE_EXCL fails exactly when the file existed before the call; then
//! every rank opens it, and the open succeeds only if it did on every rank.

use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};

use wanmpi_engine::{error::err, ErrorClass, MpiResult};
use wanmpi_runtime::{CommId, Info, Runtime, Status};

use crate::agree;
use crate::amode;
use crate::oserr::os_error;
use crate::shared::{sidecar_path, SharedPointer};
use crate::view::View;

/// A split collective begun and not yet ended (MPI-4.0 §14.4.5): which
/// call began it, and its outcome.
pub struct Split {
    pub kind: SplitKind,
    pub outcome: MpiResult<Status>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SplitKind {
    ReadAll,
    WriteAll,
    ReadAtAll,
    WriteAtAll,
    ReadOrdered,
    WriteOrdered,
}

pub struct File {
    pub(crate) rt: Arc<Runtime>,
    pub(crate) comm: CommId,
    /// The name as the program gave it (for messages and "filename").
    pub(crate) name: String,
    pub(crate) path: PathBuf,
    pub(crate) data: std::fs::File,
    pub(crate) amode: i32,
    pub(crate) view: RwLock<View>,
    /// The individual file pointer, in etypes of the view.
    pub(crate) pointer: Mutex<i64>,
    pub(crate) shared: SharedPointer,
    pub(crate) atomic: AtomicBool,
    pub(crate) info: Mutex<Info>,
    pub(crate) split: Mutex<Option<Split>>,
}

/// Filesystem prefixes ROMIO accepts in names ("ufs:/tmp/f"): all are
/// the one local or shared file system here.
const PREFIXES: [&str; 6] = ["ufs:", "nfs:", "lustre:", "gpfs:", "pvfs2:", "testfs:"];

fn strip_prefix(name: &str) -> &str {
    PREFIXES.iter().find_map(|p| name.strip_prefix(p)).unwrap_or(name)
}

impl File {
    /// MPI_File_open, collective over `comm`.
    pub fn open(rt: &Arc<Runtime>, comm: CommId, name: &str, amode: i32, info: Info) -> MpiResult<File> {
        if rt.comm_is_inter(comm)? {
            return err(ErrorClass::Comm, "MPI_File_open needs an intra-communicator");
        }
        let comm = rt.comm_dup(comm)?;
        let r = Self::open_on(rt, comm, name, amode, info);
        if r.is_err() {
            let _ = rt.comm_free(comm);
        }
        r
    }

    fn open_on(rt: &Arc<Runtime>, comm: CommId, name: &str, amode: i32, info: Info) -> MpiResult<File> {
        let me = rt.comm_rank(comm)?;
        agree::all_ok(rt, comm, amode::check(amode))?;
        agree::same(rt, comm, amode as i64, "the access mode (amode)")?;
        let path = PathBuf::from(strip_prefix(name));
        if name.is_empty() {
            return err(ErrorClass::BadFile, "the file name is empty");
        }
        if amode & amode::CREATE != 0 {
            let made = if me == 0 {
                let mut o = OpenOptions::new();
                o.write(true).mode(0o666);
                if amode & amode::EXCL != 0 {
                    o.create_new(true);
                } else {
                    o.create(true).truncate(false);
                }
                o.open(&path).map(drop).map_err(|e| os_error(&e, "cannot create", name))
            } else {
                Ok(())
            };
            agree::root_ok(rt, comm, 0, made)?;
        }
        let opened =
            OpenOptions::new().read(amode::readable(amode)).write(amode::writable(amode)).open(&path).map_err(|e| os_error(&e, "cannot open", name));
        let data = agree::all_ok(rt, comm, opened)?;
        // One sidecar name for all, and, for MPI_MODE_APPEND, one end of file.
        let (id, end) = if me == 0 {
            let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
            let end = if amode & amode::APPEND != 0 { data.metadata().map_or(0, |m| m.len() as i64) } else { 0 };
            ((nanos ^ (u64::from(std::process::id()) << 32)) as i64, end)
        } else {
            (0, 0)
        };
        let id = agree::bcast(rt, comm, id, 0)? as u64;
        let end = agree::bcast(rt, comm, end, 0)?;
        Ok(File {
            rt: rt.clone(),
            comm,
            name: name.to_string(),
            shared: SharedPointer::new(sidecar_path(&path, id), end),
            path,
            data,
            amode,
            view: RwLock::new(View::default()),
            pointer: Mutex::new(end),
            atomic: AtomicBool::new(false),
            info: Mutex::new(info),
            split: Mutex::new(None),
        })
    }

    /// MPI_File_close, collective: once every rank is done with the file,
    /// rank 0 removes the shared pointer's sidecar and, under
    /// MPI_MODE_DELETE_ON_CLOSE, the file.
    pub fn close(&self) -> MpiResult<()> {
        let (rt, comm) = (self.rt.clone(), self.comm);
        let me = rt.comm_rank(comm)?;
        rt.barrier(comm)?;
        let deleted = if me == 0 {
            self.shared.remove();
            if self.amode & amode::DELETE_ON_CLOSE != 0 {
                std::fs::remove_file(&self.path).map_err(|e| os_error(&e, "cannot delete", &self.name))
            } else {
                Ok(())
            }
        } else {
            Ok(())
        };
        let delete_on_close = self.amode & amode::DELETE_ON_CLOSE != 0;
        let r = if delete_on_close { agree::root_ok(&rt, comm, 0, deleted) } else { Ok(()) };
        rt.comm_free(comm)?;
        r
    }

    /// MPI_File_delete: not collective; a missing file is
    /// MPI_ERR_NO_SUCH_FILE.
    pub fn delete(name: &str) -> MpiResult<()> {
        std::fs::remove_file(strip_prefix(name)).map_err(|e| os_error(&e, "cannot delete", name))
    }

    pub fn amode(&self) -> i32 {
        self.amode
    }

    /// The communicator the file was opened on (its private duplicate).
    pub fn comm(&self) -> CommId {
        self.comm
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}
