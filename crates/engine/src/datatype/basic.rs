//! The predefined (basic) MPI datatypes of the C binding, MPI-3.1 §3.2.2 and
//! §5.9.4 (the pair types for MINLOC/MAXLOC). Sizes are those of x86_64 Linux
//! (LP64): `long` is 8 bytes, `long double` is the 80-bit x87 type stored in 16.

/// A predefined datatype. Shared by the datatype engine (layout) and the
/// reduction operations (arithmetic).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BasicType {
    Char,
    SignedChar,
    UnsignedChar,
    Byte,
    WChar,
    Short,
    UnsignedShort,
    Int,
    Unsigned,
    Long,
    UnsignedLong,
    LongLong,
    UnsignedLongLong,
    Float,
    Double,
    LongDouble,
    CBool,
    Int8,
    Int16,
    Int32,
    Int64,
    Uint8,
    Uint16,
    Uint32,
    Uint64,
    Aint,
    Offset,
    Count,
    CFloatComplex,
    CDoubleComplex,
    CLongDoubleComplex,
    Packed,
    /// struct { float; int } (MPI_FLOAT_INT)
    FloatInt,
    /// struct { double; int } (MPI_DOUBLE_INT)
    DoubleInt,
    /// struct { long; int } (MPI_LONG_INT)
    LongInt,
    /// struct { int; int } (MPI_2INT)
    TwoInt,
    /// struct { short; int } (MPI_SHORT_INT)
    ShortInt,
    /// struct { long double; int } (MPI_LONG_DOUBLE_INT)
    LongDoubleInt,
    /// Fortran's REAL pair, the index a REAL too (MPI_2REAL)
    TwoFloat,
    /// Fortran's DOUBLE PRECISION pair (MPI_2DOUBLE_PRECISION)
    TwoDouble,
}

/// How a reduction operation sees a basic type (MPI-3.1 §5.9.2 groups).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpClass {
    /// C integer: arithmetic, min/max, logical and bitwise ops.
    Integer,
    /// Floating point: arithmetic and min/max.
    Floating,
    /// Complex: sum and product only.
    Complex,
    /// C bool: logical ops only.
    Logical,
    /// MPI_BYTE: bitwise ops only.
    Byte,
    /// A (value, index) pair: MINLOC/MAXLOC only.
    Pair,
    /// MPI_PACKED: no reduction applies.
    None,
}

impl BasicType {
    /// Every basic type, for table-driven tests.
    pub const ALL: [BasicType; 40] = [
        BasicType::Char,
        BasicType::SignedChar,
        BasicType::UnsignedChar,
        BasicType::Byte,
        BasicType::WChar,
        BasicType::Short,
        BasicType::UnsignedShort,
        BasicType::Int,
        BasicType::Unsigned,
        BasicType::Long,
        BasicType::UnsignedLong,
        BasicType::LongLong,
        BasicType::UnsignedLongLong,
        BasicType::Float,
        BasicType::Double,
        BasicType::LongDouble,
        BasicType::CBool,
        BasicType::Int8,
        BasicType::Int16,
        BasicType::Int32,
        BasicType::Int64,
        BasicType::Uint8,
        BasicType::Uint16,
        BasicType::Uint32,
        BasicType::Uint64,
        BasicType::Aint,
        BasicType::Offset,
        BasicType::Count,
        BasicType::CFloatComplex,
        BasicType::CDoubleComplex,
        BasicType::CLongDoubleComplex,
        BasicType::Packed,
        BasicType::FloatInt,
        BasicType::DoubleInt,
        BasicType::LongInt,
        BasicType::TwoInt,
        BasicType::ShortInt,
        BasicType::LongDoubleInt,
        BasicType::TwoFloat,
        BasicType::TwoDouble,
    ];

    /// Bytes of data in one element (MPI_Type_size).
    pub const fn size(self) -> usize {
        use BasicType::*;
        match self {
            Char | SignedChar | UnsignedChar | Byte | CBool | Int8 | Uint8 | Packed => 1,
            Short | UnsignedShort | Int16 | Uint16 => 2,
            WChar | Int | Unsigned | Float | Int32 | Uint32 => 4,
            Long | UnsignedLong | LongLong | UnsignedLongLong | Double | Int64 | Uint64 | Aint | Offset | Count | CFloatComplex => 8,
            LongDouble | CDoubleComplex => 16,
            CLongDoubleComplex => 32,
            FloatInt | TwoInt | TwoFloat => 8,
            DoubleInt | LongInt => 12,
            TwoDouble => 16,
            ShortInt => 6,
            LongDoubleInt => 20,
        }
    }

