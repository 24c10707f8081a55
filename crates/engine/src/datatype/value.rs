//! The `Datatype` value: a shared, immutable typemap plus a name and a
//! committed flag (MPI-3.1 §4.1).

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use super::contents::Args;
use super::layout::Layout;
use super::part::Part;
use super::signature::Signature;
use super::span::Span;
use super::{BasicType, Combiner, DatatypeError};

/// An MPI datatype. Cloning shares the same type (like copying a handle).
#[derive(Clone)]
pub struct Datatype(Arc<Inner>);

pub(crate) struct Inner {
    pub args: Args,
    pub span: Span,
    /// `span`'s bounds as the user sees them, computed once.
    pub lb: isize,
    pub extent: isize,
    pub layout: Layout,
    pub sig: Signature,
    /// `Some(b)` when every basic element is `b`.
    pub uniform: Option<BasicType>,
    name: Mutex<String>,
    committed: AtomicBool,
}

impl Datatype {
    /// Wraps a finished typemap.
    pub(crate) fn from_part(part: Part, args: Args, committed: bool) -> Result<Datatype, DatatypeError> {
        let extent = part.span.extent()?;
        if let Some((lo, hi)) = part.span.data {
            hi.checked_sub(lo).ok_or(DatatypeError::Overflow)?;
        }
        let name = match &args {
            Args::Named(b) => b.mpi_name().to_string(),
            _ => String::new(),
        };
        Ok(Datatype(Arc::new(Inner {
            lb: part.span.lb_value(),
            extent,
            uniform: part.sig.uniform(),
            span: part.span,
            layout: part.layout,
            sig: part.sig,
            args,
            name: Mutex::new(name),
            committed: AtomicBool::new(committed),
        })))
    }

    pub(crate) fn inner(&self) -> &Inner {
        &self.0
    }

    /// The predefined datatype `b` (committed, named after its MPI constant).
    pub fn basic(b: BasicType) -> Datatype {
        // Only a pair type has a gap between its value and its index.
        let (layout, data_end) = match b.pair_parts() {
            Some((value, index, at)) => {
                let mut l = Layout::block(0, value.size());
                let at = at as isize;
                // Offsets are small constants, so this cannot fail.
                let _ = l.append(&Layout::block(0, index.size()), at);
                (l, at + index.size() as isize)
            }
            None => (Layout::block(0, b.size()), b.size() as isize),
        };
        let span = Span::basic(b.size(), data_end, b.extent() as isize, b.alignment());
        let inner = Inner {
            args: Args::Named(b),
            span,
            lb: 0,
            extent: b.extent() as isize,
            layout,
            sig: Signature::basic(b),
            uniform: Some(b),
            name: Mutex::new(b.mpi_name().to_string()),
            committed: AtomicBool::new(true),
        };
        Datatype(Arc::new(inner))
    }

    /// MPI_Type_dup: the same typemap and committed state, a new identity,
    /// an empty name.
    pub fn dup(&self) -> Datatype {
        self.relabel(Args::Dup(self.clone()))
    }

    /// The same typemap recorded as made by another constructor: a
    /// subarray or darray built from simpler types, an F90 type that is a
    /// basic one (what MPI_Type_get_envelope reports).
    pub(crate) fn relabel(&self, args: Args) -> Datatype {
        let inner = &self.0;
        Datatype(Arc::new(Inner {
            args,
            span: inner.span,
            lb: inner.lb,
            extent: inner.extent,
            layout: inner.layout.clone(),
            sig: inner.sig.clone(),
            uniform: inner.uniform,
            name: Mutex::new(String::new()),
            committed: AtomicBool::new(self.is_committed()),
        }))
    }

    /// True when both values are the same datatype (same handle).
    pub fn ptr_eq(&self, other: &Datatype) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// MPI_Type_size: data bytes of one element.
    #[inline]
    pub fn size(&self) -> usize {
        self.0.span.size
    }

    /// Lower bound (MPI_Type_get_extent).
    pub fn lb(&self) -> isize {
        self.0.lb
    }

