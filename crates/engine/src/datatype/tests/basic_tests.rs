//! Predefined types seen through `Datatype`.

use super::oracle::{reference_pack, Buf};
use crate::datatype::{BasicType, Combiner, Datatype};

/// (type, size, extent) on x86_64 Linux.
const TABLE: [(BasicType, usize, isize); 40] = {
    use BasicType::*;
    [
        (Char, 1, 1),
        (SignedChar, 1, 1),
        (UnsignedChar, 1, 1),
        (Byte, 1, 1),
        (WChar, 4, 4),
        (Short, 2, 2),
        (UnsignedShort, 2, 2),
        (Int, 4, 4),
        (Unsigned, 4, 4),
        (Long, 8, 8),
        (UnsignedLong, 8, 8),
        (LongLong, 8, 8),
        (UnsignedLongLong, 8, 8),
        (Float, 4, 4),
        (Double, 8, 8),
        (LongDouble, 16, 16),
        (CBool, 1, 1),
        (Int8, 1, 1),
        (Int16, 2, 2),
        (Int32, 4, 4),
        (Int64, 8, 8),
        (Uint8, 1, 1),
        (Uint16, 2, 2),
        (Uint32, 4, 4),
        (Uint64, 8, 8),
        (Aint, 8, 8),
        (Offset, 8, 8),
        (Count, 8, 8),
        (CFloatComplex, 8, 8),
        (CDoubleComplex, 16, 16),
        (CLongDoubleComplex, 32, 32),
        (Packed, 1, 1),
        (FloatInt, 8, 8),
        (DoubleInt, 12, 16),
        (LongInt, 12, 16),
        (TwoInt, 8, 8),
        (ShortInt, 6, 8),
        (LongDoubleInt, 20, 32),
        (TwoFloat, 8, 8),
        (TwoDouble, 16, 16),
    ]
};

#[test]
fn every_basic_type_has_the_c_size_and_extent() {
    assert_eq!(TABLE.len(), BasicType::ALL.len());
    for (b, size, extent) in TABLE {
        let t = Datatype::basic(b);
        assert_eq!(t.size(), size, "{b:?} size");
        assert_eq!(t.extent(), extent, "{b:?} extent");
        assert_eq!(t.lb(), 0, "{b:?} lb");
        assert_eq!(t.true_lb(), 0, "{b:?} true lb");
        assert_eq!(t.combiner(), Combiner::Named);
        assert_eq!(t.envelope(), (0, 0, 0, Combiner::Named));
        assert_eq!(t.name(), b.mpi_name());
        assert!(t.is_committed(), "{b:?} committed");
        assert_eq!(t.basic_kind(), Some(b));
        assert_eq!(t.is_contiguous(), size as isize == extent, "{b:?} contiguous");
    }
}

#[test]
fn pair_types_have_their_index_at_the_c_offset() {
    // True extent ends after the int; the padding after it is not data.
    let cases = [
        (BasicType::FloatInt, 8),
        (BasicType::DoubleInt, 12),
        (BasicType::LongInt, 12),
        (BasicType::TwoInt, 8),
        (BasicType::ShortInt, 8),
        (BasicType::LongDoubleInt, 20),
    ];
    for (b, true_extent) in cases {
        assert_eq!(Datatype::basic(b).true_extent(), true_extent, "{b:?}");
    }
}

#[test]
fn short_int_packs_around_its_padding() {
    // struct { short v; int i; }: bytes 2..4 are padding and must not travel.
    let t = Datatype::basic(BasicType::ShortInt);
    let src: Vec<u8> = (0..16).collect();
    let mut out = Vec::new();
    unsafe { t.pack(src.as_ptr(), 2, &mut out) };
    assert_eq!(out, [0, 1, 4, 5, 6, 7, 8, 9, 12, 13, 14, 15]);
}

#[test]
fn double_int_packs_twelve_bytes_per_pair() {
    let t = Datatype::basic(BasicType::DoubleInt);
    let buf = Buf::for_type(&t, 3, |i| i as u8);
    let mut out = Vec::new();
    unsafe { t.pack(buf.base(), 3, &mut out) };
    assert_eq!(out.len(), 36);
    assert_eq!(out, reference_pack(&t, 3, &buf));
    assert_eq!(&out[12..24], &buf.mem[16..28]);
}

#[test]
fn names_can_be_changed_and_are_shared_by_clones() {
    let t = Datatype::basic(BasicType::Int);
    let c = t.clone();
    c.set_name("my int");
    assert_eq!(t.name(), "my int");
    assert!(t.ptr_eq(&c));
    // A fresh handle of the same basic type keeps the MPI name.
    assert_eq!(Datatype::basic(BasicType::Int).name(), "MPI_INT");
}

#[test]
fn datatypes_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Datatype>();
}
