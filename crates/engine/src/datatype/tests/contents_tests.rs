//! MPI_Type_get_envelope / MPI_Type_get_contents, per the table of §4.1.13.

use super::oracle::{double, int};
use crate::datatype::{Combiner, Datatype};

fn same(a: &[Datatype], b: &[&Datatype]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.ptr_eq(y))
}

#[test]
fn named_and_dup() {
    let i = int();
    assert_eq!(i.envelope(), (0, 0, 0, Combiner::Named));
    let (ints, addrs, types) = i.contents();
    assert!(ints.is_empty() && addrs.is_empty() && types.is_empty());
    let d = i.dup();
    assert_eq!(d.envelope(), (0, 0, 1, Combiner::Dup));
    assert!(same(&d.contents().2, &[&i]));
}

#[test]
fn contiguous_vector_hvector() {
    let i = int();
    let t = Datatype::contiguous(5, &i).unwrap();
    assert_eq!(t.envelope(), (1, 0, 1, Combiner::Contiguous));
    let (ints, addrs, types) = t.contents();
    assert_eq!((ints, addrs), (vec![5], vec![]));
    assert!(same(&types, &[&i]));

    let t = Datatype::vector(3, 2, -7, &i).unwrap();
    assert_eq!(t.envelope(), (3, 0, 1, Combiner::Vector));
    assert_eq!(t.contents().0, [3, 2, -7]);

    let t = Datatype::hvector(3, 2, -28, &i).unwrap();
    assert_eq!(t.envelope(), (2, 1, 1, Combiner::Hvector));
    let (ints, addrs, _) = t.contents();
    assert_eq!((ints, addrs), (vec![3, 2], vec![-28]));
}

#[test]
fn indexed_family() {
    let d = double();
    let t = Datatype::indexed(&[1, 2, 3], &[0, -4, 9], &d).unwrap();
    assert_eq!(t.envelope(), (7, 0, 1, Combiner::Indexed));
    assert_eq!(t.contents().0, [3, 1, 2, 3, 0, -4, 9]);

    let t = Datatype::hindexed(&[1, 2], &[16, -8], &d).unwrap();
    assert_eq!(t.envelope(), (3, 2, 1, Combiner::Hindexed));
    let (ints, addrs, types) = t.contents();
    assert_eq!((ints, addrs), (vec![2, 1, 2], vec![16, -8]));
    assert!(same(&types, &[&d]));

    let t = Datatype::indexed_block(4, &[2, 10, -1], &d).unwrap();
    assert_eq!(t.envelope(), (5, 0, 1, Combiner::IndexedBlock));
    assert_eq!(t.contents().0, [3, 4, 2, 10, -1]);

    let t = Datatype::hindexed_block(4, &[24, 80], &d).unwrap();
    assert_eq!(t.envelope(), (2, 2, 1, Combiner::HindexedBlock));
    let (ints, addrs, _) = t.contents();
    assert_eq!((ints, addrs), (vec![2, 4], vec![24, 80]));
}

#[test]
fn struct_and_resized() {
    let (i, d) = (int(), double());
    let t = Datatype::create_struct(&[2, 1], &[0, 8], &[i.clone(), d.clone()]).unwrap();
    assert_eq!(t.envelope(), (3, 2, 2, Combiner::Struct));
    let (ints, addrs, types) = t.contents();
    assert_eq!((ints, addrs), (vec![2, 2, 1], vec![0, 8]));
    assert!(same(&types, &[&i, &d]));

    let r = Datatype::resized(&t, -4, 32).unwrap();
    assert_eq!(r.envelope(), (0, 2, 1, Combiner::Resized));
    let (ints, addrs, types) = r.contents();
    assert_eq!((ints, addrs), (vec![], vec![-4, 32]));
    assert!(same(&types, &[&t]));
    assert_eq!(r.combiner(), Combiner::Resized);
}

#[test]
fn derived_types_start_unnamed_and_uncommitted() {
    let t = Datatype::contiguous(2, &int()).unwrap();
    assert_eq!(t.name(), "");
    assert!(!t.is_committed());
    t.set_name("pair of ints");
    t.commit();
    assert_eq!(t.name(), "pair of ints");
    assert!(t.is_committed());
}
