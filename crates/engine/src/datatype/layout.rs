//! Byte layout of one element of a datatype: where its data bytes are, in
//! typemap order, as merged contiguous blocks.
//!
//! Small typemaps are fully flattened (a list of `(offset, len)` blocks with
//! neighbours merged), so packing is one `memcpy` per block. A repetition that
//! would expand to more than [`FLAT_LIMIT`] blocks is kept as a `Repeat` node
//! (count, stride, body) so that e.g. a vector of a million doubles costs one
//! node, not a million blocks, while still packing at one `memcpy` per block.

use std::sync::Arc;

use super::DatatypeError;

/// Largest number of blocks a repetition is expanded into.
/// Tests use a tiny limit so that random small types exercise repeat nodes.
const FLAT_LIMIT: usize = if cfg!(test) { 4 } else { 1024 };

#[derive(Debug, Clone)]
pub(crate) enum Piece {
    /// `len` (> 0) data bytes at `off`.
    Block { off: isize, len: usize },
    /// `count` (>= 2) copies of `body`, copy `i` at `off + i * stride`.
    Repeat { off: isize, count: usize, stride: isize, body: Arc<Layout> },
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Layout {
    pieces: Vec<Piece>,
    /// Packed bytes (sum of the blocks).
    size: usize,
    /// Number of blocks once fully expanded (saturating).
    blocks: usize,
}

fn overflow() -> DatatypeError {
    DatatypeError::Overflow
}

impl Piece {
    fn shifted(&self, d: isize) -> Result<Piece, DatatypeError> {
        Ok(match self {
            Piece::Block { off, len } => Piece::Block { off: off.checked_add(d).ok_or_else(overflow)?, len: *len },
            Piece::Repeat { off, count, stride, body } => {
                Piece::Repeat { off: off.checked_add(d).ok_or_else(overflow)?, count: *count, stride: *stride, body: Arc::clone(body) }
            }
        })
    }

    fn size(&self) -> usize {
        match self {
            Piece::Block { len, .. } => *len,
            Piece::Repeat { count, body, .. } => count * body.size,
        }
    }

    fn blocks(&self) -> usize {
        match self {
            Piece::Block { .. } => 1,
            Piece::Repeat { count, body, .. } => count.saturating_mul(body.blocks),
        }
    }
}

impl Layout {
    /// `len` bytes at `off` (empty when `len == 0`).
    pub fn block(off: isize, len: usize) -> Layout {
        let mut l = Layout::default();
        l.push(Piece::Block { off, len });
        l
    }

    /// `Some((off, len))` when the layout is one contiguous block.
    #[inline]
    pub fn single_block(&self) -> Option<(isize, usize)> {
        match self.pieces.as_slice() {
            [Piece::Block { off, len }] => Some((*off, *len)),
            _ => None,
        }
    }

    /// Appends a piece, merging it into the previous block when adjacent.
    /// Sizes never overflow here: callers check them through `Span` first.
    fn push(&mut self, piece: Piece) {
        let size = piece.size();
        if size == 0 {
            return;
        }
        if let (Some(Piece::Block { off, len }), Piece::Block { off: noff, len: nlen }) = (self.pieces.last_mut(), &piece) {
            if off.checked_add(*len as isize) == Some(*noff) {
                *len += *nlen;
                self.size += nlen;
                return;
            }
        }
        self.size += size;
        self.blocks = self.blocks.saturating_add(piece.blocks());
        self.pieces.push(piece);
    }

    /// Appends `other` moved by `d` bytes.
    pub fn append(&mut self, other: &Layout, d: isize) -> Result<(), DatatypeError> {
        for p in &other.pieces {
            self.push(p.shifted(d)?);
        }
        Ok(())
    }

    /// `n` copies, copy `i` moved by `i * stride` bytes.
    pub fn repeat(&self, n: usize, stride: isize) -> Result<Layout, DatatypeError> {
        if n == 0 || self.size == 0 {
            return Ok(Layout::default());
        }
        if n == 1 {
            return Ok(self.clone());
        }
        if let Some((off, len)) = self.single_block() {
            if isize::try_from(len) == Ok(stride) {
                let total = len.checked_mul(n).ok_or_else(overflow)?;
                return Ok(Layout::block(off, total));
            }
        }
        let mut out = Layout::default();
        if self.blocks.saturating_mul(n) <= FLAT_LIMIT {
            let mut d: isize = 0;
            for i in 0..n {
                if i > 0 {
                    d = d.checked_add(stride).ok_or_else(overflow)?;
                }
                out.append(self, d)?;
            }
        } else {
            out.push(Piece::Repeat { off: 0, count: n, stride, body: Arc::new(self.clone()) });
        }
        Ok(out)
    }

    /// Calls `f(addr, len)` for every run of packed bytes `[lo, hi)` of this
    /// layout placed at `base`, in order. Requires `lo < hi <= size`.
    /// Addresses wrap instead of overflowing: callers only dereference them
    /// under the `pack`/`unpack` safety contract.
    pub fn walk<F: FnMut(isize, usize)>(&self, base: isize, lo: usize, hi: usize, f: &mut F) {
        let mut pos = 0usize;
        for p in &self.pieces {
            if pos >= hi {
                return;
            }
            let psize = p.size();
            let end = pos + psize;
            if end > lo {
                let s = lo.saturating_sub(pos);
                let e = (hi - pos).min(psize);
                match p {
                    Piece::Block { off, .. } => f(base.wrapping_add(*off).wrapping_add(s as isize), e - s),
                    Piece::Repeat { off, count: _, stride, body } => walk_repeat(base.wrapping_add(*off), *stride, body, s, e, f),
                }
            }
            pos = end;
        }
    }

    /// `walk` over the whole layout, without range checks.
    fn walk_all<F: FnMut(isize, usize)>(&self, base: isize, f: &mut F) {
        for p in &self.pieces {
            match p {
                Piece::Block { off, len } => f(base.wrapping_add(*off), *len),
                Piece::Repeat { off, count, stride, body } => {
                    let mut b = base.wrapping_add(*off);
                    if let Some((boff, blen)) = body.single_block() {
                        // The hot loop of strided types: one copy per block.
                        for _ in 0..*count {
                            f(b.wrapping_add(boff), blen);
                            b = b.wrapping_add(*stride);
                        }
                    } else {
                        for _ in 0..*count {
                            body.walk_all(b, f);
                            b = b.wrapping_add(*stride);
                        }
                    }
                }
            }
        }
    }
}

/// Walks packed bytes `[lo, hi)` of copies of `body` placed every `stride`
/// bytes from `base`. Requires `lo < hi` and `body.size > 0`; `hi` must not
/// exceed the packed size of the copies that exist.
pub(crate) fn walk_repeat<F: FnMut(isize, usize)>(base: isize, stride: isize, body: &Layout, lo: usize, hi: usize, f: &mut F) {
    let bs = body.size;
    let (first, last) = (lo / bs, (hi - 1) / bs);
    let single = body.single_block();
    let mut b = base.wrapping_add((first as isize).wrapping_mul(stride));
    for i in first..=last {
        let start = i * bs;
        let (s, e) = (lo.saturating_sub(start), (hi - start).min(bs));
        match single {
            Some((off, len)) if s == 0 && e == bs => f(b.wrapping_add(off), len),
            _ if s == 0 && e == bs => body.walk_all(b, f),
            _ => body.walk(b, s, e, f),
        }
        b = b.wrapping_add(stride);
    }
}
