//! File views (MPI-4.0 §14.3): a displacement, an etype and a filetype
//! tiled from the displacement on. A view turns a position in its data
//! stream (etypes the process can see) into runs of file bytes: the
//! filetype's data bytes, flattened by the engine's datatype walk, shifted
//! by the displacement and by whole filetype extents.

use std::sync::Arc;

use wanmpi_engine::datatype::{BasicType, Datatype};
use wanmpi_engine::{error::err, ErrorClass, MpiResult};

use crate::datarep::{file_type, Datarep, Items};
use crate::external32::{self, External32};

/// The predefined data representations: wanmpi's own ("native", and
/// "internal" which MPI lets an implementation make native), and
/// "external32", built in as a [`Datarep`] (`external32.rs`): laid out and
/// converted as the standard says, C long and long double included.
/// Besides these, the representations the program registers.
pub const DATAREPS: [&str; 3] = ["native", "internal", "external32"];

#[derive(Clone)]
pub struct View {
    pub disp: u64,
    /// The etype and filetype as the program gave them.
    pub etype: Datatype,
    pub filetype: Datatype,
    pub datarep: String,
    /// A registered representation's conversions, or `None`.
    pub user: Option<Arc<dyn Datarep>>,
    /// The etype and filetype as laid out in the file: themselves, except
    /// in a registered representation (`datarep::file_type`).
    file_etype: Datatype,
    file_filetype: Datatype,
}

impl Default for View {
    /// The view of a newly opened file: every byte, from byte 0 (§14.3).
    fn default() -> View {
        let byte = Datatype::basic(BasicType::Byte);
        View {
            disp: 0,
            etype: byte.clone(),
            filetype: byte.clone(),
            datarep: "native".into(),
            user: None,
            file_etype: byte.clone(),
            file_filetype: byte,
        }
    }
}

impl View {
    /// A view, checked as MPI_File_set_view must; `read_only` files may
    /// have etypes and filetypes that overlap themselves (as in MPICH).
    /// `user` is the registered representation named `datarep` when that
    /// is not a predefined one.
    pub fn new(disp: i64, etype: Datatype, filetype: Datatype, datarep: &str, user: Option<Arc<dyn Datarep>>, read_only: bool) -> MpiResult<View> {
        let disp = u64::try_from(disp).or_else(|_| err(ErrorClass::Arg, format!("displacement {disp} is negative")))?;
        let user: Option<Arc<dyn Datarep>> = match datarep {
            external32::NAME => Some(Arc::new(External32)),
            _ if DATAREPS.contains(&datarep) => None,
            _ => user,
        };
        if !DATAREPS.contains(&datarep) && user.as_ref().is_none_or(|u| u.name() != datarep) {
            let why = "it is neither \"native\", \"internal\", \"external32\" nor registered with MPI_Register_datarep";
            return err(ErrorClass::UnsupportedDatarep, format!("data representation \"{datarep}\": {why}"));
        }
        for (what, t) in [("etype", &etype), ("filetype", &filetype)] {
            if t.check_committed().is_err() {
                return err(ErrorClass::Type, format!("the {what} {} is not committed", t.name()));
            }
        }
        let (file_etype, file_filetype) = match &user {
            Some(u) => (file_type(&etype, &**u)?, file_type(&filetype, &**u)?),
            None => (etype.clone(), filetype.clone()),
        };
        let (esize, fsize) = (file_etype.size(), file_filetype.size());
        if esize == 0 {
            return err(ErrorClass::Type, format!("the etype {} has no data", etype.name()));
        }
        if fsize == 0 || !fsize.is_multiple_of(esize) {
            return err(ErrorClass::Type, format!("the filetype {} ({fsize} bytes) is not made of whole etypes ({esize} bytes)", filetype.name()));
        }
        if file_filetype.extent() <= 0 {
            return err(ErrorClass::Type, format!("the filetype {} needs a positive extent", filetype.name()));
        }
        for (what, t, ft) in [("etype", &etype, &file_etype), ("filetype", &filetype, &file_filetype)] {
            if !in_file_order(ft, read_only) {
                // MPICH's class for this: MPI_ERR_IO.
                let rule = if read_only { "non-decreasing" } else { "increasing, without overlaps" };
                return err(ErrorClass::Io, format!("the {what} {}'s displacements must be non-negative and {rule}", t.name()));
            }
        }
        Ok(View { disp, etype, filetype, datarep: datarep.into(), user, file_etype, file_filetype })
    }

    /// Bytes per etype in the file.
    pub fn esize(&self) -> usize {
        self.file_etype.size()
    }

    /// Bytes that `count` x `dt` take in the view's stream: the packed
    /// size, or in a registered representation the items' file extents.
    pub fn stream_len(&self, dt: &Datatype, count: usize) -> MpiResult<usize> {
        match &self.user {
            Some(u) => Items::of(dt, &**u)?.file_len(count),
            None => Ok(dt.packed_size(count)),
        }
    }

    /// MPI_File_get_type_extent: the extent of `dt` in the file.
    pub fn type_extent(&self, dt: &Datatype) -> MpiResult<isize> {
        match &self.user {
            Some(u) => Ok(file_type(dt, &**u)?.extent()),
            None => Ok(dt.extent()),
        }
    }

