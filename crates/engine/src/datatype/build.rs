//! Derived datatype constructors (MPI-3.1 §4.1.2–4.1.7). Each builds its
//! typemap from `Part`s; all arithmetic is checked, so bad user arguments
//! give an error, never a panic.

use super::contents::Args;
use super::part::Part;
use super::{Datatype, DatatypeError};

/// Counts must fit the signed types of the C binding and of `contents`.
fn check_count(n: usize) -> Result<(), DatatypeError> {
    isize::try_from(n).map(|_| ()).map_err(|_| DatatypeError::Overflow)
}

fn check_same_len(what: &str, a: usize, b: usize) -> Result<(), DatatypeError> {
    if a == b {
        Ok(())
    } else {
        Err(DatatypeError::BadArgument(format!("{what}: {a} block lengths but {b} displacements")))
    }
}

/// Displacements given in extents of `old`, converted to bytes.
fn in_bytes(displs: &[isize], old: &Datatype) -> Result<Vec<isize>, DatatypeError> {
    displs.iter().map(|d| d.checked_mul(old.extent()).ok_or(DatatypeError::Overflow)).collect()
}

/// Blocks of `old` at byte displacements, in order.
fn blocks(blocklens: &[usize], displs: &[isize], old: &Datatype) -> Result<Part, DatatypeError> {
    let mut acc = Part::empty();
    for (&n, &d) in blocklens.iter().zip(displs) {
        check_count(n)?;
        acc.append(&Part::block(old, n)?, d)?;
    }
    Ok(acc)
}

/// `count` copies of one block of `old`, at byte displacements.
fn same_blocks(blocklen: usize, displs: &[isize], old: &Datatype) -> Result<Part, DatatypeError> {
    check_count(blocklen)?;
    let block = Part::block(old, blocklen)?;
    let mut acc = Part::empty();
    for &d in displs {
        acc.append(&block, d)?;
    }
    Ok(acc)
}

impl Datatype {
    /// MPI_Type_contiguous (§4.1.2): `count` copies of `old`.
    pub fn contiguous(count: usize, old: &Datatype) -> Result<Datatype, DatatypeError> {
        check_count(count)?;
        let part = Part::block(old, count)?;
        Datatype::from_part(part, Args::Contiguous { count, old: old.clone() }, false)
    }

    /// MPI_Type_vector: `count` blocks of `blocklen` copies, block starts
    /// `stride` extents of `old` apart.
    pub fn vector(count: usize, blocklen: usize, stride: isize, old: &Datatype) -> Result<Datatype, DatatypeError> {
        let stride_bytes = stride.checked_mul(old.extent()).ok_or(DatatypeError::Overflow)?;
        let part = Self::strided(count, blocklen, stride_bytes, old)?;
        Datatype::from_part(part, Args::Vector { count, blocklen, stride, old: old.clone() }, false)
    }

    /// MPI_Type_create_hvector: like `vector`, stride in bytes.
    pub fn hvector(count: usize, blocklen: usize, stride_bytes: isize, old: &Datatype) -> Result<Datatype, DatatypeError> {
        let part = Self::strided(count, blocklen, stride_bytes, old)?;
        let args = Args::Hvector { count, blocklen, stride: stride_bytes, old: old.clone() };
        Datatype::from_part(part, args, false)
    }

    fn strided(count: usize, blocklen: usize, stride_bytes: isize, old: &Datatype) -> Result<Part, DatatypeError> {
        check_count(count)?;
        check_count(blocklen)?;
        Part::block(old, blocklen)?.repeat(count, stride_bytes)
    }

    /// MPI_Type_indexed: blocks at displacements counted in extents of `old`.
    pub fn indexed(blocklens: &[usize], displs: &[isize], old: &Datatype) -> Result<Datatype, DatatypeError> {
        check_same_len("indexed", blocklens.len(), displs.len())?;
        let part = blocks(blocklens, &in_bytes(displs, old)?, old)?;
        let args = Args::Indexed { blocklens: blocklens.to_vec(), displs: displs.to_vec(), old: old.clone() };
        Datatype::from_part(part, args, false)
    }

    /// MPI_Type_create_hindexed: blocks at byte displacements.
    pub fn hindexed(blocklens: &[usize], displs_bytes: &[isize], old: &Datatype) -> Result<Datatype, DatatypeError> {
        check_same_len("hindexed", blocklens.len(), displs_bytes.len())?;
        let part = blocks(blocklens, displs_bytes, old)?;
        let args = Args::Hindexed { blocklens: blocklens.to_vec(), displs: displs_bytes.to_vec(), old: old.clone() };
        Datatype::from_part(part, args, false)
    }

    /// MPI_Type_create_indexed_block: equal blocks at displacements in extents.
    pub fn indexed_block(blocklen: usize, displs: &[isize], old: &Datatype) -> Result<Datatype, DatatypeError> {
        let part = same_blocks(blocklen, &in_bytes(displs, old)?, old)?;
        let args = Args::IndexedBlock { blocklen, displs: displs.to_vec(), old: old.clone() };
        Datatype::from_part(part, args, false)
    }

    /// MPI_Type_create_hindexed_block: equal blocks at byte displacements.
    pub fn hindexed_block(blocklen: usize, displs_bytes: &[isize], old: &Datatype) -> Result<Datatype, DatatypeError> {
        let part = same_blocks(blocklen, displs_bytes, old)?;
        let args = Args::HindexedBlock { blocklen, displs: displs_bytes.to_vec(), old: old.clone() };
        Datatype::from_part(part, args, false)
    }

    /// MPI_Type_create_struct (§4.1.2): blocks of different types at byte
    /// displacements. Without an explicit upper bound among the components,
    /// the extent is padded to their strictest alignment (§4.1.6).
    pub fn create_struct(blocklens: &[usize], displs_bytes: &[isize], types: &[Datatype]) -> Result<Datatype, DatatypeError> {
        check_same_len("struct", blocklens.len(), displs_bytes.len())?;
        if types.len() != blocklens.len() {
            return Err(DatatypeError::BadArgument(format!("struct: {} block lengths but {} types", blocklens.len(), types.len())));
        }
        let mut part = Part::empty();
        for ((&n, &d), t) in blocklens.iter().zip(displs_bytes).zip(types) {
            check_count(n)?;
            part.append(&Part::block(t, n)?, d)?;
        }
        part.span = part.span.pad_to_alignment()?;
        let args = Args::Struct { blocklens: blocklens.to_vec(), displs: displs_bytes.to_vec(), types: types.to_vec() };
        Datatype::from_part(part, args, false)
    }

    /// MPI_Type_create_resized (§4.1.7): same data, explicit bounds
    /// `[lb, lb + extent)` that later constructors keep.
    pub fn resized(old: &Datatype, lb: isize, extent: isize) -> Result<Datatype, DatatypeError> {
        let mut part = Part::of(old);
        part.span = part.span.resized(lb, extent)?;
        Datatype::from_part(part, Args::Resized { lb, extent, old: old.clone() }, false)
    }
}
