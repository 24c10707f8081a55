//! Bounds and extents, mostly the worked examples of MPI-3.1 §4.1.

use super::oracle::{char_, double, double_char, entries, int};
use crate::datatype::{BasicType, Datatype, DatatypeError};

fn basic(b: BasicType) -> Datatype {
    Datatype::basic(b)
}

#[test]
fn struct_double_char_is_padded_to_sixteen() {
    // §4.1.6: {(double,0),(char,8)} has extent 16 by alignment.
    let t = double_char();
    assert_eq!((t.size(), t.lb(), t.extent()), (9, 0, 16));
    assert_eq!((t.true_lb(), t.true_extent()), (0, 9));
    assert!(!t.is_contiguous());
}

#[test]
fn contiguous_example_4_2() {
    let t = Datatype::contiguous(3, &double_char()).unwrap();
    let want: Vec<isize> = vec![0, 8, 16, 24, 32, 40];
    assert_eq!(entries(&t).iter().map(|e| e.0).collect::<Vec<_>>(), want);
    assert_eq!((t.size(), t.extent(), t.true_extent()), (27, 48, 41));
}

#[test]
fn vector_example_4_3() {
    let t = Datatype::vector(2, 3, 4, &double_char()).unwrap();
    let d: Vec<isize> = entries(&t).iter().map(|e| e.0).collect();
    assert_eq!(d, [0, 8, 16, 24, 32, 40, 64, 72, 80, 88, 96, 104]);
    assert_eq!((t.lb(), t.extent(), t.size()), (0, 112, 54));
}

#[test]
fn vector_with_negative_stride_example_4_3() {
    // MPI_TYPE_VECTOR(3, 1, -2, oldtype): copies at 0, -32, -64.
    let t = Datatype::vector(3, 1, -2, &double_char()).unwrap();
    let d: Vec<isize> = entries(&t).iter().map(|e| e.0).collect();
    assert_eq!(d, [0, 8, -32, -24, -64, -56]);
    assert_eq!((t.lb(), t.extent()), (-64, 80));
    assert_eq!((t.true_lb(), t.true_extent()), (-64, 73));
}

#[test]
fn hvector_example_4_4() {
    let t = Datatype::hvector(2, 3, 4, &double_char()).unwrap();
    let d: Vec<isize> = entries(&t).iter().map(|e| e.0).collect();
    assert_eq!(d, [0, 8, 16, 24, 32, 40, 4, 12, 20, 28, 36, 44]);
    assert_eq!((t.lb(), t.extent()), (0, 52));
}

#[test]
fn indexed_example_4_5() {
    let t = Datatype::indexed(&[3, 1], &[4, 0], &double_char()).unwrap();
    let d: Vec<isize> = entries(&t).iter().map(|e| e.0).collect();
    assert_eq!(d, [64, 72, 80, 88, 96, 104, 0, 8]);
    assert_eq!((t.lb(), t.extent(), t.size()), (0, 112, 36));
}

#[test]
fn struct_example_4_6() {
    // B = (2, 1, 3), D = (0, 16, 26), T = (MPI_FLOAT, type1, MPI_CHAR).
    let t = Datatype::create_struct(&[2, 1, 3], &[0, 16, 26], &[basic(BasicType::Float), double_char(), char_()]).unwrap();
    let e = entries(&t);
    let want = [
        (0, BasicType::Float),
        (4, BasicType::Float),
        (16, BasicType::Double),
        (24, BasicType::Char),
        (26, BasicType::Char),
        (27, BasicType::Char),
        (28, BasicType::Char),
    ];
    assert_eq!(e, want);
    assert_eq!((t.size(), t.lb(), t.extent()), (20, 0, 32));
    assert_eq!(t.true_extent(), 29);
}

