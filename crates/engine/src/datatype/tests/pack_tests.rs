//! Pack/unpack against the naive model, for every constructor.

use super::oracle::{char_, disjoint, double, double_char, int, pattern, reference_pack, runs, Buf};
use crate::datatype::{BasicType, Datatype};

/// Packs `count` elements, compares with the model, unpacks into a fresh
/// buffer and checks that exactly the data bytes came back.
pub fn check_round_trip(t: &Datatype, count: usize) {
    let src = Buf::for_type(t, count, pattern);
    let mut packed = Vec::new();
    unsafe { t.pack(src.base(), count, &mut packed) };
    assert_eq!(packed.len(), t.packed_size(count), "{t:?} x{count}: packed size");
    assert_eq!(packed, reference_pack(t, count, &src), "{t:?} x{count}: pack order");
    if !disjoint(t, count) {
        return; // Overlapping entries: unpacking them is erroneous in MPI.
    }
    const UNTOUCHED: u8 = 0xA5;
    let mut dst = Buf::for_type(t, count, |_| UNTOUCHED);
    let used = unsafe { t.unpack(&packed, dst.base_mut(), count) };
    assert_eq!(used, packed.len());
    let mut expect = vec![UNTOUCHED; dst.mem.len()];
    let origin = dst.base() as usize - dst.mem.as_ptr() as usize;
    for (d, l) in runs(t, count) {
        let s = (origin as isize + d) as usize;
        expect[s..s + l].copy_from_slice(src.at(d, l));
    }
    assert_eq!(dst.mem, expect, "{t:?} x{count}: unpack");
}

fn check_counts(t: &Datatype) {
    for count in [0, 1, 2, 5] {
        check_round_trip(t, count);
    }
}

#[test]
fn contiguous_round_trips() {
    check_counts(&Datatype::contiguous(7, &int()).unwrap());
    check_counts(&Datatype::contiguous(3, &double_char()).unwrap());
}

#[test]
fn vector_and_hvector_round_trip() {
    check_counts(&Datatype::vector(4, 2, 3, &double()).unwrap());
    check_counts(&Datatype::vector(3, 1, -2, &double_char()).unwrap());
    check_counts(&Datatype::hvector(3, 2, 5, &basic(BasicType::Short)).unwrap());
    check_counts(&Datatype::hvector(3, 1, -12, &int()).unwrap());
}

#[test]
fn indexed_family_round_trips_with_negative_displacements() {
    check_counts(&Datatype::indexed(&[2, 0, 3], &[5, 1, -4], &int()).unwrap());
    check_counts(&Datatype::hindexed(&[1, 2], &[-20, 3], &double_char()).unwrap());
    check_counts(&Datatype::indexed_block(2, &[3, -5, 0], &double()).unwrap());
    check_counts(&Datatype::hindexed_block(1, &[17, -9, 40], &basic(BasicType::ShortInt)).unwrap());
}

#[test]
fn struct_and_resized_round_trip() {
    let s = Datatype::create_struct(&[2, 1, 3], &[0, 16, 26], &[basic(BasicType::Float), double_char(), char_()]).unwrap();
    check_counts(&s);
    check_counts(&Datatype::resized(&s, -8, 48).unwrap());
    check_counts(&Datatype::resized(&int(), -3, 9).unwrap());
    check_counts(&s.dup());
}

#[test]
fn nested_types_round_trip() {
    let inner = Datatype::hindexed(&[1, 2], &[-6, 10], &basic(BasicType::Short)).unwrap();
    let v = Datatype::vector(3, 2, -4, &inner).unwrap();
    let s = Datatype::create_struct(&[1, 2], &[100, -50], &[v.clone(), basic(BasicType::DoubleInt)]).unwrap();
    let c = Datatype::contiguous(2, &Datatype::resized(&s, 0, 200).unwrap()).unwrap();
    check_counts(&v);
    check_counts(&s);
    check_counts(&c);
}

