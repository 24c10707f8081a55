//! The one process-wide state of wanmpi (the C API demands it, STYLE.md):
//! the runtime of this process and the tables behind user handles.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, OnceLock};
use std::thread::ThreadId;

use wanmpi_runtime::{Cart, Completion, Datatype, ErrorClass, Group, Info, Message, MpiError, Req};

use crate::error::R;
use crate::handles::{Obj, Table, KIND_DIRECT, KIND_INDIRECT};

/// A C error handler function: `void f(MPI_Comm *, int *, ...)`.
pub type CErrhFn = unsafe extern "C" fn(*mut i32, *mut i32);

pub struct ReqEntry {
    pub req: Req,
    /// Set when MPI_Request_get_status saw the request complete; kept until
    /// MPI_Wait/MPI_Test collect it.
    pub done: Option<Completion>,
    /// The C communicator handle, whose error handler applies.
    pub comm: i32,
    pub persistent: bool,
}

pub struct Objects {
    pub groups: Table<Arc<Group>>,
    pub types: Table<Datatype>,
    pub ops: Table<crate::op::UserOp>,
    pub reqs: Table<ReqEntry>,
    pub errhs: Table<CErrhFn>,
    pub infos: Table<Info>,
    pub msgs: Table<(Message, i32)>,
    /// Cartesian topologies by communicator handle.
    pub carts: HashMap<i32, Cart>,
    /// Graph and distributed-graph topologies by communicator handle.
    pub graphs: HashMap<i32, crate::graph::GraphTopo>,
    /// The user error handler handle set on each communicator.
    pub comm_errh: HashMap<i32, i32>,
    /// The latest detailed message per error class (MPI_Error_string).
    pub messages: HashMap<i32, String>,
    /// Datatype keyvals and attributes (`type_attr.rs`).
    pub type_keyvals: Table<crate::type_attr::TypeKeyval>,
    pub type_attrs: crate::type_attr::TypeAttrs,
    /// The error handler of MPI_FILE_NULL (MPI_ERRORS_RETURN at first), the
    /// one file handle there is while MPI-IO is not supported.
    pub file_null_errh: i32,
    /// Error classes and codes the user added: code -> (class, string).
    pub user_codes: HashMap<i32, (i32, String)>,
    /// Sessions (`session.rs`).
    pub sessions: Table<crate::session::Session>,
    /// Partitioned send requests by handle (`partitioned.rs`).
    pub psends: HashMap<i32, crate::partitioned::PSend>,
    /// Windows (`win/`), and the keyvals of window attributes.
    pub wins: Table<crate::win::WinEntry>,
    pub win_keyvals: Table<crate::win::attr::WinKeyval>,
}

pub static OBJ: LazyLock<Mutex<Objects>> = LazyLock::new(|| {
    Mutex::new(Objects {
        groups: Table::new(Obj::Group, KIND_DIRECT),
        types: Table::new(Obj::Datatype, KIND_DIRECT),
        ops: Table::new(Obj::Op, KIND_DIRECT),
        reqs: Table::new(Obj::Request, KIND_DIRECT),
        errhs: Table::new(Obj::Errhandler, KIND_DIRECT),
        infos: Table::new(Obj::Info, KIND_DIRECT),
        // Messages share MPICH's request type; the indirect kind keeps
        // them apart from request handles.
        msgs: Table::new(Obj::Request, KIND_INDIRECT),
        carts: HashMap::new(),
        graphs: HashMap::new(),
        comm_errh: HashMap::new(),
        messages: HashMap::new(),
        user_codes: HashMap::new(),
        psends: HashMap::new(),
        sessions: Table::new(Obj::Session, KIND_DIRECT),
        file_null_errh: crate::predef::ERRORS_RETURN,
        type_keyvals: Table::new(Obj::Keyval, KIND_INDIRECT),
        type_attrs: Default::default(),
        wins: Table::new(Obj::Win, KIND_DIRECT),
        // Builtin-kind keyval handles above the predefined MPI_WIN_*
        // attributes: apart from communicator and datatype keyvals.
        win_keyvals: Table::new(Obj::Keyval, crate::handles::KIND_BUILTIN),
    })
});

static RT: OnceLock<Arc<wanmpi_runtime::Runtime>> = OnceLock::new();
static FINALIZED: AtomicBool = AtomicBool::new(false);
pub static THREAD_LEVEL: AtomicI32 = AtomicI32::new(0);
pub static MAIN_THREAD: OnceLock<ThreadId> = OnceLock::new();

/// Locks the handle tables. A panic while holding them leaves plain data
/// behind, still consistent per table, so a poisoned lock is taken over.
pub fn objs() -> MutexGuard<'static, Objects> {
    OBJ.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn initialized() -> bool {
    RT.get().is_some()
}
pub fn finalized() -> bool {
    FINALIZED.load(Ordering::SeqCst)
}
pub fn set_finalized() {
    FINALIZED.store(true, Ordering::SeqCst);
}

pub fn install(rt: Arc<wanmpi_runtime::Runtime>) -> R<()> {
    RT.set(rt).map_err(|_| MpiError::new(ErrorClass::Other, "MPI_Init called twice"))
}

/// The runtime, between MPI_Init and MPI_Finalize.
pub fn rt() -> R<&'static Arc<wanmpi_runtime::Runtime>> {
    match RT.get() {
        Some(_) if finalized() => Err(MpiError::new(ErrorClass::Other, "MPI was already finalized")),
        Some(r) => Ok(r),
        None => Err(MpiError::new(ErrorClass::Other, "MPI is not initialized (call MPI_Init first)")),
    }
}

/// The runtime even after MPI_Finalize (for MPI_Abort, error handlers).
pub fn rt_any() -> Option<&'static Arc<wanmpi_runtime::Runtime>> {
    RT.get()
}