#[test]
fn struct_padding_follows_the_strictest_alignment() {
    let int_char = Datatype::create_struct(&[1, 1], &[0, 4], &[int(), char_()]).unwrap();
    assert_eq!(int_char.extent(), 8);
    let char_short = Datatype::create_struct(&[1, 1], &[0, 2], &[char_(), basic(BasicType::Short)]).unwrap();
    assert_eq!(char_short.extent(), 4);
    let chars = Datatype::create_struct(&[3], &[0], &[char_()]).unwrap();
    assert_eq!(chars.extent(), 3);
    // Alignment of a nested derived type is that of its strictest member.
    let nested = Datatype::create_struct(&[1, 1], &[0, 16], &[double_char(), char_()]).unwrap();
    assert_eq!(nested.extent(), 24);
    // Only struct pads: an hvector with an odd stride keeps its exact bounds.
    assert_eq!(Datatype::hvector(2, 1, 3, &int()).unwrap().extent(), 7);
}

#[test]
fn resized_bounds_are_sticky_like_lb_ub_markers() {
    // §4.1.7: {(lb,-3),(int,0),(ub,6)} replicated twice spans -3..15.
    let t1 = Datatype::resized(&int(), -3, 9).unwrap();
    assert_eq!((t1.lb(), t1.extent(), t1.true_lb(), t1.true_extent()), (-3, 9, 0, 4));
    let t2 = Datatype::contiguous(2, &t1).unwrap();
    assert_eq!((t2.lb(), t2.extent()), (-3, 18));
    assert_eq!(entries(&t2), [(0, BasicType::Int), (9, BasicType::Int)]);
    assert_eq!((t2.true_lb(), t2.true_extent()), (0, 13));
    // In a struct, explicit bounds win over the ends of ordinary entries,
    // and an explicit upper bound switches the alignment padding off.
    let s = Datatype::create_struct(&[1, 1], &[0, 100], &[t1.clone(), double()]).unwrap();
    assert_eq!((s.lb(), s.extent()), (-3, 9));
    assert_eq!((s.true_lb(), s.true_extent()), (0, 108));
}

