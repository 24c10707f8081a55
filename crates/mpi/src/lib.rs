//! wanmpi for Rust: a safe MPI over the wanmpi runtime.
//!
//! Naming follows rsmpi: `immediate_*` for nonblocking operations, `*_into`
//! when the caller supplies the buffer. A nonblocking request borrows its
//! buffer, so the compiler keeps the buffer alive and untouched until the
//! request completes (a request dropped before completion waits for it).
//! Every call returns a `Result`; what happens on error is decided by the
//! communicator's error handler, as in MPI: fatal by default (the job ends
//! with the error's message), `ErrHandler::Return` to get the `Err`.
//!
//! Module map (MPI-3.1 chapters): `environment` (§8), `datatype` (§4),
//! `point_to_point` (§3), `request` (§3.7), `collective` (§5),
//! `communicator` (§6).

pub mod collective;
pub mod communicator;
pub mod datatype;
pub mod environment;
pub mod immediate_collective;
pub mod point_to_point;
pub mod request;

pub use communicator::Communicator;
pub use datatype::Equivalence;
pub use environment::{initialize, Universe};
pub use point_to_point::Status;
pub use request::Request;

pub use wanmpi_runtime::{
    dims_create, Comparison, ErrHandler, ErrorClass, Group, Info, MpiError, Op, PredefOp, ALLOW_OVERTAKING, ANY_SOURCE, ANY_TAG, PROC_NULL, TAG_UB,
    UNDEFINED,
};

pub type Result<T> = std::result::Result<T, MpiError>;

/// Everything most programs need.
pub mod prelude {
    pub use crate::{initialize, Communicator, Equivalence, Op, PredefOp, Request, Status, Universe, ANY_SOURCE, ANY_TAG};
}
