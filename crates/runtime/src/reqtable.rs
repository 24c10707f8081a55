//! Runtime requests: an engine request plus what must happen when it
//! completes (translate the source rank, unpack a non-contiguous receive,
//! release buffered-send space), persistent requests, and requests that are
//! complete from the start (MPI_PROC_NULL).

use rustc_hash::FxHashMap as HashMap;
use std::sync::Arc;

use wanmpi_engine::datatype::Datatype;
use wanmpi_engine::{MpiError, RequestId};

use crate::comm::CommId;
use crate::group::Group;

/// MPI's special ranks and tags (MPICH's values).
pub const PROC_NULL: i32 = -1;
pub const ANY_SOURCE: i32 = -2;
pub const ANY_TAG: i32 = -1;
/// Largest tag users may use (the MPI_TAG_UB attribute).
pub const TAG_UB: i32 = i32::MAX;

/// A runtime request handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Req(pub u64);

/// MPI_Status in runtime terms: the source is a rank of the communicator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub source: i32,
    pub tag: i32,
    pub bytes: usize,
    pub error: Option<MpiError>,
    pub cancelled: bool,
}

impl Status {
    /// The status of an operation with MPI_PROC_NULL (and of empty waits).
    pub fn proc_null() -> Status {
        Status { source: PROC_NULL, tag: ANY_TAG, bytes: 0, error: None, cancelled: false }
    }

    /// The empty status (MPI-4.0 §3.7.3): what an inactive persistent
    /// request or MPI_REQUEST_NULL reports.
    pub fn empty() -> Status {
        Status { source: ANY_SOURCE, tag: ANY_TAG, bytes: 0, error: None, cancelled: false }
    }
}

/// Unpacks a non-contiguous receive from its staging buffer at completion.
pub struct Unpack {
    pub staging: Vec<u8>,
    pub base: *mut u8,
    pub count: usize,
    pub datatype: Datatype,
}

// The base pointer is the user's receive buffer, only touched on completion
// by the thread that completes the request, under the runtime lock.
unsafe impl Send for Unpack {}

/// How a send was asked for (MPI-3.1 §3.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendMode {
    Standard,
    Synchronous,
    Ready,
    Buffered,
}

/// The arguments of a persistent request, replayed by MPI_Start.
#[derive(Clone)]
pub enum PersistentSpec {
    Send {
        buf: usize,
        count: usize,
        datatype: Datatype,
        dest: i32,
        tag: i32,
        comm: CommId,
        mode: SendMode,
    },
    Recv {
        buf: usize,
        count: usize,
        datatype: Datatype,
        source: i32,
        tag: i32,
        comm: CommId,
    },
    /// A persistent collective: each start runs the plan under the number
    /// its `_init` took.
    Coll {
        comm: CommId,
        plan: crate::icoll::Plan,
        seq: u32,
    },
}

pub enum Entry {
    /// An operation in the engine.
    Active {
        id: RequestId,
        /// Receives: the group whose ranks the status reports.
        group: Option<Arc<Group>>,
        unpack: Option<Unpack>,
    },
    /// Complete from the start (MPI_PROC_NULL, buffered sends).
    Done(Status),
    /// MPI_Isendrecv(_replace): complete when both are; the receive's status.
    Pair { send: Box<Entry>, recv: Box<Entry> },
    /// A generalized request (`grequest.rs`), completed by the program.
    Generalized(Box<crate::grequest::Generalized>),
    /// A nonblocking collective still running (`icoll`).
    Coll(Box<crate::icoll::CollReq>),
    /// Completed by another part of the runtime, which makes it `Done`:
    /// `rma` when the target of a request-based one-sided operation
    /// (MPI_Rput, ...) answers, `ulfm` when an iagree or ishrink ends.
    Awaited,
    /// A persistent request; `active` while started.
    Persistent { spec: PersistentSpec, active: Option<Box<Entry>> },
}

#[derive(Default)]
pub struct ReqTable {
    entries: HashMap<u64, Entry>,
    next: u64,
}

impl ReqTable {
    pub fn insert(&mut self, e: Entry) -> Req {
        self.next += 1;
        self.entries.insert(self.next, e);
        Req(self.next)
    }
    pub fn get(&self, r: Req) -> Option<&Entry> {
        self.entries.get(&r.0)
    }
    pub fn get_mut(&mut self, r: Req) -> Option<&mut Entry> {
        self.entries.get_mut(&r.0)
    }
    /// Reinserts an entry under its old handle (after a test left it alive).
    pub fn put_back(&mut self, r: Req, e: Entry) {
        self.entries.insert(r.0, e);
    }
    pub fn remove(&mut self, r: Req) -> Option<Entry> {
        self.entries.remove(&r.0)
    }
}