    /// The file runs `(offset, len)` of data bytes `[pos, pos + len)` of
    /// the view's stream, in stream order, neighbours merged.
    pub fn runs(&self, pos: u64, len: usize) -> MpiResult<Vec<(u64, usize)>> {
        let mut out: Vec<(u64, usize)> = Vec::new();
        if len == 0 {
            return Ok(out);
        }
        let too_far =
            || wanmpi_engine::MpiError::new(ErrorClass::Arg, format!("position {pos} + {len} bytes lies beyond what a file offset can hold"));
        let lo = usize::try_from(pos).map_err(|_| too_far())?;
        let hi = lo.checked_add(len).ok_or_else(too_far)?;
        let tiles = hi.div_ceil(self.file_filetype.size());
        let mut bad = false;
        self.file_filetype.walk_elements(tiles, lo, hi, &mut |addr, n| {
            let Some(off) = u64::try_from(addr).ok().and_then(|a| a.checked_add(self.disp)) else {
                bad = true;
                return;
            };
            match out.last_mut() {
                Some((o, l)) if *o + *l as u64 == off => *l += n,
                _ => out.push((off, n)),
            }
        });
        if bad {
            return Err(too_far());
        }
        Ok(out)
    }

    /// MPI_File_get_byte_offset: where etype `offset` of the view lies.
    pub fn byte_offset(&self, offset: i64) -> MpiResult<u64> {
        let pos = self.data_pos(offset)?;
        Ok(self.runs(pos, 1)?.first().map_or(self.disp, |r| r.0))
    }

    /// The etype just past the last one of the view that lies, at least
    /// in part, in a file of `size` bytes (where MPI_SEEK_END counts from).
    pub fn end(&self, size: u64) -> i64 {
        let Some(rel) = size.checked_sub(self.disp) else { return 0 };
        let (extent, fsize) = (self.file_filetype.extent() as u64, self.file_filetype.size());
        let (tiles, rem) = (rel / extent, rel % extent);
        let mut inside = 0u64;
        self.file_filetype.walk_elements(1, 0, fsize, &mut |addr, n| {
            let a = addr.max(0) as u64;
            if a < rem {
                inside += (n as u64).min(rem - a);
            }
        });
        let bytes = tiles.saturating_mul(fsize as u64).saturating_add(inside);
        i64::try_from(bytes.div_ceil(self.esize() as u64)).unwrap_or(i64::MAX)
    }

    /// The stream byte of etype `offset` (MPI_ERR_ARG when negative).
    pub fn data_pos(&self, offset: i64) -> MpiResult<u64> {
        u64::try_from(offset)
            .ok()
            .and_then(|o| o.checked_mul(self.esize() as u64))
            .map_or_else(|| err(ErrorClass::Arg, format!("offset {offset} is negative or too large")), Ok)
    }
}

/// Whether the data of one `t` lies at non-negative, non-decreasing
/// places (MPI-4.0 §14.3), and unless `overlaps_ok` without overlaps
/// (MPICH refuses them where the file can be written).
fn in_file_order(t: &Datatype, overlaps_ok: bool) -> bool {
    let (mut start, mut end, mut ok) = (0isize, 0isize, true);
    t.walk_elements(1, 0, t.size(), &mut |addr, n| {
        ok &= addr >= if overlaps_ok { start } else { end };
        start = addr;
        end = addr.saturating_add(n as isize);
    });
    ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int() -> Datatype {
        Datatype::basic(BasicType::Int)
    }

    #[test]
    fn byte_view_is_the_file() {
        let v = View::default();
        assert_eq!(v.runs(10, 5).unwrap(), vec![(10, 5)]);
    }

    #[test]
    fn vector_filetype_tiles_from_the_displacement() {
        // 2 ints of every 4, starting at byte 100: a rank's half of an
        // interleaved file.
        let ft = Datatype::vector(1, 2, 4, &int()).unwrap();
        let ft = Datatype::resized(&ft, 0, 16).unwrap();
        ft.commit();
        let v = View::new(100, int(), ft, "native", None, false).unwrap();
        assert_eq!(v.runs(0, 16).unwrap(), vec![(100, 8), (116, 8)]);
        assert_eq!(v.runs(4, 8).unwrap(), vec![(104, 4), (116, 4)]);
        assert_eq!(v.byte_offset(2).unwrap(), 116);
        // A file of 120 bytes holds etypes 0, 1 and 2 of this view.
        assert_eq!(v.end(120), 3);
        assert_eq!(v.end(50), 0);
    }

    #[test]
    fn bad_views() {
        let three = Datatype::contiguous(3, &Datatype::basic(BasicType::Byte)).unwrap();
        three.commit();
        assert_eq!(View::new(0, int(), three, "native", None, false).err().unwrap().class, ErrorClass::Type);
        let long = Datatype::basic(BasicType::Long);
        // A C long takes 4 bytes in an external32 file.
        assert_eq!(View::new(0, long.clone(), long, "external32", None, false).unwrap().esize(), 4);
        assert!(View::new(0, int(), int(), "external32", None, false).is_ok());
        assert_eq!(View::new(-1, int(), int(), "native", None, false).err().unwrap().class, ErrorClass::Arg);
        for (lens, displs) in [([1, 1], [-2, 2]), ([1, 1], [3, 0]), ([3, 1], [0, 1])] {
            let t = Datatype::indexed(&lens, &displs, &int()).unwrap();
            t.commit();
            assert_eq!(View::new(0, int(), t.clone(), "native", None, false).err().unwrap().class, ErrorClass::Io, "{displs:?}");
            assert_eq!(View::new(0, int(), t, "native", None, true).is_ok(), displs == [0, 1], "{displs:?} read-only");
        }
    }
}
