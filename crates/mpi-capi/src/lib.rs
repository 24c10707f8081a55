//! wanmpi's C API: the functions of `include/mpi.h`, built into
//! `libmpi.so.12` with the MPICH ABI (handle values, `MPI_Status` layout,
//! special pointers), so that programs compiled for MPICH run unchanged.
//!
//! This crate is a thin shell over `wanmpi-runtime`: it checks arguments,
//! translates handles (`handles.rs`, `predef.rs`, `global.rs`), maps errors
//! and applies error handlers (`error.rs`); it has no protocol logic. Every
//! function is exported as `PMPI_*`; `scripts/install-c` adds the weak
//! `MPI_*` aliases (the profiling interface) when it links the library.
//! One file per chapter of MPI-4.0, which `MPI_Get_version` reports. Each
//! large-count `_c` function sits beside its int version; both are entry
//! points of one body generic over the count type (`args::Count`).
//!
//! Every function of MPICH 4.0's `mpi.h`/`mpio.h` exists (`scripts/check-abi`)
//! and is written by hand; a function MPICH adds would get a stub generated
//! into `stubs.rs` by `gen/stubs.py` (sharing `unsupported.rs`) until written.

// Entry points take C pointers under MPI's contract (valid or null, checked
// here); the argument helpers in `args.rs`/`status.rs` share that contract
// rather than each being an `unsafe fn`.
#![allow(non_snake_case, clippy::missing_safety_doc, clippy::too_many_arguments, clippy::not_unsafe_ptr_arg_deref)]

pub mod args;
pub mod error;
pub mod global;
pub mod handles;
pub mod predef;
pub mod status;

pub mod attr;
pub mod coll;
pub mod comm;
pub mod convert;
pub mod datatype;
pub mod dynamic;
pub mod env;
pub mod errhandler;
pub mod external;
pub mod file;
pub mod graph;
pub mod grequest;
pub mod group;
pub mod icoll;
pub mod info;
pub mod large_count;
pub mod mpit;
pub mod neighbor;
pub mod op;
pub mod p2p;
pub mod partitioned;
pub mod request;
pub mod session;
pub mod stubs;
pub mod topo;
pub mod type_attr;
pub mod ulfm;
pub mod unsupported;
pub mod win;