#[test]
fn resized_can_shrink_the_extent_for_column_scatter() {
    // A column of a 4x5 row-major double matrix, resized to one double so
    // that consecutive columns start one element apart.
    let col = Datatype::vector(4, 1, 5, &double()).unwrap();
    assert_eq!(col.extent(), (3 * 5 + 1) * 8);
    let col1 = Datatype::resized(&col, 0, 8).unwrap();
    assert_eq!((col1.lb(), col1.extent(), col1.size()), (0, 8, 32));
    assert_eq!(col1.true_extent(), 128);
    let m: Vec<f64> = (0..20).map(f64::from).collect();
    let mut out = Vec::new();
    unsafe { col1.pack(m.as_ptr().cast(), 5, &mut out) };
    let got: Vec<f64> = out.chunks(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect();
    let transposed: Vec<f64> = (0..5).flat_map(|c| (0..4).map(move |r| (r * 5 + c) as f64)).collect();
    assert_eq!(got, transposed);
}

#[test]
fn zero_counts_give_empty_types() {
    let types = [
        Datatype::contiguous(0, &int()).unwrap(),
        Datatype::vector(0, 3, 2, &int()).unwrap(),
        Datatype::vector(3, 0, 2, &int()).unwrap(),
        Datatype::indexed(&[], &[], &int()).unwrap(),
        Datatype::hindexed(&[0, 0], &[4, 8], &int()).unwrap(),
        Datatype::indexed_block(0, &[1, 2], &int()).unwrap(),
        Datatype::create_struct(&[], &[], &[]).unwrap(),
    ];
    for t in types {
        assert_eq!((t.size(), t.lb(), t.extent(), t.true_extent()), (0, 0, 0, 0), "{t:?}");
        assert!(t.is_contiguous());
        assert_eq!(t.basic_kind(), None);
    }
}

#[test]
fn extents_with_negative_displacements() {
    let t = Datatype::hindexed(&[1, 2], &[-16, 8], &int()).unwrap();
    assert_eq!((t.lb(), t.extent(), t.size()), (-16, 32, 12));
    let t = Datatype::indexed_block(2, &[-3, 1], &double()).unwrap();
    assert_eq!((t.lb(), t.extent()), (-24, 48));
}

#[test]
fn contiguity() {
    assert!(Datatype::contiguous(10, &int()).unwrap().is_contiguous());
    assert!(Datatype::vector(3, 2, 2, &int()).unwrap().is_contiguous());
    assert!(!Datatype::vector(3, 2, 3, &int()).unwrap().is_contiguous());
    assert!(Datatype::hindexed(&[1, 1], &[4, 8], &int()).unwrap().is_contiguous());
    // Data in order but the extent leaves a gap between elements.
    assert!(!Datatype::resized(&int(), 0, 8).unwrap().is_contiguous());
    // Adjacent but out of order: packing reorders, so not contiguous.
    assert!(!Datatype::hindexed(&[1, 1], &[4, 0], &int()).unwrap().is_contiguous());
}

#[test]
fn overflow_is_an_error_not_a_panic() {
    let big = Datatype::contiguous(1 << 40, &double()).unwrap();
    assert_eq!(Datatype::contiguous(1 << 40, &big).unwrap_err(), DatatypeError::Overflow);
    assert_eq!(Datatype::vector(4, 1, isize::MAX / 2, &int()).unwrap_err(), DatatypeError::Overflow);
    assert_eq!(Datatype::hvector(3, 1, isize::MAX / 2 + 1, &int()).unwrap_err(), DatatypeError::Overflow);
    assert_eq!(Datatype::indexed(&[1], &[isize::MIN / 2], &int()).unwrap_err(), DatatypeError::Overflow);
    assert_eq!(Datatype::hindexed(&[1], &[isize::MAX - 2], &int()).unwrap_err(), DatatypeError::Overflow);
    assert_eq!(Datatype::resized(&int(), isize::MAX, 1).unwrap_err(), DatatypeError::Overflow);
    assert_eq!(Datatype::contiguous(usize::MAX, &int()).unwrap_err(), DatatypeError::Overflow);
    let far = Datatype::hindexed(&[1, 1], &[isize::MIN + 8, isize::MAX - 8], &char_()).unwrap_err();
    assert_eq!(far, DatatypeError::Overflow);
}

#[test]
fn mismatched_argument_lengths_are_rejected() {
    assert!(matches!(Datatype::indexed(&[1, 2], &[0], &int()), Err(DatatypeError::BadArgument(_))));
    assert!(matches!(Datatype::hindexed(&[1], &[0, 4], &int()), Err(DatatypeError::BadArgument(_))));
    let e = Datatype::create_struct(&[1, 1], &[0, 4], &[int()]);
    assert!(matches!(e, Err(DatatypeError::BadArgument(_))));
}

#[test]
fn basic_kind_of_derived_types() {
    assert_eq!(Datatype::vector(3, 2, 5, &double()).unwrap().basic_kind(), Some(BasicType::Double));
    assert_eq!(double_char().basic_kind(), None);
    let pairs = Datatype::contiguous(4, &basic(BasicType::DoubleInt)).unwrap();
    assert_eq!(pairs.basic_kind(), Some(BasicType::DoubleInt));
    // Int and Int32 are distinct MPI types even if they look alike.
    let mixed = Datatype::create_struct(&[1, 1], &[0, 4], &[int(), basic(BasicType::Int32)]).unwrap();
    assert_eq!(mixed.basic_kind(), None);
}

#[test]
fn dup_keeps_layout_and_committed_state() {
    let t = Datatype::vector(2, 1, 3, &int()).unwrap();
    t.set_name("v");
    let d = t.dup();
    assert!(!d.is_committed());
    assert_eq!((d.size(), d.lb(), d.extent()), (t.size(), t.lb(), t.extent()));
    assert_eq!(d.name(), "");
    assert!(!d.ptr_eq(&t));
    t.commit();
    assert!(t.is_committed() && t.check_committed().is_ok());
    assert_eq!(d.check_committed(), Err(DatatypeError::NotCommitted));
    assert!(t.dup().is_committed());
}
