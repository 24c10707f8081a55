//! The predefined objects behind builtin handles: MPICH's datatype values
//! (the low 16 bits encode size and index), operations, error handlers,
//! communicators and the predefined attribute keys.

use rustc_hash::FxHashMap as HashMap;
use std::sync::LazyLock;

use wanmpi_runtime::{BasicType, Datatype, PredefOp};

use BasicType::*;

/// (MPICH handle, basic type, name). Every handle is a type of its own
/// (its own name, and what MPI_Type_get_contents gives back), but one that
/// behaves everywhere as its basic type: layout, reductions, external32,
/// MPI_COMBINER_NAMED. Fortran types map to their C twin of the same size;
/// MPI_REAL16 and MPI_COMPLEX32 to the 16-byte C type, long double (x87
/// extended, not the binary128 of gfortran's REAL*16: there is no Fortran
/// binding to hand one over) and its complex. MPI_LOGICAL is gfortran's
/// LOGICAL, a 4-byte integer that is 1 or 0, so C's int and its logical
/// reductions (MPI_LAND, MPI_LOR, MPI_LXOR give 1 or 0) serve it.
/// MPI_2REAL and MPI_2DOUBLE_PRECISION are pairs of their own (the index
/// is a REAL or DOUBLE PRECISION); MPI_INTEGER16 is not supported.
pub const DATATYPES: &[(u32, BasicType, &str)] = &[
    (0x4c00_0101, Char, "MPI_CHAR"),
    (0x4c00_0118, SignedChar, "MPI_SIGNED_CHAR"),
    (0x4c00_0102, UnsignedChar, "MPI_UNSIGNED_CHAR"),
    (0x4c00_010d, Byte, "MPI_BYTE"),
    (0x4c00_040e, WChar, "MPI_WCHAR"),
    (0x4c00_0203, Short, "MPI_SHORT"),
    (0x4c00_0204, UnsignedShort, "MPI_UNSIGNED_SHORT"),
    (0x4c00_0405, Int, "MPI_INT"),
    (0x4c00_0406, Unsigned, "MPI_UNSIGNED"),
    (0x4c00_0807, Long, "MPI_LONG"),
    (0x4c00_0808, UnsignedLong, "MPI_UNSIGNED_LONG"),
    (0x4c00_040a, Float, "MPI_FLOAT"),
    (0x4c00_080b, Double, "MPI_DOUBLE"),
    (0x4c00_100c, LongDouble, "MPI_LONG_DOUBLE"),
    (0x4c00_0809, LongLong, "MPI_LONG_LONG_INT"),
    (0x4c00_0819, UnsignedLongLong, "MPI_UNSIGNED_LONG_LONG"),
    (0x4c00_010f, Packed, "MPI_PACKED"),
    (0x8c00_0000, FloatInt, "MPI_FLOAT_INT"),
    (0x8c00_0001, DoubleInt, "MPI_DOUBLE_INT"),
    (0x8c00_0002, LongInt, "MPI_LONG_INT"),
    (0x8c00_0003, ShortInt, "MPI_SHORT_INT"),
    (0x4c00_0816, TwoInt, "MPI_2INT"),
    (0x8c00_0004, LongDoubleInt, "MPI_LONG_DOUBLE_INT"),
    (0x4c00_0137, Int8, "MPI_INT8_T"),
    (0x4c00_0238, Int16, "MPI_INT16_T"),
    (0x4c00_0439, Int32, "MPI_INT32_T"),
    (0x4c00_083a, Int64, "MPI_INT64_T"),
    (0x4c00_013b, Uint8, "MPI_UINT8_T"),
    (0x4c00_023c, Uint16, "MPI_UINT16_T"),
    (0x4c00_043d, Uint32, "MPI_UINT32_T"),
    (0x4c00_083e, Uint64, "MPI_UINT64_T"),
    (0x4c00_013f, CBool, "MPI_C_BOOL"),
    (0x4c00_0840, CFloatComplex, "MPI_C_COMPLEX"),
    (0x4c00_1041, CDoubleComplex, "MPI_C_DOUBLE_COMPLEX"),
    (0x4c00_2042, CLongDoubleComplex, "MPI_C_LONG_DOUBLE_COMPLEX"),
    (0x4c00_0843, Aint, "MPI_AINT"),
    (0x4c00_0844, Offset, "MPI_OFFSET"),
    (0x4c00_0845, Count, "MPI_COUNT"),
    (0x4c00_0133, CBool, "MPI_CXX_BOOL"),
    (0x4c00_0834, CFloatComplex, "MPI_CXX_FLOAT_COMPLEX"),
    (0x4c00_1035, CDoubleComplex, "MPI_CXX_DOUBLE_COMPLEX"),
    (0x4c00_2036, CLongDoubleComplex, "MPI_CXX_LONG_DOUBLE_COMPLEX"),
    (0x4c00_041b, Int, "MPI_INTEGER"),
    (0x4c00_041c, Float, "MPI_REAL"),
    (0x4c00_081f, Double, "MPI_DOUBLE_PRECISION"),
    (0x4c00_011a, Char, "MPI_CHARACTER"),
    (0x4c00_081e, CFloatComplex, "MPI_COMPLEX"),
    (0x4c00_1022, CDoubleComplex, "MPI_DOUBLE_COMPLEX"),
    (0x4c00_0820, TwoInt, "MPI_2INTEGER"),
    (0x4c00_0821, TwoFloat, "MPI_2REAL"),
    (0x4c00_1023, TwoDouble, "MPI_2DOUBLE_PRECISION"),
    (0x4c00_041d, Int, "MPI_LOGICAL"),
    (0x4c00_0427, Float, "MPI_REAL4"),
    (0x4c00_0829, Double, "MPI_REAL8"),
    (0x4c00_0828, CFloatComplex, "MPI_COMPLEX8"),
    (0x4c00_102a, CDoubleComplex, "MPI_COMPLEX16"),
    (0x4c00_012d, Int8, "MPI_INTEGER1"),
    (0x4c00_022f, Int16, "MPI_INTEGER2"),
    (0x4c00_0430, Int32, "MPI_INTEGER4"),
    (0x4c00_0831, Int64, "MPI_INTEGER8"),
    (0x4c00_102b, LongDouble, "MPI_REAL16"),
    (0x4c00_202c, CLongDoubleComplex, "MPI_COMPLEX32"),
];

