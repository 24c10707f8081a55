//! Random nested datatypes: pack∘unpack is the identity on data bytes,
//! packing matches the naive model, and so does element counting.

use proptest::prelude::*;

use super::oracle::{disjoint, pattern, reference_elements, Buf};
use super::pack_tests::check_round_trip;
use crate::datatype::{BasicType, Datatype};

fn leaf() -> impl Strategy<Value = Datatype> {
    use BasicType::*;
    prop::sample::select(vec![Char, Short, Int, Double, LongDouble, DoubleInt, ShortInt, CFloatComplex]).prop_map(Datatype::basic)
}

fn displs(n: usize, lo: isize, hi: isize) -> impl Strategy<Value = Vec<isize>> {
    prop::collection::vec(lo..hi, n)
}

/// Constructors with small arguments over a random inner type.
fn node(inner: BoxedStrategy<Datatype>) -> impl Strategy<Value = Datatype> {
    let t = inner.clone();
    prop_oneof![
        (0usize..4, t.clone()).prop_map(|(n, t)| Datatype::contiguous(n, &t).expect("contiguous")),
        (0usize..4, 0usize..3, -3isize..4, t.clone()).prop_map(|(c, b, s, t)| Datatype::vector(c, b, s, &t).expect("vector")),
        (0usize..4, 0usize..3, -40isize..60, t.clone()).prop_map(|(c, b, s, t)| Datatype::hvector(c, b, s, &t).expect("hvector")),
        (prop::collection::vec((0usize..3, -4isize..6), 0..4), t.clone()).prop_map(|(bd, t)| {
            let (b, d): (Vec<usize>, Vec<isize>) = bd.into_iter().unzip();
            Datatype::indexed(&b, &d, &t).expect("indexed")
        }),
        (prop::collection::vec((0usize..3, -50isize..80), 0..4), t.clone()).prop_map(|(bd, t)| {
            let (b, d): (Vec<usize>, Vec<isize>) = bd.into_iter().unzip();
            Datatype::hindexed(&b, &d, &t).expect("hindexed")
        }),
        (0usize..3, (0usize..4).prop_flat_map(|n| displs(n, -4, 6)), t.clone())
            .prop_map(|(b, d, t)| Datatype::indexed_block(b, &d, &t).expect("indexed_block")),
        (0usize..3, (0usize..4).prop_flat_map(|n| displs(n, -50, 80)), t.clone())
            .prop_map(|(b, d, t)| Datatype::hindexed_block(b, &d, &t).expect("hindexed_block")),
        prop::collection::vec((0usize..3, -50isize..80, t.clone()), 1..4).prop_map(|v| {
            let b: Vec<usize> = v.iter().map(|x| x.0).collect();
            let d: Vec<isize> = v.iter().map(|x| x.1).collect();
            let ts: Vec<Datatype> = v.into_iter().map(|x| x.2).collect();
            Datatype::create_struct(&b, &d, &ts).expect("struct")
        }),
        (-16isize..16, 0isize..64, t.clone()).prop_map(|(lb, e, t)| Datatype::resized(&t, lb, e).expect("resized")),
        t.prop_map(|t| t.dup()),
    ]
}

fn datatype() -> impl Strategy<Value = Datatype> {
    leaf().prop_recursive(3, 24, 4, |inner| node(inner.boxed()))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn pack_unpack_round_trip(t in datatype(), count in 0usize..4) {
        // Keep buffers small whatever the random strides did.
        prop_assume!(t.true_extent().unsigned_abs() < 1 << 16 && t.extent().unsigned_abs() < 1 << 14);
        check_round_trip(&t, count);
    }

    #[test]
    fn windows_and_fragments_agree_with_whole_pack(t in datatype(), count in 1usize..3, frag in 1usize..40) {
        prop_assume!(t.true_extent().unsigned_abs() < 1 << 16 && t.extent().unsigned_abs() < 1 << 14);
        prop_assume!(disjoint(&t, count));
        let src = Buf::for_type(&t, count, pattern);
        let mut whole = Vec::new();
        unsafe { t.pack(src.base(), count, &mut whole) };
        let mut dst = Buf::for_type(&t, count, |_| 0);
        let mut off = 0;
        while off < whole.len() {
            let mut piece = Vec::new();
            let n = unsafe { t.pack_range(src.base(), count, off, frag, &mut piece) };
            prop_assert_eq!(&piece[..], &whole[off..off + n]);
            let m = unsafe { t.unpack_range(&piece, dst.base_mut(), count, off) };
            prop_assert_eq!(m, n);
            off += n;
        }
        let mut again = Vec::new();
        unsafe { t.pack(dst.base(), count, &mut again) };
        prop_assert_eq!(again, whole);
    }

    #[test]
    fn element_counts_match_the_model(t in datatype(), extra in 0usize..64) {
        prop_assume!(t.size() < 1 << 12);
        let bytes = (t.size() * 2 + extra).min(t.size() * 3);
        prop_assert_eq!(t.elements_in(bytes), reference_elements(&t, bytes));
        let count = if t.size() == 0 { Some(0) } else if bytes % t.size() == 0 { Some(bytes / t.size()) } else { None };
        prop_assert_eq!(t.count_in(bytes), count);
    }
}