    /// Bytes from one element to the next in an array (MPI_Type_get_extent);
    /// differs from `size` only for pair types with padding.
    pub const fn extent(self) -> usize {
        use BasicType::*;
        match self {
            DoubleInt | LongInt => 16,
            ShortInt => 8,
            LongDoubleInt => 32,
            other => other.size(),
        }
    }

    /// Alignment of the C type, used for struct extents (MPI-3.1 §4.1.6).
    pub const fn alignment(self) -> usize {
        use BasicType::*;
        match self {
            CFloatComplex => 4,
            CDoubleComplex => 8,
            CLongDoubleComplex | LongDouble | LongDoubleInt => 16,
            FloatInt | TwoInt | ShortInt | TwoFloat => 4,
            DoubleInt | LongInt | TwoDouble => 8,
            other => other.size(),
        }
    }

    /// For a pair type: (value type, index type, byte offset of the index).
    /// MPI-3.1 §5.9.4 defines each pair as a struct of two basic types, so
    /// the datatype engine packs and counts them as two elements.
    pub const fn pair_parts(self) -> Option<(BasicType, BasicType, usize)> {
        use BasicType::*;
        match self {
            FloatInt => Some((Float, Int, 4)),
            DoubleInt => Some((Double, Int, 8)),
            LongInt => Some((Long, Int, 8)),
            TwoInt => Some((Int, Int, 4)),
            ShortInt => Some((Short, Int, 4)),
            LongDoubleInt => Some((LongDouble, Int, 16)),
            TwoFloat => Some((Float, Float, 4)),
            TwoDouble => Some((Double, Double, 8)),
            _ => None,
        }
    }

    pub const fn op_class(self) -> OpClass {
        use BasicType::*;
        match self {
            Char | SignedChar | UnsignedChar | WChar | Short | UnsignedShort | Int | Unsigned | Long | UnsignedLong | LongLong | UnsignedLongLong
            | Int8 | Int16 | Int32 | Int64 | Uint8 | Uint16 | Uint32 | Uint64 | Aint | Offset | Count => OpClass::Integer,
            Float | Double | LongDouble => OpClass::Floating,
            CFloatComplex | CDoubleComplex | CLongDoubleComplex => OpClass::Complex,
            CBool => OpClass::Logical,
            Byte => OpClass::Byte,
            FloatInt | DoubleInt | LongInt | TwoInt | ShortInt | LongDoubleInt | TwoFloat | TwoDouble => OpClass::Pair,
            Packed => OpClass::None,
        }
    }

    /// The name MPI_Type_get_name reports.
    pub const fn mpi_name(self) -> &'static str {
        use BasicType::*;
        match self {
            Char => "MPI_CHAR",
            SignedChar => "MPI_SIGNED_CHAR",
            UnsignedChar => "MPI_UNSIGNED_CHAR",
            Byte => "MPI_BYTE",
            WChar => "MPI_WCHAR",
            Short => "MPI_SHORT",
            UnsignedShort => "MPI_UNSIGNED_SHORT",
            Int => "MPI_INT",
            Unsigned => "MPI_UNSIGNED",
            Long => "MPI_LONG",
            UnsignedLong => "MPI_UNSIGNED_LONG",
            LongLong => "MPI_LONG_LONG",
            UnsignedLongLong => "MPI_UNSIGNED_LONG_LONG",
            Float => "MPI_FLOAT",
            Double => "MPI_DOUBLE",
            LongDouble => "MPI_LONG_DOUBLE",
            CBool => "MPI_C_BOOL",
            Int8 => "MPI_INT8_T",
            Int16 => "MPI_INT16_T",
            Int32 => "MPI_INT32_T",
            Int64 => "MPI_INT64_T",
            Uint8 => "MPI_UINT8_T",
            Uint16 => "MPI_UINT16_T",
            Uint32 => "MPI_UINT32_T",
            Uint64 => "MPI_UINT64_T",
            Aint => "MPI_AINT",
            Offset => "MPI_OFFSET",
            Count => "MPI_COUNT",
            CFloatComplex => "MPI_C_COMPLEX",
            CDoubleComplex => "MPI_C_DOUBLE_COMPLEX",
            CLongDoubleComplex => "MPI_C_LONG_DOUBLE_COMPLEX",
            Packed => "MPI_PACKED",
            FloatInt => "MPI_FLOAT_INT",
            DoubleInt => "MPI_DOUBLE_INT",
            LongInt => "MPI_LONG_INT",
            TwoInt => "MPI_2INT",
            ShortInt => "MPI_SHORT_INT",
            LongDoubleInt => "MPI_LONG_DOUBLE_INT",
            TwoFloat => "MPI_2REAL",
            TwoDouble => "MPI_2DOUBLE_PRECISION",
        }
    }
}
