//! Type signature: the sequence of basic elements of one datatype element,
//! run-length encoded (MPI-3.1 §3.3.1). Used to count elements in a partly
//! filled message (`MPI_Get_elements`) and to know what a reduction sees.

use std::sync::Arc;

use super::{BasicType, DatatypeError};

/// Largest number of runs a repetition is expanded into.
/// Tests use a tiny limit so that random small types exercise repeat nodes.
const FLAT_LIMIT: usize = if cfg!(test) { 4 } else { 256 };

#[derive(Debug, Clone)]
enum SigPiece {
    /// `n` (> 0) consecutive elements of one basic type.
    Run { ty: BasicType, n: usize },
    /// `count` (>= 2) copies of `body`.
    Repeat { count: usize, body: Arc<Signature> },
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Signature {
    pieces: Vec<SigPiece>,
    /// Packed bytes.
    size: usize,
    /// Basic elements (a pair type counts as two).
    elements: usize,
    /// Runs once fully expanded (saturating).
    runs: usize,
}

/// Elements one basic type counts for in `MPI_Get_elements`.
fn elements_of(ty: BasicType) -> usize {
    if ty.pair_parts().is_some() {
        2
    } else {
        1
    }
}

impl SigPiece {
    fn size(&self) -> usize {
        match self {
            SigPiece::Run { ty, n } => ty.size() * n,
            SigPiece::Repeat { count, body } => body.size * count,
        }
    }

    fn elements(&self) -> usize {
        match self {
            SigPiece::Run { ty, n } => elements_of(*ty) * n,
            SigPiece::Repeat { count, body } => body.elements * count,
        }
    }

    fn runs(&self) -> usize {
        match self {
            SigPiece::Run { .. } => 1,
            SigPiece::Repeat { count, body } => count.saturating_mul(body.runs),
        }
    }
}

impl Signature {
    pub fn basic(ty: BasicType) -> Signature {
        let mut s = Signature::default();
        s.push(SigPiece::Run { ty, n: 1 });
        s
    }

    pub fn elements(&self) -> usize {
        self.elements
    }

    /// Sizes never overflow here: callers check them through `Span` first,
    /// and a signature has no more elements than bytes.
    fn push(&mut self, piece: SigPiece) {
        if piece.size() == 0 {
            return;
        }
        self.size += piece.size();
        self.elements += piece.elements();
        if let (Some(SigPiece::Run { ty, n }), SigPiece::Run { ty: nty, n: nn }) = (self.pieces.last_mut(), &piece) {
            if ty == nty {
                *n += nn;
                return;
            }
        }
        self.runs = self.runs.saturating_add(piece.runs());
        self.pieces.push(piece);
    }

    pub fn append(&mut self, other: &Signature) {
        for p in &other.pieces {
            self.push(p.clone());
        }
    }

    /// Calls `f` with each run of basic elements, in order, repeats expanded.
    pub fn for_each_run(&self, f: &mut dyn FnMut(BasicType, usize)) {
        for p in &self.pieces {
            match p {
                SigPiece::Run { ty, n } => f(*ty, *n),
                SigPiece::Repeat { count, body } => {
                    for _ in 0..*count {
                        body.for_each_run(f);
                    }
                }
            }
        }
    }

    /// `n` copies of this signature.
    pub fn repeat(&self, n: usize) -> Result<Signature, DatatypeError> {
        if n == 0 || self.size == 0 {
            return Ok(Signature::default());
        }
        if let [SigPiece::Run { ty, n: k }] = self.pieces.as_slice() {
            let n = k.checked_mul(n).ok_or(DatatypeError::Overflow)?;
            let mut out = Signature::default();
            out.push(SigPiece::Run { ty: *ty, n });
            return Ok(out);
        }
        let mut out = Signature::default();
        if self.runs.saturating_mul(n) <= FLAT_LIMIT {
            for _ in 0..n {
                out.append(self);
            }
        } else {
            out.push(SigPiece::Repeat { count: n, body: Arc::new(self.clone()) });
        }
        Ok(out)
    }

    /// Basic elements in the first `bytes` (< packed size) bytes, or `None`
    /// when `bytes` ends inside a basic element.
    pub fn elements_in_prefix(&self, bytes: usize) -> Option<usize> {
        let (mut rem, mut count) = (bytes, 0usize);
        for p in &self.pieces {
            if rem == 0 {
                break;
            }
            let psize = p.size();
            if rem >= psize {
                rem -= psize;
                count += p.elements();
                continue;
            }
            return match p {
                SigPiece::Run { ty, .. } => {
                    let whole = rem / ty.size();
                    let part = rem % ty.size();
                    count += whole * elements_of(*ty);
                    match (part, ty.pair_parts()) {
                        (0, _) => Some(count),
                        // Only the value of a pair arrived.
                        (p, Some((value, _, _))) if p == value.size() => Some(count + 1),
                        _ => None,
                    }
                }
                SigPiece::Repeat { body, .. } => {
                    let whole = rem / body.size;
                    count += whole * body.elements;
                    body.elements_in_prefix(rem % body.size).map(|c| c + count)
                }
            };
        }
        Some(count)
    }

    /// `Some(b)` when every element is of basic type `b`.
    pub fn uniform(&self) -> Option<BasicType> {
        let mut kind = None;
        if self.visit_types(&mut |t| match kind {
            None => {
                kind = Some(t);
                true
            }
            Some(k) => k == t,
        }) {
            kind
        } else {
            None
        }
    }

    /// Calls `f` on each distinct run's type (repeats visited once); stops
    /// and returns false as soon as `f` does.
    fn visit_types(&self, f: &mut dyn FnMut(BasicType) -> bool) -> bool {
        self.pieces.iter().all(|p| match p {
            SigPiece::Run { ty, .. } => f(*ty),
            SigPiece::Repeat { body, .. } => body.visit_types(f),
        })
    }
}
