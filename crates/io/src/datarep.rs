//! User-defined data representations (MPI-4.0 §14.5.3): a [`Datarep`]
//! says how many bytes each predefined type takes in the file and converts
//! data items between memory and the file. The C API implements it over
//! the program's `MPI_Register_datarep` callbacks; this crate never calls C.
//!
//! In such a representation the view's etype and filetype are laid out
//! with the file sizes ([`file_type`]): every predefined type becomes
//! bytes of its file extent, displacements counted in elements (vector
//! strides, indexed displacements, subarrays, darrays: the standard's
//! "portable" types) are scaled with it, byte displacements (hvector,
//! hindexed, struct, resized) are kept as given, and there is no alignment
//! padding ("byte alignment for all types"). A memory buffer of `count` x
//! `dt` is a stream of data items, one per predefined element of its type
//! signature, each taking its file extent in the view's stream
//! ([`Items`]); it is converted in [`pieces`](Items::pieces) of at most
//! [`PIECE`] file bytes, `position` counting items from the buffer start.

use wanmpi_engine::datatype::{BasicType, Combiner, Datatype, DatatypeError};
use wanmpi_engine::{error::err, ErrorClass, MpiError, MpiResult};

/// File bytes converted per call of a conversion function: large accesses
/// cost this much staging memory, not their size.
pub const PIECE: usize = 8 << 20;

/// A data representation registered by the program.
pub trait Datarep: Send + Sync {
    /// Its name, as MPI_File_get_view reports it.
    fn name(&self) -> &str;

    /// Bytes one `basic` element takes in the file (the
    /// `dtype_file_extent_fn`).
    fn file_extent(&self, basic: BasicType) -> MpiResult<usize>;

    /// Whether reads convert (false: MPI_CONVERSION_FN_NULL, the file
    /// bytes are the memory bytes).
    fn converts_reads(&self) -> bool;

    /// Whether writes convert.
    fn converts_writes(&self) -> bool;

    /// The `read_conversion_fn`: `count` items in file form in `filebuf`
    /// into `userbuf` (`dt` tiled), from item `position` on.
    ///
    /// # Safety
    /// `userbuf` must hold items `position..position + count` of `dt` tiled.
    unsafe fn read(&self, userbuf: *mut u8, dt: &Datatype, count: usize, filebuf: &[u8], position: u64) -> MpiResult<()>;

    /// The `write_conversion_fn`: items `position..position + count` of
    /// `userbuf` (`dt` tiled) into `filebuf`, in file form.
    ///
    /// # Safety
    /// As for [`Datarep::read`].
    unsafe fn write(&self, userbuf: *const u8, dt: &Datatype, count: usize, filebuf: &mut [u8], position: u64) -> MpiResult<()>;
}

/// The file extent of `b` in `rep`, checked to be positive.
fn extent_of(rep: &dyn Datarep, b: BasicType) -> MpiResult<usize> {
    let e = rep.file_extent(b)?;
    if e == 0 {
        return err(ErrorClass::Conversion, format!("data representation \"{}\" gives {b:?} a file extent of 0 bytes", rep.name()));
    }
    Ok(e)
}

fn dt_err(e: DatatypeError) -> MpiError {
    MpiError::new(ErrorClass::Type, format!("the type in the file representation: {e}"))
}

fn ints_as<T: TryFrom<i64>>(v: &[i64]) -> MpiResult<Vec<T>> {
    v.iter().map(|&i| T::try_from(i).map_err(|_| MpiError::new(ErrorClass::Type, format!("constructor argument {i} out of range")))).collect()
}

