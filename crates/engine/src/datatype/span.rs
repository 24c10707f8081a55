//! Bounds arithmetic of typemaps (MPI-3.1 §4.1.6–4.1.7), all checked.
//!
//! A typemap's lower bound is the smallest displacement of its entries and its
//! upper bound the largest end, unless some entry carries an explicit ("sticky")
//! bound from `MPI_Type_create_resized`: then only explicit bounds count. Each
//! bound therefore remembers whether it is explicit.

use super::DatatypeError;

/// One end of a typemap's extent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bound {
    pub value: isize,
    /// Set by `MPI_Type_create_resized` (the old MPI_LB / MPI_UB markers).
    pub marked: bool,
}

/// Size, bounds and alignment of a (partial) typemap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    /// Bytes of data.
    pub size: usize,
    /// `None` for an empty typemap without explicit bounds.
    pub lb: Option<Bound>,
    pub ub: Option<Bound>,
    /// True bounds of the data bytes, `None` when there is no data.
    pub data: Option<(isize, isize)>,
    /// Strictest alignment of the basic types inside (1 when empty).
    pub align: usize,
}

fn overflow() -> DatatypeError {
    DatatypeError::Overflow
}

fn add(a: isize, b: isize) -> Result<isize, DatatypeError> {
    a.checked_add(b).ok_or_else(overflow)
}

/// Union of two bounds: explicit ones win over implicit ones.
fn pick(a: Option<Bound>, b: Option<Bound>, f: fn(isize, isize) -> isize) -> Option<Bound> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(a), Some(b)) if a.marked == b.marked => Some(Bound { value: f(a.value, b.value), marked: a.marked }),
        (Some(a), Some(b)) => Some(if a.marked { a } else { b }),
    }
}

impl Span {
    pub const EMPTY: Span = Span { size: 0, lb: None, ub: None, data: None, align: 1 };

    /// A basic element of `size` data bytes in `[0, data_end)` and `extent`.
    pub fn basic(size: usize, data_end: isize, extent: isize, align: usize) -> Span {
        Span { size, lb: Some(Bound { value: 0, marked: false }), ub: Some(Bound { value: extent, marked: false }), data: Some((0, data_end)), align }
    }

    /// Lower bound as reported to the user (0 for an empty typemap).
    pub fn lb_value(&self) -> isize {
        self.lb.map_or(0, |b| b.value)
    }

    pub fn ub_value(&self) -> isize {
        self.ub.map_or(0, |b| b.value)
    }

    /// Extent `ub - lb`, checked.
    pub fn extent(&self) -> Result<isize, DatatypeError> {
        self.ub_value().checked_sub(self.lb_value()).ok_or_else(overflow)
    }

    /// The same typemap moved by `d` bytes.
    pub fn shift(self, d: isize) -> Result<Span, DatatypeError> {
        let mv = |b: Option<Bound>| -> Result<Option<Bound>, DatatypeError> {
            b.map(|b| Ok(Bound { value: add(b.value, d)?, marked: b.marked })).transpose()
        };
        let data = match self.data {
            Some((lo, hi)) => Some((add(lo, d)?, add(hi, d)?)),
            None => None,
        };
        Ok(Span { lb: mv(self.lb)?, ub: mv(self.ub)?, data, ..self })
    }

    /// `n` copies of this typemap, copy `i` moved by `i * stride` bytes.
    pub fn repeat(self, n: usize, stride: isize) -> Result<Span, DatatypeError> {
        if n == 0 {
            return Ok(Span::EMPTY);
        }
        let last = isize::try_from(n - 1).map_err(|_| overflow())?;
        let reach = last.checked_mul(stride).ok_or_else(overflow)?;
        let (lo, hi) = (reach.min(0), reach.max(0));
        let size = self.size.checked_mul(n).ok_or_else(overflow)?;
        if isize::try_from(size).is_err() {
            return Err(overflow());
        }
        let lower = |b: Option<Bound>| -> Result<Option<Bound>, DatatypeError> {
            b.map(|b| Ok(Bound { value: add(b.value, lo)?, marked: b.marked })).transpose()
        };
        let upper = |b: Option<Bound>| -> Result<Option<Bound>, DatatypeError> {
            b.map(|b| Ok(Bound { value: add(b.value, hi)?, marked: b.marked })).transpose()
        };
        let data = match self.data {
            Some((dlo, dhi)) => Some((add(dlo, lo)?, add(dhi, hi)?)),
            None => None,
        };
        Ok(Span { size, lb: lower(self.lb)?, ub: upper(self.ub)?, data, align: self.align })
    }

    /// The typemap made of this one followed by `other`.
    pub fn union(self, other: Span) -> Result<Span, DatatypeError> {
        let size = self.size.checked_add(other.size).ok_or_else(overflow)?;
        if isize::try_from(size).is_err() {
            return Err(overflow());
        }
        let data = match (self.data, other.data) {
            (None, x) | (x, None) => x,
            (Some((a0, a1)), Some((b0, b1))) => Some((a0.min(b0), a1.max(b1))),
        };
        Ok(Span { size, lb: pick(self.lb, other.lb, isize::min), ub: pick(self.ub, other.ub, isize::max), data, align: self.align.max(other.align) })
    }

    /// Struct padding (§4.1.6): without an explicit upper bound, round the
    /// extent up to a multiple of the strictest alignment inside.
    pub fn pad_to_alignment(self) -> Result<Span, DatatypeError> {
        let (Some(lb), Some(ub)) = (self.lb, self.ub) else { return Ok(self) };
        if ub.marked {
            return Ok(self);
        }
        let align = isize::try_from(self.align).map_err(|_| overflow())?;
        let extent = ub.value.checked_sub(lb.value).ok_or_else(overflow)?;
        let rem = extent.rem_euclid(align);
        if rem == 0 {
            return Ok(self);
        }
        let value = add(ub.value, align - rem)?;
        Ok(Span { ub: Some(Bound { value, marked: false }), ..self })
    }

    /// Explicit bounds `[lb, lb + extent)` over the same data (resized).
    pub fn resized(self, lb: isize, extent: isize) -> Result<Span, DatatypeError> {
        let ub = add(lb, extent)?;
        Ok(Span { lb: Some(Bound { value: lb, marked: true }), ub: Some(Bound { value: ub, marked: true }), ..self })
    }
}