    /// Extent: distance between consecutive elements (MPI_Type_get_extent).
    #[inline]
    pub fn extent(&self) -> isize {
        self.0.extent
    }

    /// Lower bound of the data bytes alone (MPI_Type_get_true_extent).
    #[inline]
    pub fn true_lb(&self) -> isize {
        self.0.span.data.map_or(0, |(lo, _)| lo)
    }

    /// Span of the data bytes alone (MPI_Type_get_true_extent).
    pub fn true_extent(&self) -> isize {
        // Checked at construction.
        self.0.span.data.map_or(0, |(lo, hi)| hi.wrapping_sub(lo))
    }

    /// True when `count` elements occupy exactly `count * size` bytes from
    /// `true_lb` with no gaps, so a buffer can be sent as it is.
    #[inline]
    pub fn is_contiguous(&self) -> bool {
        let size = self.size();
        if size == 0 {
            return self.extent() == 0;
        }
        self.0.layout.single_block() == Some((self.true_lb(), size)) && isize::try_from(size) == Ok(self.extent())
    }

    /// `Some(b)` when every basic element is `b` (what a reduction works on);
    /// a pair type counts as its own kind. `None` for mixed or empty types.
    pub fn basic_kind(&self) -> Option<BasicType> {
        self.0.uniform
    }

    /// MPI_Type_get_envelope's combiner.
    pub fn combiner(&self) -> Combiner {
        self.0.args.combiner()
    }

    /// MPI_Type_get_name: basic types report their MPI name, others the
    /// name last set (empty at first).
    pub fn name(&self) -> String {
        self.0.name.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// MPI_Type_set_name (shared by every clone of this value).
    pub fn set_name(&self, name: &str) {
        *self.0.name.lock().unwrap_or_else(|e| e.into_inner()) = name.to_string();
    }

    /// MPI_Type_commit. Layouts are flattened at construction, so commit
    /// only records that the user allowed the type in communication.
    pub fn commit(&self) {
        self.0.committed.store(true, Ordering::Release);
    }

    #[inline]
    pub fn is_committed(&self) -> bool {
        self.0.committed.load(Ordering::Acquire)
    }

    /// `Err(NotCommitted)` unless the type may be used in communication.
    pub fn check_committed(&self) -> Result<(), DatatypeError> {
        if self.is_committed() {
            Ok(())
        } else {
            Err(DatatypeError::NotCommitted)
        }
    }

    /// MPI_Get_elements for a message of `bytes` packed bytes: the number of
    /// basic elements, or `None` (MPI_UNDEFINED) when `bytes` ends inside one.
    pub fn elements_in(&self, bytes: usize) -> Option<usize> {
        let size = self.size();
        if size == 0 {
            return Some(0);
        }
        let whole = (bytes / size).checked_mul(self.0.sig.elements())?;
        let part = self.0.sig.elements_in_prefix(bytes % size)?;
        whole.checked_add(part)
    }

    /// Calls `f(type, n)` for each run of `n` basic elements of one
    /// element of this type, in typemap order (repetitions expanded): what
    /// MPI-IO's user-defined data representations size and convert.
    pub fn for_each_basic_run(&self, f: &mut dyn FnMut(BasicType, usize)) {
        self.0.sig.for_each_run(f);
    }

    /// MPI_Get_count: whole elements in `bytes`, or `None` (MPI_UNDEFINED)
    /// when `bytes` is not a multiple of the size. Zero-size types count 0.
    pub fn count_in(&self, bytes: usize) -> Option<usize> {
        let size = self.size();
        if size == 0 {
            return Some(0);
        }
        let (whole, rest) = (bytes / size, bytes % size);
        (rest == 0).then_some(whole)
    }
}

impl fmt::Debug for Datatype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Datatype")
            .field("name", &self.name())
            .field("combiner", &self.combiner())
            .field("size", &self.size())
            .field("lb", &self.lb())
            .field("extent", &self.extent())
            .finish()
    }
}