/// `t` as laid out in the file in `rep` (see the module doc).
pub fn file_type(t: &Datatype, rep: &dyn Datarep) -> MpiResult<Datatype> {
    let (ints, addrs, types) = t.contents();
    let one = |i: usize| ints_as::<usize>(&ints[i..i + 1]).map(|v| v[0]);
    let old = || file_type(&types[0], rep);
    let built = match t.combiner() {
        Combiner::Named | Combiner::F90Real | Combiner::F90Complex | Combiner::F90Integer => {
            let b = t.basic_kind().ok_or_else(|| MpiError::new(ErrorClass::Type, format!("{} has no predefined type", t.name())))?;
            Datatype::contiguous(extent_of(rep, b)?, &Datatype::basic(BasicType::Byte))
        }
        Combiner::Dup => return old(),
        Combiner::Contiguous => Datatype::contiguous(one(0)?, &old()?),
        Combiner::Vector => Datatype::vector(one(0)?, one(1)?, ints[2] as isize, &old()?),
        Combiner::Hvector => Datatype::hvector(one(0)?, one(1)?, addrs[0], &old()?),
        Combiner::Indexed => {
            let n = one(0)?;
            Datatype::indexed(&ints_as(&ints[1..1 + n])?, &ints_as(&ints[1 + n..1 + 2 * n])?, &old()?)
        }
        Combiner::Hindexed => Datatype::hindexed(&ints_as(&ints[1..])?, &addrs, &old()?),
        Combiner::IndexedBlock => Datatype::indexed_block(one(1)?, &ints_as(&ints[2..])?, &old()?),
        Combiner::HindexedBlock => Datatype::hindexed_block(one(1)?, &addrs, &old()?),
        Combiner::Struct => {
            let olds = types.iter().map(|o| file_type(o, rep)).collect::<MpiResult<Vec<_>>>()?;
            Datatype::create_struct(&ints_as(&ints[1..])?, &addrs, &olds)
        }
        Combiner::Resized => Datatype::resized(&old()?, addrs[0], addrs[1]),
        Combiner::Subarray | Combiner::Darray => return scaled(t, &types[0], &old()?),
    };
    let built = built.map_err(dt_err)?;
    built.commit();
    Ok(built)
}

/// A subarray or darray `t` of `old` in the file, where `old` takes
/// `new_old`: both place whole copies of `old` at multiples of its extent,
/// so each copy moves to the same multiple of `new_old`'s extent.
fn scaled(t: &Datatype, old: &Datatype, new_old: &Datatype) -> MpiResult<Datatype> {
    let (e, e2) = (old.extent(), new_old.extent());
    if e <= 0 || old.size() == 0 {
        return err(ErrorClass::Type, format!("{} is made of {}, which has no extent or data", t.name(), old.name()));
    }
    let scale = |x: isize| x.div_euclid(e) * e2 + x.rem_euclid(e);
    // Where each copy of `old` starts: its first data byte, less where
    // that byte lies in one `old`.
    let mut first = 0isize;
    old.walk_elements(1, 0, 1, &mut |a, _| first = a);
    let s = old.size();
    let (mut pos, mut copies): (usize, Vec<(isize, usize)>) = (0, Vec::new());
    t.walk_elements(1, 0, t.size(), &mut |addr, n| {
        let mut p = pos.div_ceil(s) * s;
        while p < pos + n {
            let origin = scale(addr + (p - pos) as isize - first);
            match copies.last_mut() {
                Some((o, k)) if *o + *k as isize * e2 == origin => *k += 1,
                _ => copies.push((origin, 1)),
            }
            p += s;
        }
        pos += n;
    });
    let (lens, displs): (Vec<usize>, Vec<isize>) = copies.iter().map(|&(o, k)| (k, o)).unzip();
    let placed = Datatype::hindexed(&lens, &displs, new_old).map_err(dt_err)?;
    let built = Datatype::resized(&placed, scale(t.lb()), scale(t.extent())).map_err(dt_err)?;
    built.commit();
    Ok(built)
}

/// The data items of a memory type: runs of one predefined type, with
/// their memory and file sizes, and per-element totals.
pub struct Items {
    runs: Vec<Run>,
    /// Items, memory bytes and file bytes of one element.
    pub per: Span,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Span {
    pub items: u64,
    pub mem: usize,
    pub file: usize,
}

#[derive(Debug, Clone, Copy)]
struct Run {
    n: usize,
    mem: usize,
    file: usize,
}

impl Items {
    pub fn of(dt: &Datatype, rep: &dyn Datarep) -> MpiResult<Items> {
        let mut raw: Vec<(BasicType, usize)> = Vec::new();
        dt.for_each_basic_run(&mut |b, n| match raw.last_mut() {
            Some((t, k)) if *t == b => *k += n,
            _ => raw.push((b, n)),
        });
        let mut known: Vec<(BasicType, usize)> = Vec::new();
        let mut runs = Vec::with_capacity(raw.len());
        let mut per = Span::default();
        for (b, n) in raw {
            let file = match known.iter().find(|k| k.0 == b) {
                Some(k) => k.1,
                None => {
                    let f = extent_of(rep, b)?;
                    known.push((b, f));
                    f
                }
            };
            runs.push(Run { n, mem: b.size(), file });
            per.items += n as u64;
            per.mem += n * b.size();
            per.file += n * file;
        }
        Ok(Items { runs, per })
    }