/// One `Datatype` value per predefined handle, so identity is stable.
static TYPES: LazyLock<HashMap<i32, Datatype>> = LazyLock::new(|| {
    DATATYPES
        .iter()
        .map(|&(h, b, name)| {
            let d = Datatype::basic(b);
            d.set_name(name);
            (h as i32, d)
        })
        .collect()
});

pub fn datatype(h: i32) -> Option<&'static Datatype> {
    TYPES.get(&h).or_else(|| marker(h))
}

/// The predefined handle whose type `d` is (the same value, not merely the
/// same basic type): MPI_REAL4 stays MPI_REAL4 in MPI_Type_get_contents.
pub fn handle_of(d: &Datatype) -> Option<i32> {
    TYPES.iter().find(|(_, t)| t.ptr_eq(d)).map(|(&h, _)| h)
}

/// MPI_LB and MPI_UB as values: types of no data and no extent. Where they
/// mean something (MPI_Type_create_struct) the constructor looks at the
/// handle; the queries that must say "predefined" (envelope, name) too.
static MARKERS: LazyLock<[Datatype; 2]> = LazyLock::new(|| {
    [("MPI_LB", LB), ("MPI_UB", UB)].map(|(name, _)| {
        let d = Datatype::contiguous(0, &Datatype::basic(Byte)).expect("an empty contiguous type");
        d.set_name(name);
        d.commit();
        d
    })
});

pub fn marker(h: i32) -> Option<&'static Datatype> {
    match h {
        LB => Some(&MARKERS[0]),
        UB => Some(&MARKERS[1]),
        _ => None,
    }
}

/// The canonical C handle of a basic type (the first entry naming it).
pub fn datatype_handle(b: BasicType) -> Option<i32> {
    DATATYPES.iter().find(|(_, t, _)| *t == b).map(|&(h, _, _)| h as i32)
}

