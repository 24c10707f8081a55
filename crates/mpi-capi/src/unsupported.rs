//! MPI-3.1 functions wanmpi does not implement: one-sided communication,
//! file I/O, dynamic processes, nonblocking collectives, graph and
//! distributed-graph topologies, generalized requests, Alltoallw. They exist
//! so that programs link; each returns MPI_ERR_UNSUPPORTED_OPERATION with a
//! message naming it, through MPI_COMM_WORLD's error handler. The list is
//! mirrored in docs/c-api.md ("Not supported") and include/mpi.h.

use std::os::raw::c_int;

use wanmpi_runtime::{ErrorClass, MpiError};

use crate::error::raise;
use crate::predef::COMM_WORLD;

fn unsupported(name: &str) -> c_int {
    raise(COMM_WORLD, MpiError::new(ErrorClass::UnsupportedOperation, format!("{name} is not supported by wanmpi")))
}

// The C caller passes its arguments in registers or on its own stack and
// cleans up after itself, so an argument-less definition is a sound target
// for any prototype returning int (System V x86_64 ABI).
macro_rules! unsupported {
    ($($name:ident),* $(,)?) => {
        $(
            #[no_mangle]
            pub extern "C" fn $name() -> c_int {
                unsupported(&stringify!($name)[1..])
            }
        )*
    };
}

unsupported!(
    PMPI_Win_create,
    PMPI_Win_allocate,
    PMPI_Win_allocate_shared,
    PMPI_Win_create_dynamic,
    PMPI_Win_free,
    PMPI_Win_fence,
    PMPI_Win_lock,
    PMPI_Win_unlock,
    PMPI_Win_lock_all,
    PMPI_Win_unlock_all,
    PMPI_Win_flush,
    PMPI_Win_start,
    PMPI_Win_complete,
    PMPI_Win_post,
    PMPI_Win_wait,
    PMPI_Put,
    PMPI_Get,
    PMPI_Accumulate,
    PMPI_Get_accumulate,
    PMPI_Fetch_and_op,
    PMPI_Compare_and_swap,
    PMPI_File_open,
    PMPI_File_close,
    PMPI_File_delete,
    PMPI_File_set_view,
    PMPI_File_read,
    PMPI_File_write,
    PMPI_File_read_at,
    PMPI_File_write_at,
    PMPI_File_read_all,
    PMPI_File_write_all,
    PMPI_File_get_size,
    PMPI_Comm_spawn,
    PMPI_Comm_spawn_multiple,
    PMPI_Open_port,
    PMPI_Close_port,
    PMPI_Comm_accept,
    PMPI_Comm_connect,
    PMPI_Comm_disconnect,
    PMPI_Comm_join,
    PMPI_Ibarrier,
    PMPI_Ibcast,
    PMPI_Ireduce,
    PMPI_Iallreduce,
    PMPI_Igather,
    PMPI_Igatherv,
    PMPI_Iscatter,
    PMPI_Iscatterv,
    PMPI_Iallgather,
    PMPI_Iallgatherv,
    PMPI_Ialltoall,
    PMPI_Ialltoallv,
    PMPI_Ireduce_scatter,
    PMPI_Ireduce_scatter_block,
    PMPI_Iscan,
    PMPI_Iexscan,
    PMPI_Alltoallw,
    PMPI_Graph_create,
    PMPI_Dist_graph_create,
    PMPI_Dist_graph_create_adjacent,
    PMPI_Grequest_start,
    PMPI_Grequest_complete,
    PMPI_Comm_idup,
    PMPI_Comm_create_group,
);
