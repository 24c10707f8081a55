//! The predefined objects behind builtin handles: MPICH's datatype values
//! (the low 16 bits encode size and index), operations, error handlers,
//! communicators and the predefined attribute keys.

use rustc_hash::FxHashMap as HashMap;
use std::sync::LazyLock;

use wanmpi_runtime::{BasicType, Datatype, PredefOp};

use BasicType::*;

/// (MPICH handle, basic type). Fortran types with a C twin map to it;
/// the rest (MPI_LOGICAL, MPI_LB, MPI_UB, ...) are not supported.
pub const DATATYPES: &[(u32, BasicType)] = &[
    (0x4c00_0101, Char),
    (0x4c00_0118, SignedChar),
    (0x4c00_0102, UnsignedChar),
    (0x4c00_010d, Byte),
    (0x4c00_040e, WChar),
    (0x4c00_0203, Short),
    (0x4c00_0204, UnsignedShort),
    (0x4c00_0405, Int),
    (0x4c00_0406, Unsigned),
    (0x4c00_0807, Long),
    (0x4c00_0808, UnsignedLong),
    (0x4c00_040a, Float),
    (0x4c00_080b, Double),
    (0x4c00_100c, LongDouble),
    (0x4c00_0809, LongLong),
    (0x4c00_0819, UnsignedLongLong),
    (0x4c00_010f, Packed),
    (0x8c00_0000, FloatInt),
    (0x8c00_0001, DoubleInt),
    (0x8c00_0002, LongInt),
    (0x8c00_0003, ShortInt),
    (0x4c00_0816, TwoInt),
    (0x8c00_0004, LongDoubleInt),
    (0x4c00_0137, Int8),
    (0x4c00_0238, Int16),
    (0x4c00_0439, Int32),
    (0x4c00_083a, Int64),
    (0x4c00_013b, Uint8),
    (0x4c00_023c, Uint16),
    (0x4c00_043d, Uint32),
    (0x4c00_083e, Uint64),
    (0x4c00_013f, CBool),
    (0x4c00_0840, CFloatComplex),
    (0x4c00_1041, CDoubleComplex),
    (0x4c00_2042, CLongDoubleComplex),
    (0x4c00_0843, Aint),
    (0x4c00_0844, Offset),
    (0x4c00_0845, Count),
    (0x4c00_0133, CBool),              // MPI_CXX_BOOL
    (0x4c00_0834, CFloatComplex),      // MPI_CXX_FLOAT_COMPLEX
    (0x4c00_1035, CDoubleComplex),     // MPI_CXX_DOUBLE_COMPLEX
    (0x4c00_2036, CLongDoubleComplex), // MPI_CXX_LONG_DOUBLE_COMPLEX
    (0x4c00_041b, Int),                // MPI_INTEGER
    (0x4c00_041c, Float),              // MPI_REAL
    (0x4c00_081f, Double),             // MPI_DOUBLE_PRECISION
    (0x4c00_011a, Char),               // MPI_CHARACTER
    (0x4c00_081e, CFloatComplex),      // MPI_COMPLEX
    (0x4c00_1022, CDoubleComplex),     // MPI_DOUBLE_COMPLEX
    (0x4c00_0820, TwoInt),             // MPI_2INTEGER
    (0x4c00_0427, Float),              // MPI_REAL4
    (0x4c00_0829, Double),             // MPI_REAL8
    (0x4c00_0828, CFloatComplex),      // MPI_COMPLEX8
    (0x4c00_102a, CDoubleComplex),     // MPI_COMPLEX16
    (0x4c00_012d, Int8),               // MPI_INTEGER1
    (0x4c00_022f, Int16),              // MPI_INTEGER2
    (0x4c00_0430, Int32),              // MPI_INTEGER4
    (0x4c00_0831, Int64),              // MPI_INTEGER8
];

/// One `Datatype` value per predefined handle, so identity is stable.
static TYPES: LazyLock<HashMap<i32, Datatype>> = LazyLock::new(|| DATATYPES.iter().map(|&(h, b)| (h as i32, Datatype::basic(b))).collect());

pub fn datatype(h: i32) -> Option<&'static Datatype> {
    TYPES.get(&h).or_else(|| marker(h))
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
    DATATYPES.iter().find(|(_, t)| *t == b).map(|&(h, _)| h as i32)
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
        for &(h, b) in DATATYPES {
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