pub const OPS: [PredefOp; 14] = [
    PredefOp::Max,
    PredefOp::Min,
    PredefOp::Sum,
    PredefOp::Prod,
    PredefOp::Land,
    PredefOp::Band,
    PredefOp::Lor,
    PredefOp::Bor,
    PredefOp::Lxor,
    PredefOp::Bxor,
    PredefOp::Minloc,
    PredefOp::Maxloc,
    PredefOp::Replace,
    PredefOp::NoOp,
];

/// MPI_MAX is 0x58000001, ... MPI_NO_OP 0x5800000e.
pub fn op(h: i32) -> Option<PredefOp> {
    let u = h as u32;
    if u & 0xffff_ff00 != 0x5800_0000 {
        return None;
    }
    OPS.get((u & 0xff).checked_sub(1)? as usize).copied()
}

pub const COMM_NULL: i32 = 0x0400_0000;
pub const COMM_WORLD: i32 = 0x4400_0000;
pub const COMM_SELF: i32 = 0x4400_0001;
pub const GROUP_NULL: i32 = 0x0800_0000;
pub const GROUP_EMPTY: i32 = 0x4800_0000;
pub const DATATYPE_NULL: i32 = 0x0c00_0000;
/// MPI-1's bound markers, still in MPICH's ABI (removed from MPI-3's text).
pub const LB: i32 = 0x4c00_0010;
pub const UB: i32 = 0x4c00_0011;
pub const OP_NULL: i32 = 0x1800_0000;
pub const ERRHANDLER_NULL: i32 = 0x1400_0000;
pub const ERRORS_ARE_FATAL: i32 = 0x5400_0000;
pub const ERRORS_RETURN: i32 = 0x5400_0001;
pub const ERRORS_ABORT: i32 = 0x5400_0003;
pub const REQUEST_NULL: i32 = 0x2c00_0000;
pub const MESSAGE_NULL: i32 = 0x2c00_0000;
pub const MESSAGE_NO_PROC: i32 = 0x6c00_0000;
pub const INFO_NULL: i32 = 0x1c00_0000;
pub const WIN_NULL: i32 = 0x2000_0000;
pub const SESSION_NULL: i32 = 0x3800_0000;
pub const INFO_ENV: i32 = 0x5c00_0001;
pub const KEYVAL_INVALID: i32 = 0x2400_0000;

pub const TAG_UB: i32 = 0x6440_0001;
pub const HOST: i32 = 0x6440_0003;
pub const IO: i32 = 0x6440_0005;
pub const WTIME_IS_GLOBAL: i32 = 0x6440_0007;
pub const UNIVERSE_SIZE: i32 = 0x6440_0009;
pub const LASTUSEDCODE: i32 = 0x6440_000b;
pub const APPNUM: i32 = 0x6440_000d;

pub const UNDEFINED: i32 = -32766;
pub const PROC_NULL: i32 = -1;
/// MPI_BYTE's handle (a basic type, one byte).
pub const BYTE: i32 = 0x4c00_010d;
pub const ANY_SOURCE: i32 = -2;
pub const ROOT: i32 = -3;
pub const ANY_TAG: i32 = -1;

pub const THREAD_SINGLE: i32 = 0;
pub const THREAD_MULTIPLE: i32 = 3;

pub const IDENT: i32 = 0;
pub const CONGRUENT: i32 = 1;
pub const SIMILAR: i32 = 2;
pub const UNEQUAL: i32 = 3;

pub const CART: i32 = 2;

pub const MAX_PROCESSOR_NAME: usize = 128;
pub const MAX_ERROR_STRING: usize = 512;
pub const MAX_OBJECT_NAME: usize = 128;
pub const MAX_LIBRARY_VERSION_STRING: usize = 8192;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datatype_handles_encode_their_size() {
        for &(h, b, _) in DATATYPES {
            // Builtin handles (0x4c...) carry the size in bits 8-15.
            if h >> 24 == 0x4c {
                assert_eq!(((h >> 8) & 0xff) as usize, b.size(), "{h:#x}");
            }
        }
        assert_eq!(op(0x5800_0003), Some(PredefOp::Sum));
        assert_eq!(op(0x5800_000f), None);
        assert_eq!(op(0x5800_0000), None);
    }
}