    /// Whether every item takes as many bytes in the file as in memory
    /// (what MPI_CONVERSION_FN_NULL needs: bytes copied as they are).
    pub fn same_sizes(&self) -> bool {
        self.runs.iter().all(|r| r.mem == r.file)
    }

    /// File bytes of `count` elements.
    pub fn file_len(&self, count: usize) -> MpiResult<usize> {
        self.per
            .file
            .checked_mul(count)
            .ok_or_else(|| MpiError::new(ErrorClass::Count, format!("{count} elements of {} file bytes overflow", self.per.file)))
    }

    /// `count` elements cut into pieces of at most [`PIECE`] file bytes
    /// (one item larger than that is a piece of its own), in order; each
    /// piece's span, from the returned start (items, memory and file bytes
    /// before it).
    pub fn pieces(&self, count: usize) -> Vec<(Span, Span)> {
        let mut out = Vec::new();
        let (mut at, mut cur) = (Span::default(), Span::default());
        let flush = |at: &mut Span, cur: &mut Span, out: &mut Vec<(Span, Span)>| {
            if cur.items > 0 {
                out.push((*at, *cur));
                at.items += cur.items;
                at.mem += cur.mem;
                at.file += cur.file;
                *cur = Span::default();
            }
        };
        let mut copy = 0;
        while copy < count {
            // Whole elements at once while they fit.
            if self.per.file > 0 && self.per.file <= PIECE {
                let fit = ((PIECE - cur.file) / self.per.file).min(count - copy);
                if fit > 0 {
                    cur.items += self.per.items * fit as u64;
                    cur.mem += self.per.mem * fit;
                    cur.file += self.per.file * fit;
                    copy += fit;
                    continue;
                }
                if cur.items > 0 {
                    flush(&mut at, &mut cur, &mut out);
                    continue;
                }
            }
            for r in &self.runs {
                let mut left = r.n;
                while left > 0 {
                    let room = (PIECE.saturating_sub(cur.file) / r.file).min(left);
                    if room == 0 {
                        if cur.items == 0 {
                            // One item beyond PIECE: alone.
                            cur = Span { items: 1, mem: r.mem, file: r.file };
                            left -= 1;
                        }
                        flush(&mut at, &mut cur, &mut out);
                        continue;
                    }
                    cur.items += room as u64;
                    cur.mem += room * r.mem;
                    cur.file += room * r.file;
                    left -= room;
                }
            }
            copy += 1;
        }
        flush(&mut at, &mut cur, &mut out);
        out
    }

