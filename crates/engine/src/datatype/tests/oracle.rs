//! A deliberately naive model to check the engine against: it expands a
//! datatype's typemap entry by entry from its decoded constructor arguments
//! (`contents`), with none of the engine's merging or repeat nodes.

use crate::datatype::{BasicType, Combiner, Datatype};

/// Typemap entries of one element: (displacement, basic type) in order.
pub fn entries(t: &Datatype) -> Vec<(isize, BasicType)> {
    let (ints, addrs, types) = t.contents();
    let n = |i: usize| ints[i] as usize;
    let mut out = Vec::new();
    let mut put = |d: isize, old: &Datatype, copies: usize| {
        for j in 0..copies {
            let at = d + j as isize * old.extent();
            out.extend(entries(old).into_iter().map(|(o, b)| (o + at, b)));
        }
    };
    match t.combiner() {
        Combiner::Named | Combiner::F90Real | Combiner::F90Complex | Combiner::F90Integer => {
            return vec![(0, t.basic_kind().expect("named types are basic"))]
        }
        // Recorded over simpler constructors (the C API builds them): not decoded here.
        Combiner::Subarray | Combiner::Darray => unreachable!("the engine makes no subarray or darray itself"),
        Combiner::Dup | Combiner::Resized => put(0, &types[0], 1),
        Combiner::Contiguous => put(0, &types[0], n(0)),
        Combiner::Vector => {
            for i in 0..n(0) {
                put(i as isize * ints[2] as isize * types[0].extent(), &types[0], n(1));
            }
        }
        Combiner::Hvector => {
            for i in 0..n(0) {
                put(i as isize * addrs[0], &types[0], n(1));
            }
        }
        Combiner::Indexed => {
            let k = n(0);
            for i in 0..k {
                put(ints[1 + k + i] as isize * types[0].extent(), &types[0], n(1 + i));
            }
        }
        Combiner::Hindexed => {
            for (i, &d) in addrs.iter().enumerate() {
                put(d, &types[0], n(1 + i));
            }
        }
        Combiner::IndexedBlock => {
            for i in 0..n(0) {
                put(ints[2 + i] as isize * types[0].extent(), &types[0], n(1));
            }
        }
        Combiner::HindexedBlock => {
            for &d in &addrs {
                put(d, &types[0], n(1));
            }
        }
        Combiner::Struct => {
            for i in 0..n(0) {
                put(addrs[i], &types[i], n(1 + i));
            }
        }
    }
    out
}

/// Data runs (address offset, length) of `count` elements, one per basic
/// element (a pair type gives two), in typemap order.
pub fn runs(t: &Datatype, count: usize) -> Vec<(isize, usize)> {
    let one = entries(t);
    let mut out = Vec::new();
    for i in 0..count {
        let at = i as isize * t.extent();
        for &(d, b) in &one {
            match b.pair_parts() {
                Some((v, x, off)) => {
                    out.push((at + d, v.size()));
                    out.push((at + d + off as isize, x.size()));
                }
                None => out.push((at + d, b.size())),
            }
        }
    }
    out
}

/// True when no data byte of `count` elements is described twice.
pub fn disjoint(t: &Datatype, count: usize) -> bool {
    let mut r = runs(t, count);
    r.sort();
    r.windows(2).all(|w| w[0].0 + w[0].1 as isize <= w[1].0)
}

/// A byte buffer covering every data byte of `count` elements, with the
/// element origin possibly inside it (negative displacements).
pub struct Buf {
    pub mem: Vec<u8>,
    origin: usize,
}

impl Buf {
    pub fn for_type(t: &Datatype, count: usize, fill: impl Fn(usize) -> u8) -> Buf {
        let r = runs(t, count);
        let lo = r.iter().map(|&(d, _)| d).min().unwrap_or(0).min(0);
        let hi = r.iter().map(|&(d, l)| d + l as isize).max().unwrap_or(0).max(0);
        let mem = (0..(hi - lo) as usize).map(fill).collect();
        Buf { mem, origin: (-lo) as usize }
    }

    pub fn base(&self) -> *const u8 {
        self.mem.as_ptr().wrapping_add(self.origin)
    }

    pub fn base_mut(&mut self) -> *mut u8 {
        self.mem.as_mut_ptr().wrapping_add(self.origin)
    }

    /// The bytes at one run.
    pub fn at(&self, d: isize, len: usize) -> &[u8] {
        let s = (self.origin as isize + d) as usize;
        &self.mem[s..s + len]
    }
}

/// What packing `count` elements from `buf` must produce.
pub fn reference_pack(t: &Datatype, count: usize, buf: &Buf) -> Vec<u8> {
    runs(t, count).into_iter().flat_map(|(d, l)| buf.at(d, l).to_vec()).collect()
}

/// MPI_Get_elements by walking the runs one by one.
pub fn reference_elements(t: &Datatype, bytes: usize) -> Option<usize> {
    if t.size() == 0 {
        return Some(0);
    }
    let count = bytes / t.size() + 1;
    let (mut left, mut n) = (bytes, 0);
    for (_, l) in runs(t, count) {
        if left == 0 {
            break;
        }
        if left < l {
            return None;
        }
        left -= l;
        n += 1;
    }
    Some(n)
}

/// A pattern with no short period, so misplaced bytes are noticed.
pub fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(131) ^ (i >> 7)).wrapping_add(1) as u8
}

pub fn int() -> Datatype {
    Datatype::basic(BasicType::Int)
}

pub fn double() -> Datatype {
    Datatype::basic(BasicType::Double)
}

pub fn char_() -> Datatype {
    Datatype::basic(BasicType::Char)
}

/// The standard's running example `{(double, 0), (char, 8)}`, extent 16.
pub fn double_char() -> Datatype {
    Datatype::create_struct(&[1, 1], &[0, 8], &[double(), char_()]).expect("valid struct")
}
