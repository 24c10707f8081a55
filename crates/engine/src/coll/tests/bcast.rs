use super::{data, SIZES};
use crate::coll::bcast;
use crate::coll::testing::run;
use crate::coll::CollComm;

#[test]
fn every_rank_gets_the_roots_buffer_from_every_root() {
    for size in SIZES {
        for root in 0..size {
            for len in [0, 1, 1000] {
                let out = run(size, |c| {
                    let mut buf = if c.rank() == root { data(root, len, 1) } else { vec![0; len] };
                    bcast(c, &mut buf, root).unwrap();
                    buf
                });
                for (r, (buf, _)) in out.iter().enumerate() {
                    assert_eq!(buf, &data(root, len, 1), "size {size} root {root} rank {r} len {len}");
                }
            }
        }
    }
}

#[test]
fn back_to_back_bcasts_from_different_roots() {
    let out = run(8, |c| {
        let mut seen = Vec::new();
        for root in [3, 0, 7, 3] {
            let mut buf = if c.rank() == root { data(root, 5, 2) } else { vec![0; 5] };
            bcast(c, &mut buf, root).unwrap();
            seen.push(buf);
        }
        seen
    });
    for (seen, _) in out {
        for (buf, root) in seen.iter().zip([3, 0, 7, 3]) {
            assert_eq!(buf, &data(root, 5, 2));
        }
    }
}