    /// The whole items, with their memory bytes, in the first `file`
    /// bytes of a piece starting at item `first` (a read that met the end
    /// of the file).
    pub fn whole_in(&self, first: u64, file: usize) -> Span {
        let mut got = Span::default();
        if self.per.items == 0 {
            return got;
        }
        let whole = (file / self.per.file.max(1)) as u64;
        // Skip to `first`'s place in its element.
        let mut skip = first % self.per.items;
        let mut left = file;
        if skip == 0 && whole > 0 {
            got = Span { items: whole * self.per.items, mem: whole as usize * self.per.mem, file: whole as usize * self.per.file };
            left -= got.file;
        }
        loop {
            for r in &self.runs {
                let mut n = r.n as u64;
                if skip > 0 {
                    let s = skip.min(n);
                    skip -= s;
                    n -= s;
                }
                let k = (n as usize).min(left / r.file);
                got.items += k as u64;
                got.mem += k * r.mem;
                got.file += k * r.file;
                left -= k * r.file;
                if (k as u64) < n {
                    return got;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// File form: every type takes 8 bytes; no conversion is done here.
    struct Wide;
    impl Datarep for Wide {
        fn name(&self) -> &str {
            "wide"
        }
        fn file_extent(&self, _: BasicType) -> MpiResult<usize> {
            Ok(8)
        }
        fn converts_reads(&self) -> bool {
            false
        }
        fn converts_writes(&self) -> bool {
            false
        }
        unsafe fn read(&self, _: *mut u8, _: &Datatype, _: usize, _: &[u8], _: u64) -> MpiResult<()> {
            Ok(())
        }
        unsafe fn write(&self, _: *const u8, _: &Datatype, _: usize, _: &mut [u8], _: u64) -> MpiResult<()> {
            Ok(())
        }
    }

    fn int() -> Datatype {
        Datatype::basic(BasicType::Int)
    }

    fn blocks(t: &Datatype) -> Vec<(isize, usize)> {
        let mut v = Vec::new();
        t.walk_elements(1, 0, t.size(), &mut |a, n| v.push((a, n)));
        v
    }

    #[test]
    fn portable_types_scale_byte_displacements_do_not() {
        let v = Datatype::vector(2, 1, 3, &int()).unwrap();
        let f = file_type(&v, &Wide).unwrap();
        assert_eq!((f.size(), f.extent()), (16, 32));
        assert_eq!(blocks(&f), vec![(0, 8), (24, 8)]);
        let h = Datatype::hvector(2, 1, 12, &int()).unwrap();
        assert_eq!(blocks(&file_type(&h, &Wide).unwrap()), vec![(0, 8), (12, 8)]);
        let r = Datatype::resized(&int(), 0, 20).unwrap();
        assert_eq!(file_type(&r, &Wide).unwrap().extent(), 20);
        // A struct { char; double } has no padding in the file.
        let s = Datatype::create_struct(&[1, 1], &[0, 8], &[Datatype::basic(BasicType::Char), Datatype::basic(BasicType::Double)]).unwrap();
        let f = file_type(&s, &Wide).unwrap();
        assert_eq!((f.size(), f.extent()), (16, 16));
    }

    #[test]
    fn subarray_copies_move_by_whole_elements() {
        // Elements 1 and 2 of each row of a 2 x 4 array, as a subarray is
        // built (hvector of contiguous, placed, resized), relabelled.
        let row = Datatype::contiguous(2, &int()).unwrap();
        let t = Datatype::hvector(2, 1, 16, &row).unwrap();
        let t = Datatype::hindexed_block(1, &[4], &t).unwrap();
        let t = Datatype::resized(&t, 0, 32).unwrap().as_subarray(vec![2, 2, 4, 2, 2, 0, 1, 0], &int());
        let f = file_type(&t, &Wide).unwrap();
        assert_eq!(blocks(&f), vec![(8, 16), (40, 16)]);
        assert_eq!(f.extent(), 64);
    }

    #[test]
    fn items_and_pieces() {
        let s = Datatype::create_struct(&[1, 2], &[0, 8], &[Datatype::basic(BasicType::Char), Datatype::basic(BasicType::Double)]).unwrap();
        let it = Items::of(&s, &Wide).unwrap();
        assert_eq!(it.per, Span { items: 3, mem: 17, file: 24 });
        assert!(!it.same_sizes());
        let p = it.pieces(10);
        assert_eq!(p, vec![(Span::default(), Span { items: 30, mem: 170, file: 240 })]);
        // 9 whole items and 5 bytes of the tenth, from item 1 (a double).
        assert_eq!(it.whole_in(1, 77), Span { items: 9, mem: 8 + 8 + 1 + 8 + 8 + 1 + 8 + 8 + 1, file: 72 });
        let big = PIECE / 8 * 3 + 5;
        let p = Items::of(&int(), &Wide).unwrap().pieces(big);
        assert_eq!(p.len(), 4);
        assert_eq!(p[3].0, Span { items: (PIECE / 8 * 3) as u64, mem: PIECE / 2 * 3, file: PIECE * 3 });
        assert_eq!(p[3].1.items, 5);
    }
}
