//! MPI datatypes (MPI-3.1 chapter 4).
//!
//! A [`Datatype`] is an immutable description of a typemap: which bytes of a
//! user buffer hold data, in which order, and which basic types they are.
//! It is a cheap-to-clone value (an `Arc` inside) that can be shared between
//! threads; only its name and its committed flag change after construction.
//!
//! At construction every type is flattened twice:
//! - a byte [`layout`] of merged contiguous blocks, so that packing is a loop of
//!   `memcpy` (large repetitions stay as compact "repeat" nodes instead of
//!   millions of blocks);
//! - a [`signature`] of basic elements (run-length encoded), used for
//!   `MPI_Get_elements` and for reductions.
//!
//! Bounds follow MPI-3.1 §4.1.6–4.1.7: explicit bounds set by
//! `MPI_Type_create_resized` are "sticky" through later constructors, and
//! `MPI_Type_create_struct` pads the extent to the strictest alignment of its
//! components (C binding, x86_64 LP64 alignments from [`BasicType::alignment`]).
//!
//! Pair types (`MPI_DOUBLE_INT`, …) are structs of two basic types (§5.9.4):
//! they pack only their data bytes and count as two elements in
//! `MPI_Get_elements`, as MPICH does (its test `get-elements-pairtype` expects
//! a `{double, int, double}` message received as two `MPI_DOUBLE_INT` to
//! count 3 elements).

mod basic;
mod build;
mod contents;
mod external32;
mod laid_out;
mod layout;
mod pack;
mod part;
mod signature;
mod span;
mod value;

#[cfg(test)]
mod tests;

pub use basic::{BasicType, OpClass};
pub use contents::F90Kind;
pub use laid_out::LaidOut;
pub use value::Datatype;

/// Errors of the datatype constructors (MPI error class noted per variant).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DatatypeError {
    /// A count or block length was negative (MPI_ERR_COUNT). Our counts are
    /// `usize`; bindings with signed counts report it through this variant.
    #[error("negative count or block length")]
    NegativeCount,
    /// Sizes, displacements or bounds do not fit the address type (MPI_ERR_ARG).
    #[error("datatype size, extent or displacement overflows")]
    Overflow,
    /// The type was used for communication before `MPI_Type_commit` (MPI_ERR_TYPE).
    #[error("datatype not committed")]
    NotCommitted,
    /// Any other invalid argument (MPI_ERR_ARG), with a readable reason.
    #[error("bad datatype argument: {0}")]
    BadArgument(String),
    /// A value cannot be converted to a representation's size, such as a
    /// C long beyond 32 bits in external32 (MPI_ERR_CONVERSION).
    #[error("{0}")]
    OutOfRange(String),
}

/// How a datatype was made (MPI_Type_get_envelope, MPI-3.1 §4.1.13).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Combiner {
    Named,
    Dup,
    Contiguous,
    Vector,
    Hvector,
    Indexed,
    Hindexed,
    IndexedBlock,
    HindexedBlock,
    Struct,
    Resized,
    Subarray,
    Darray,
    F90Real,
    F90Complex,
    F90Integer,
}
