//! The C MPI functions the farm calls, with the MPICH ABI that wanmpi's
//! libmpi (include/mpi.h) and MPICH share: handles are `int`.

use std::os::raw::{c_char, c_int, c_void};

pub type Comm = c_int;
pub type Request = c_int;
pub type Info = c_int;

/// MPI_Status, MPICH layout.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub struct Status {
    pub count_lo: c_int,
    pub count_hi_and_cancelled: c_int,
    pub source: c_int,
    pub tag: c_int,
    pub error: c_int,
}

pub const SUCCESS: c_int = 0;
pub const ERR_ARG: c_int = 12;
pub const ERR_OTHER: c_int = 15;
pub const ERR_IN_STATUS: c_int = 17;
pub const ERR_PENDING: c_int = 18;
pub const ERR_PROC_FAILED: c_int = 101;
pub const BYTE: c_int = 0x4c00010d;
pub const REQUEST_NULL: Request = 0x2c000000;
pub const INFO_NULL: Info = 0x1c000000;
pub const ERRORS_RETURN: c_int = 0x54000001;
pub const UNDEFINED: c_int = -32766;

extern "C" {
    pub fn MPI_Isend(buf: *const c_void, n: c_int, dt: c_int, dest: c_int, tag: c_int, comm: Comm, req: *mut Request) -> c_int;
    pub fn MPI_Issend(buf: *const c_void, n: c_int, dt: c_int, dest: c_int, tag: c_int, comm: Comm, req: *mut Request) -> c_int;
    pub fn MPI_Irecv(buf: *mut c_void, n: c_int, dt: c_int, src: c_int, tag: c_int, comm: Comm, req: *mut Request) -> c_int;
    pub fn MPI_Testsome(n: c_int, reqs: *mut Request, outcount: *mut c_int, idx: *mut c_int, st: *mut Status) -> c_int;
    pub fn MPI_Test(req: *mut Request, flag: *mut c_int, st: *mut Status) -> c_int;
    pub fn MPI_Test_cancelled(st: *const Status, flag: *mut c_int) -> c_int;
    pub fn MPI_Get_count(st: *const Status, dt: c_int, count: *mut c_int) -> c_int;
    pub fn MPI_Cancel(req: *mut Request) -> c_int;
    pub fn MPI_Request_free(req: *mut Request) -> c_int;
    pub fn MPI_Comm_rank(comm: Comm, rank: *mut c_int) -> c_int;
    pub fn MPI_Comm_size(comm: Comm, size: *mut c_int) -> c_int;
    pub fn MPI_Comm_dup_with_info(comm: Comm, info: Info, out: *mut Comm) -> c_int;
    pub fn MPI_Comm_set_errhandler(comm: Comm, errh: c_int) -> c_int;
    pub fn MPI_Comm_free(comm: *mut Comm) -> c_int;
    pub fn MPI_Info_create(info: *mut Info) -> c_int;
    pub fn MPI_Info_set(info: Info, key: *const c_char, value: *const c_char) -> c_int;
    pub fn MPI_Info_free(info: *mut Info) -> c_int;
    pub fn MPI_Error_class(code: c_int, class: *mut c_int) -> c_int;
}
