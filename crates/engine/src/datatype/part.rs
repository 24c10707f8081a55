//! A typemap under construction: bounds, byte layout and signature kept in
//! step. Every constructor is a few `repeat`/`shift`/`append` steps on these.

use super::layout::Layout;
use super::signature::Signature;
use super::span::Span;
use super::{Datatype, DatatypeError};

#[derive(Debug, Clone)]
pub(crate) struct Part {
    pub span: Span,
    pub layout: Layout,
    pub sig: Signature,
}

impl Part {
    pub fn empty() -> Part {
        Part { span: Span::EMPTY, layout: Layout::default(), sig: Signature::default() }
    }

    /// One copy of `t` at displacement 0.
    pub fn of(t: &Datatype) -> Part {
        let inner = t.inner();
        Part { span: inner.span, layout: inner.layout.clone(), sig: inner.sig.clone() }
    }

    /// `n` copies, copy `i` moved by `i * stride` bytes.
    pub fn repeat(&self, n: usize, stride: isize) -> Result<Part, DatatypeError> {
        // Bounds first: they check every size and offset the others compute.
        let span = self.span.repeat(n, stride)?;
        Ok(Part { span, layout: self.layout.repeat(n, stride)?, sig: self.sig.repeat(n)? })
    }

    /// `n` copies of `t` placed one extent apart (a block of a constructor).
    pub fn block(t: &Datatype, n: usize) -> Result<Part, DatatypeError> {
        Part::of(t).repeat(n, t.extent())
    }

    /// Appends `other` moved by `d` bytes after this part, in typemap order.
    pub fn append(&mut self, other: &Part, d: isize) -> Result<(), DatatypeError> {
        self.span = self.span.union(other.span.shift(d)?)?;
        self.layout.append(&other.layout, d)?;
        self.sig.append(&other.sig);
        Ok(())
    }
}
