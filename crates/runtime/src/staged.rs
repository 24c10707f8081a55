//! User buffers seen as bytes for the collective algorithms: contiguous
//! datatypes are used in place, others are packed into (or unpacked from) a
//! staging buffer. The v-variants stage each rank's block separately.

use wanmpi_engine::datatype::{BasicType, Combiner, Datatype, OpClass};
use wanmpi_engine::{error::err, ErrorClass, MpiError, MpiResult};

/// A user buffer of `count` elements of `dt`, as bytes.
pub struct Staged {
    ptr: *mut u8,
    count: usize,
    dt: Datatype,
    /// `None`: the bytes are the user's memory, used in place.
    staging: Option<Vec<u8>>,
    len: usize,
}

impl Staged {
    /// For reading: packs a non-contiguous buffer.
    ///
    /// # Safety
    /// `ptr` must hold `count` elements of `dt`.
    pub unsafe fn input(ptr: *const u8, count: usize, dt: &Datatype) -> MpiResult<Staged> {
        let len = packed_len(count, dt)?;
        let staging = (!dt.is_contiguous()).then(|| {
            let mut v = Vec::with_capacity(len);
            dt.pack(ptr, count, &mut v);
            v
        });
        Ok(Staged { ptr: ptr as *mut u8, count, dt: dt.clone(), staging, len })
    }

    /// For writing (and reading its current content, for in-place calls).
    ///
    /// # Safety
    /// `ptr` must have room for `count` elements of `dt` until `finish`.
    pub unsafe fn output(ptr: *mut u8, count: usize, dt: &Datatype) -> MpiResult<Staged> {
        let mut s = Staged::input(ptr, count, dt)?;
        s.ptr = ptr;
        Ok(s)
    }

    /// `len` bytes at `ptr`, used in place (predefined types in reductions,
    /// whose operations walk the C layout including padding).
    ///
    /// # Safety
    /// `ptr` must be valid for `len` bytes until `finish`.
    pub unsafe fn raw(ptr: *mut u8, len: usize) -> Staged {
        Staged { ptr, count: 0, dt: Datatype::basic(BasicType::Byte), staging: None, len }
    }

    pub fn bytes(&self) -> &[u8] {
        view(&self.staging, self.ptr, &self.dt, self.len)
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        view_mut(&mut self.staging, self.ptr, &self.dt, self.len)
    }

    /// Writes staged bytes back into the user's layout.
    pub fn finish(self) {
        if let Some(v) = &self.staging {
            // SAFETY: `output`'s contract.
            unsafe { self.dt.unpack(v, self.ptr, self.count) };
        }
    }
}

/// The staged bytes, or the `len` bytes of user memory at ptr + true_lb
/// (which the constructors' contracts keep valid).
fn view<'a>(staging: &'a Option<Vec<u8>>, ptr: *mut u8, dt: &Datatype, len: usize) -> &'a [u8] {
    match staging {
        Some(v) => v,
        // SAFETY: see the constructors' contracts.
        None if len > 0 => unsafe { std::slice::from_raw_parts(ptr.wrapping_offset(dt.true_lb()), len) },
        None => &[],
    }
}

fn view_mut<'a>(staging: &'a mut Option<Vec<u8>>, ptr: *mut u8, dt: &Datatype, len: usize) -> &'a mut [u8] {
    match staging {
        Some(v) => v,
        // SAFETY: see the constructors' contracts; the caller owns the buffer for writing.
        None if len > 0 => unsafe { std::slice::from_raw_parts_mut(ptr.wrapping_offset(dt.true_lb()), len) },
        None => &mut [],
    }
}

fn packed_len(count: usize, dt: &Datatype) -> MpiResult<usize> {
    count.checked_mul(dt.size()).ok_or_else(|| MpiError::new(ErrorClass::Count, "count times datatype size overflows"))
}

/// A buffer of per-rank blocks (v-variants): block `i` is `counts[i]`
/// elements at element displacement `displs[i]`.
pub struct StagedBlocks {
    ptr: *mut u8,
    dt: Datatype,
    counts: Vec<usize>,
    displs: Vec<isize>,
    pub byte_counts: Vec<usize>,
    pub byte_displs: Vec<usize>,
    staging: Option<Vec<u8>>,
    len: usize,
}

impl StagedBlocks {
    /// # Safety
    /// `ptr` must be valid for every block, for reading and (if `finish` is
    /// called) writing.
    pub unsafe fn new(ptr: *mut u8, counts: &[usize], displs: &[isize], dt: &Datatype) -> MpiResult<StagedBlocks> {
        if counts.len() != displs.len() {
            return err(ErrorClass::Arg, "counts and displacements differ in length");
        }
        let size = dt.size();
        let byte_counts: Vec<usize> = counts.iter().map(|c| c * size).collect();
        let (byte_displs, staging, len) = if dt.is_contiguous() {
            let ext = dt.extent();
            let mut bd = Vec::with_capacity(counts.len());
            for &d in displs {
                let b = d
                    .checked_mul(ext)
                    .filter(|b| *b >= 0)
                    .ok_or_else(|| MpiError::new(ErrorClass::Arg, format!("displacement {d} is negative or overflows")))?;
                bd.push(b as usize);
            }
            let len = bd.iter().zip(&byte_counts).map(|(d, c)| d + c).max().unwrap_or(0);
            (bd, None, len)
        } else {
            let mut bd = Vec::with_capacity(counts.len());
            let mut v = Vec::new();
            for (i, &c) in counts.iter().enumerate() {
                bd.push(v.len());
                let at = ptr.wrapping_offset(displs[i] * dt.extent());
                dt.pack(at, c, &mut v);
            }
            let len = v.len();
            (bd, Some(v), len)
        };
        Ok(StagedBlocks { ptr, dt: dt.clone(), counts: counts.to_vec(), displs: displs.to_vec(), byte_counts, byte_displs, staging, len })
    }

    pub fn bytes(&self) -> &[u8] {
        view(&self.staging, self.ptr, &self.dt, self.len)
    }

    pub fn bytes_mut(&mut self) -> &mut [u8] {
        view_mut(&mut self.staging, self.ptr, &self.dt, self.len)
    }

    pub fn finish(self) {
        if let Some(v) = &self.staging {
            for i in 0..self.counts.len() {
                let at = self.ptr.wrapping_offset(self.displs[i] * self.dt.extent());
                let from = self.byte_displs[i];
                // SAFETY: `new`'s contract.
                unsafe { self.dt.unpack(&v[from..from + self.byte_counts[i]], at, self.counts[i]) };
            }
        }
    }
}

/// How a reduction sees a buffer: the basic type the operation works on and
/// how many of them there are.
pub fn reduction_view(count: usize, dt: &Datatype, user_op: bool) -> MpiResult<(BasicType, usize)> {
    if let (Combiner::Named, Some(b)) = (dt.combiner(), dt.basic_kind()) {
        return Ok((b, count));
    }
    if user_op {
        // The closure sees packed bytes; the C layer turns them back into
        // elements (laid out again when the type has gaps).
        return Ok((BasicType::Byte, count * dt.size()));
    }
    match dt.basic_kind() {
        Some(b) if b.op_class() != OpClass::Pair => Ok((b, count * dt.size() / b.size())),
        _ => err(ErrorClass::Op, format!("predefined operations need a datatype made of one basic type; {} is not", dt.name())),
    }
}
