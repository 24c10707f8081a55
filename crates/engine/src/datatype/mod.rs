//! MPI datatypes (MPI-3.1 chapter 4). Placeholder: being written.
mod basic;
pub use basic::{BasicType, OpClass};
