//! MPI_Get_elements and MPI_Get_count (§3.2.5, §4.1.11).

use super::oracle::{char_, double, double_char, int, reference_elements};
use crate::datatype::{BasicType, Datatype};

#[test]
fn count_of_whole_elements_or_undefined() {
    let t = Datatype::contiguous(3, &int()).unwrap(); // 12 bytes
    assert_eq!(t.count_in(0), Some(0));
    assert_eq!(t.count_in(24), Some(2));
    assert_eq!(t.count_in(16), None);
    assert_eq!(t.elements_in(16), Some(4));
    assert_eq!(t.elements_in(18), None);
}

#[test]
fn elements_of_a_mixed_struct_in_partial_messages() {
    let t = double_char(); // double then char: 9 bytes
    let cases = [
        (0, Some(0), Some(0)),
        (8, Some(1), None),
        (9, Some(2), Some(1)),
        (17, Some(3), None),
        (18, Some(4), Some(2)),
        (5, None, None),
        (12, None, None),
    ];
    for (bytes, elements, count) in cases {
        assert_eq!(t.elements_in(bytes), elements, "elements in {bytes}");
        assert_eq!(t.count_in(bytes), count, "count in {bytes}");
    }
}

#[test]
fn pair_types_count_two_elements_like_mpich() {
    let di = Datatype::basic(BasicType::DoubleInt);
    // MPICH's get-elements-pairtype: {double, int, double} received as two
    // MPI_DOUBLE_INT is 20 bytes and 3 elements.
    assert_eq!(di.elements_in(20), Some(3));
    assert_eq!(di.count_in(20), None);
    assert_eq!(di.elements_in(24), Some(4));
    assert_eq!(di.count_in(24), Some(2));
    assert_eq!(di.elements_in(10), None);
    let si = Datatype::basic(BasicType::ShortInt);
    assert_eq!(si.elements_in(2), Some(1));
    assert_eq!(si.elements_in(4), None);
    assert_eq!(si.elements_in(6), Some(2));
    let pairs = Datatype::contiguous(3, &Datatype::basic(BasicType::TwoInt)).unwrap();
    assert_eq!(pairs.elements_in(24), Some(6));
    assert_eq!(pairs.elements_in(12), Some(3));
}

#[test]
fn zero_size_types_count_zero() {
    let empty = Datatype::contiguous(0, &int()).unwrap();
    assert_eq!(empty.count_in(0), Some(0));
    assert_eq!(empty.elements_in(0), Some(0));
}

#[test]
fn long_signatures_with_repeat_nodes_count_like_the_model() {
    // A struct element repeated far past the flattening limit.
    let t = Datatype::vector(600, 2, 3, &Datatype::create_struct(&[1, 2], &[0, 8], &[int(), char_()]).unwrap()).unwrap();
    for bytes in [0, 1, 4, 5, 6, 7, 3000, 7199, 7200, 7204, 12345, 14400, 14406] {
        assert_eq!(t.elements_in(bytes), reference_elements(&t, bytes), "{bytes} bytes");
    }
    assert_eq!(t.elements_in(7200), Some(3600));
}

#[test]
fn nested_mixed_types_count_like_the_model() {
    let inner = Datatype::create_struct(&[1, 1], &[0, 8], &[double(), Datatype::basic(BasicType::ShortInt)]).unwrap();
    let t = Datatype::create_struct(&[2, 3], &[0, 64], &[inner, char_()]).unwrap();
    for bytes in 0..=3 * t.size() {
        assert_eq!(t.elements_in(bytes), reference_elements(&t, bytes), "{bytes} bytes");
    }
}
