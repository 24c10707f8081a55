//! The arguments a datatype was made from, decoded by MPI_Type_get_envelope
//! and MPI_Type_get_contents (MPI-3.1 §4.1.13, table of combiners).

use super::{BasicType, Combiner, Datatype};

/// Constructor arguments, kept as given (counts are checked to fit `isize`).
#[derive(Debug, Clone)]
pub(crate) enum Args {
    Named(BasicType),
    Dup(Datatype),
    Contiguous {
        count: usize,
        old: Datatype,
    },
    Vector {
        count: usize,
        blocklen: usize,
        stride: isize,
        old: Datatype,
    },
    Hvector {
        count: usize,
        blocklen: usize,
        stride: isize,
        old: Datatype,
    },
    Indexed {
        blocklens: Vec<usize>,
        displs: Vec<isize>,
        old: Datatype,
    },
    Hindexed {
        blocklens: Vec<usize>,
        displs: Vec<isize>,
        old: Datatype,
    },
    IndexedBlock {
        blocklen: usize,
        displs: Vec<isize>,
        old: Datatype,
    },
    HindexedBlock {
        blocklen: usize,
        displs: Vec<isize>,
        old: Datatype,
    },
    Struct {
        blocklens: Vec<usize>,
        displs: Vec<isize>,
        types: Vec<Datatype>,
    },
    Resized {
        lb: isize,
        extent: isize,
        old: Datatype,
    },
    /// MPI_Type_create_subarray's integers: ndims, sizes, subsizes, starts, order.
    Subarray {
        ints: Vec<i64>,
        old: Datatype,
    },
    /// MPI_Type_create_darray's integers: size, rank, ndims, gsizes, distribs, dargs, psizes, order.
    Darray {
        ints: Vec<i64>,
        old: Datatype,
    },
    /// MPI_Type_create_f90_*: (p, r) for real and complex, (r) for integer.
    F90 {
        kind: F90Kind,
        ints: Vec<i64>,
    },
}

/// Which MPI_Type_create_f90_* made a type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum F90Kind {
    Real,
    Complex,
    Integer,
}

/// Counts were checked to fit `isize` by the constructors.
fn int(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn ints(v: &[usize]) -> impl Iterator<Item = i64> + '_ {
    v.iter().map(|&n| int(n))
}

fn addrs_as_ints(v: &[isize]) -> impl Iterator<Item = i64> + '_ {
    v.iter().map(|&d| d as i64)
}

impl Args {
    pub fn combiner(&self) -> Combiner {
        match self {
            Args::Named(_) => Combiner::Named,
            Args::Dup(_) => Combiner::Dup,
            Args::Contiguous { .. } => Combiner::Contiguous,
            Args::Vector { .. } => Combiner::Vector,
            Args::Hvector { .. } => Combiner::Hvector,
            Args::Indexed { .. } => Combiner::Indexed,
            Args::Hindexed { .. } => Combiner::Hindexed,
            Args::IndexedBlock { .. } => Combiner::IndexedBlock,
            Args::HindexedBlock { .. } => Combiner::HindexedBlock,
            Args::Struct { .. } => Combiner::Struct,
            Args::Resized { .. } => Combiner::Resized,
            Args::Subarray { .. } => Combiner::Subarray,
            Args::Darray { .. } => Combiner::Darray,
            Args::F90 { kind: F90Kind::Real, .. } => Combiner::F90Real,
            Args::F90 { kind: F90Kind::Complex, .. } => Combiner::F90Complex,
            Args::F90 { kind: F90Kind::Integer, .. } => Combiner::F90Integer,
        }
    }

    /// (integers, addresses, datatypes) in the standard's order.
    fn decode(&self) -> (Vec<i64>, Vec<isize>, Vec<Datatype>) {
        match self {
            Args::Named(_) => (vec![], vec![], vec![]),
            Args::Dup(old) => (vec![], vec![], vec![old.clone()]),
            Args::Contiguous { count, old } => (vec![int(*count)], vec![], vec![old.clone()]),
            Args::Vector { count, blocklen, stride, old } => (vec![int(*count), int(*blocklen), *stride as i64], vec![], vec![old.clone()]),
            Args::Hvector { count, blocklen, stride, old } => (vec![int(*count), int(*blocklen)], vec![*stride], vec![old.clone()]),
            Args::Indexed { blocklens, displs, old } => {
                let mut i = vec![int(blocklens.len())];
                i.extend(ints(blocklens));
                i.extend(addrs_as_ints(displs));
                (i, vec![], vec![old.clone()])
            }
            Args::Hindexed { blocklens, displs, old } => {
                let mut i = vec![int(blocklens.len())];
                i.extend(ints(blocklens));
                (i, displs.clone(), vec![old.clone()])
            }
            Args::IndexedBlock { blocklen, displs, old } => {
                let mut i = vec![int(displs.len()), int(*blocklen)];
                i.extend(addrs_as_ints(displs));
                (i, vec![], vec![old.clone()])
            }
            Args::HindexedBlock { blocklen, displs, old } => (vec![int(displs.len()), int(*blocklen)], displs.clone(), vec![old.clone()]),
            Args::Struct { blocklens, displs, types } => {
                let mut i = vec![int(blocklens.len())];
                i.extend(ints(blocklens));
                (i, displs.clone(), types.clone())
            }
            Args::Resized { lb, extent, old } => (vec![], vec![*lb, *extent], vec![old.clone()]),
            Args::Subarray { ints, old } | Args::Darray { ints, old } => (ints.clone(), vec![], vec![old.clone()]),
            Args::F90 { ints, .. } => (ints.clone(), vec![], vec![]),
        }
    }
}

impl Datatype {
    /// This type (built from simpler constructors) recorded as
    /// MPI_Type_create_subarray(`ints`, `old`) made it.
    pub fn as_subarray(&self, ints: Vec<i64>, old: &Datatype) -> Datatype {
        self.relabel(Args::Subarray { ints, old: old.clone() })
    }

    /// This type recorded as MPI_Type_create_darray(`ints`, `old`) made it.
    pub fn as_darray(&self, ints: Vec<i64>, old: &Datatype) -> Datatype {
        self.relabel(Args::Darray { ints, old: old.clone() })
    }

    /// The basic type `self` recorded as MPI_Type_create_f90_* made it:
    /// predefined, as MPI says, but with its own combiner and parameters.
    pub fn as_f90(&self, kind: F90Kind, ints: Vec<i64>) -> Datatype {
        self.relabel(Args::F90 { kind, ints })
    }

    /// MPI_Type_get_envelope: (num_integers, num_addresses, num_datatypes, combiner).
    pub fn envelope(&self) -> (usize, usize, usize, Combiner) {
        let (i, a, d) = self.inner().args.decode();
        (i.len(), a.len(), d.len(), self.combiner())
    }

    /// MPI_Type_get_contents: the constructor's arguments. Empty for a named
    /// (predefined) type, for which MPI makes the call erroneous.
    pub fn contents(&self) -> (Vec<i64>, Vec<isize>, Vec<Datatype>) {
        self.inner().args.decode()
    }
}