#[test]
fn long_strided_types_use_repeat_nodes_correctly() {
    // Far past the flattening limit: exercises the compact repeat path.
    let v = Datatype::vector(3000, 2, 3, &int()).unwrap();
    check_round_trip(&v, 2);
    let nested = Datatype::vector(40, 3, 50, &Datatype::hvector(60, 1, 24, &double_char()).unwrap()).unwrap();
    check_round_trip(&nested, 1);
}

#[test]
fn pack_range_windows_concatenate_to_the_whole() {
    let t = Datatype::vector(1500, 3, -5, &basic(BasicType::ShortInt)).unwrap();
    let count = 2;
    let src = Buf::for_type(&t, count, pattern);
    let mut whole = Vec::new();
    unsafe { t.pack(src.base(), count, &mut whole) };
    for window in [1, 7, 1000, 4096] {
        let mut pieces = Vec::new();
        let mut off = 0;
        loop {
            let n = unsafe { t.pack_range(src.base(), count, off, window, &mut pieces) };
            if n == 0 {
                break;
            }
            assert!(n <= window);
            off += n;
        }
        assert_eq!(pieces, whole, "window {window}");
    }
}

#[test]
fn fragments_unpack_in_any_order() {
    let t = Datatype::hvector(700, 2, -20, &int()).unwrap();
    let src = Buf::for_type(&t, 1, pattern);
    let mut packed = Vec::new();
    unsafe { t.pack(src.base(), 1, &mut packed) };
    let mut dst = Buf::for_type(&t, 1, |_| 0);
    // Reverse order, odd fragment size so fragments split elements.
    let frag = 13;
    let starts: Vec<usize> = (0..packed.len()).step_by(frag).collect();
    for &s in starts.iter().rev() {
        let end = (s + frag).min(packed.len());
        let n = unsafe { t.unpack_range(&packed[s..end], dst.base_mut(), 1, s) };
        assert_eq!(n, end - s);
    }
    let mut again = Vec::new();
    unsafe { t.pack(dst.base(), 1, &mut again) };
    assert_eq!(again, packed);
}

#[test]
fn unpack_stops_at_the_end_of_the_source_or_the_count() {
    let t = Datatype::vector(2, 1, 2, &int()).unwrap(); // ints at 0 and 8
    let mut dst = [0u8; 32];
    let src: Vec<u8> = (1..=20).collect();
    // Short source: 6 bytes fill the first int and half of the second.
    let n = unsafe { t.unpack(&src[..6], dst.as_mut_ptr(), 2) };
    assert_eq!(n, 6);
    assert_eq!(&dst[..12], &[1, 2, 3, 4, 0, 0, 0, 0, 5, 6, 0, 0]);
    // Long source: only one element (8 bytes) is taken.
    let mut dst = [0u8; 32];
    let n = unsafe { t.unpack(&src, dst.as_mut_ptr(), 1) };
    assert_eq!(n, 8);
    assert_eq!(&dst[..16], &[1, 2, 3, 4, 0, 0, 0, 0, 5, 6, 7, 8, 0, 0, 0, 0]);
    // Zero count or empty source consume nothing.
    assert_eq!(unsafe { t.unpack(&src, dst.as_mut_ptr(), 0) }, 0);
    assert_eq!(unsafe { t.unpack(&[], dst.as_mut_ptr(), 2) }, 0);
}

#[test]
fn zero_count_and_empty_types_pack_nothing() {
    let t = Datatype::vector(3, 2, 4, &int()).unwrap();
    let mut out = vec![9u8];
    unsafe { t.pack(std::ptr::null(), 0, &mut out) };
    assert_eq!(out, [9]);
    let empty = Datatype::contiguous(0, &double()).unwrap();
    unsafe { empty.pack(std::ptr::null(), 1000, &mut out) };
    assert_eq!(out, [9]);
    assert_eq!(empty.packed_size(1000), 0);
}

#[test]
fn contiguous_types_pack_in_one_copy_with_a_nonzero_lower_bound() {
    let t = Datatype::hindexed(&[2, 2], &[8, 16], &int()).unwrap();
    assert!(t.is_contiguous());
    assert_eq!((t.lb(), t.extent()), (8, 16));
    check_counts(&t);
}

fn basic(b: BasicType) -> Datatype {
    Datatype::basic(b)
}
