//! MPI-IO for wanmpi (MPI-4.0 chapter 14), for ranks that share a file
//! system (a local one, or NFS and the like across hosts): a [`File`] is
//! an open file of a communicator's ranks, with its view, individual and
//! shared file pointers, atomicity and hints. Everything is done with
//! plain positioned reads and writes (`pread`/`pwrite`) and POSIX record
//! locks; collective agreement runs over a private duplicate of the
//! file's communicator through the runtime's collectives.
//!
//! Data representations: "native" ("internal" is the same), "external32"
//! (`external32.rs`) and the ones the program registers, both through the
//! [`Datarep`] trait (`datarep.rs`).
//!
//! Not here: two-phase collective buffering — each rank accesses its own bytes, a
//! collective write then ends with a barrier. Nonblocking calls are the
//! C API's: they complete at once. The C handles live in `wanmpi-capi`.

mod access;
mod agree;
pub mod amode;
mod datarep;
mod external32;
mod file;
mod lock;
mod manage;
mod oserr;
mod pointer;
mod shared;
mod split;
mod view;

pub use access::{status, At};
pub use datarep::{Datarep, PIECE};
pub use file::{File, SplitKind};
pub use manage::DISPLACEMENT_CURRENT;
pub use pointer::{SEEK_CUR, SEEK_END, SEEK_SET};
pub use view::{View, DATAREPS};
