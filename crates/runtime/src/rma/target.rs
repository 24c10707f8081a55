//! The target side of a window: requests arrive per origin, in the order
//! that origin issued them, and are applied to window memory one by one
//! during progress, under the runtime lock (so accumulates are atomic with
//! respect to each other, as MPI requires per basic element).
//!
//! Locks (MPI_Win_lock) are granted here. An origin's lock request is
//! queued ahead of its operations; while it cannot be granted, that
//! origin's queue waits (and only that one), so its operations never run
//! outside the lock, and the origin needs no round trip before issuing
//! them. Its unlock, queued after them, releases the lock once they ran.

use std::collections::{HashMap, VecDeque};

use wanmpi_engine::datatype::{BasicType, Datatype};
use wanmpi_engine::op::{Op, PredefOp};
use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use super::memory::{gather, scatter, Memory};
use super::wire::{Reply, Request};

/// A request being received, or received and not yet applied.
pub struct Arriving {
    pub id: Option<wanmpi_engine::RequestId>,
    pub buf: Vec<u8>,
}

#[derive(Default)]
pub struct Exposure {
    /// Per origin (world rank), its requests in issue order.
    pub queues: HashMap<u32, VecDeque<Arriving>>,
    exclusive: Option<u32>,
    shared: HashMap<u32, u32>,
    /// MPI_Win_complete notices received per origin (PSCW target side).
    pub completes: HashMap<u32, u32>,
    /// MPI_Win_post notices received per target (PSCW origin side).
    pub posts: HashMap<u32, u32>,
}

/// What applying one request led to.
pub enum Applied {
    /// Done; send this reply to the origin (if any).
    Reply(Option<Reply>),
    /// A lock that cannot be granted yet: the origin's queue waits.
    Wait,
}

impl Exposure {
    fn grantable(&self, exclusive: bool) -> bool {
        self.exclusive.is_none() && (!exclusive || self.shared.is_empty())
    }

    /// Applies request `req` from `origin` to `mem`.
    pub fn apply(&mut self, origin: u32, req: Request, mem: &Memory, disp_unit: usize) -> Applied {
        let ok = |id, data| Applied::Reply(Some(Reply { id, result: Ok(data) }));
        let fail = |id, e: MpiError| Applied::Reply(Some(Reply { id, result: Err((e.class as i32, e.msg)) }));
        match req {
            Request::Lock { id, exclusive } => {
                if !self.grantable(exclusive) {
                    return Applied::Wait;
                }
                if exclusive {
                    self.exclusive = Some(origin);
                } else {
                    *self.shared.entry(origin).or_default() += 1;
                }
                ok(id, vec![])
            }
            Request::Unlock { id } => {
                if self.exclusive == Some(origin) {
                    self.exclusive = None;
                } else if let Some(n) = self.shared.get_mut(&origin).filter(|n| **n > 0) {
                    *n -= 1;
                    if *n == 0 {
                        self.shared.remove(&origin);
                    }
                } else {
                    return fail(id, MpiError::new(ErrorClass::RmaSync, format!("rank {origin} unlocked a window it had not locked")));
                }
                ok(id, vec![])
            }
            Request::Post => {
                *self.posts.entry(origin).or_default() += 1;
                Applied::Reply(None)
            }
            Request::Complete => {
                *self.completes.entry(origin).or_default() += 1;
                Applied::Reply(None)
            }
            Request::Put { id, place, data } => {
                if data.len() as u64 != place.bytes() {
                    return fail(id, MpiError::new(ErrorClass::Type, "put data does not fill the target blocks"));
                }
                match mem.resolve(&place, disp_unit) {
                    // SAFETY: `resolve` checked every block against the window.
                    Ok(addr) => unsafe {
                        scatter(addr, &place, &data);
                        ok(id, vec![])
                    },
                    Err(e) => fail(id, e),
                }
            }
            Request::Get { id, place } => match mem.resolve(&place, disp_unit) {
                // SAFETY: as above.
                Ok(addr) => ok(id, unsafe { gather(addr, &place) }),
                Err(e) => fail(id, e),
            },
            Request::Acc { id, place, op, ty, fetch, data } => {
                let addr = match mem.resolve(&place, disp_unit) {
                    Ok(a) => a,
                    Err(e) => return fail(id, e),
                };
                if !fetch && place.blocks.len() == 1 && ty.size() == ty.extent() && data.len() as u64 == place.bytes() {
                    // One block of plain elements: combine in place, no copies.
                    let (off, len) = place.blocks[0];
                    // SAFETY: `resolve` checked the block against the window.
                    let target = unsafe { std::slice::from_raw_parts_mut((addr as *mut u8).wrapping_offset(off as isize), len as usize) };
                    let n = data.len() / ty.size().max(1);
                    return match Op::Predef(op).apply(ty, n, &data, target) {
                        Ok(()) => ok(id, vec![]),
                        Err(e) => fail(id, MpiError::new(ErrorClass::Op, e.to_string())),
                    };
                }
                // SAFETY: as above.
                let old = unsafe { gather(addr, &place) };
                match combine(op, ty, &data, &old) {
                    Ok(new) => {
                        // SAFETY: as above.
                        unsafe { scatter(addr, &place, &new) };
                        ok(id, if fetch { old } else { vec![] })
                    }
                    Err(e) => fail(id, e),
                }
            }
            Request::Cas { id, disp, ty, data } => {
                let n = ty.size();
                if data.len() != 2 * n {
                    return fail(id, MpiError::new(ErrorClass::Type, "compare-and-swap needs one compare and one new value"));
                }
                let place = super::wire::Place { disp, blocks: vec![(0, n as u64)] };
                let addr = match mem.resolve(&place, disp_unit) {
                    Ok(a) => a,
                    Err(e) => return fail(id, e),
                };
                // SAFETY: as above.
                let old = unsafe { gather(addr, &place) };
                if old[..] == data[..n] {
                    // SAFETY: as above.
                    unsafe { scatter(addr, &place, &data[n..]) };
                }
                ok(id, old)
            }
        }
    }
}

/// `origin op target` over packed elements of `ty` (the result MPI's
/// accumulate leaves in the target). Pair types are packed without their
/// padding, so they are spread to their extent for the op and back.
pub fn combine(op: PredefOp, ty: BasicType, origin: &[u8], target: &[u8]) -> MpiResult<Vec<u8>> {
    if origin.len() != target.len() || !origin.len().is_multiple_of(ty.size().max(1)) {
        return Err(MpiError::new(ErrorClass::Type, "accumulate data does not match the target blocks"));
    }
    if origin.is_empty() {
        return Ok(vec![]);
    }
    let n = origin.len() / ty.size().max(1);
    let apply = |input: &[u8], inout: &mut [u8]| Op::Predef(op).apply(ty, n, input, inout).map_err(|e| MpiError::new(ErrorClass::Op, e.to_string()));
    if ty.size() == ty.extent() {
        let mut out = target.to_vec();
        apply(origin, &mut out)?;
        return Ok(out);
    }
    let dt = Datatype::basic(ty);
    let spread = |packed: &[u8]| {
        let mut v = vec![0u8; n * ty.extent()];
        // SAFETY: `v` holds `n` elements of `ty`.
        unsafe { dt.unpack(packed, v.as_mut_ptr(), n) };
        v
    };
    let (a, mut b) = (spread(origin), spread(target));
    apply(&a, &mut b)?;
    let mut out = Vec::with_capacity(origin.len());
    // SAFETY: `b` holds `n` elements of `ty`.
    unsafe { dt.pack(b.as_ptr(), n, &mut out) };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::wire::Place;
    use super::*;

    fn window(bytes: &mut [u8]) -> Memory {
        Memory::Fixed { base: bytes.as_mut_ptr() as usize, size: bytes.len(), _owned: None, _mapping: None }
    }

    fn reply(a: Applied) -> Reply {
        match a {
            Applied::Reply(Some(r)) => r,
            _ => panic!("expected a reply"),
        }
    }

    #[test]
    fn exclusive_locks_exclude_and_shared_locks_share() {
        let mut x = Exposure::default();
        let mut mem = [0u8; 8];
        let m = window(&mut mem);
        assert!(matches!(x.apply(1, Request::Lock { id: 1, exclusive: false }, &m, 1), Applied::Reply(_)));
        assert!(matches!(x.apply(2, Request::Lock { id: 2, exclusive: false }, &m, 1), Applied::Reply(_)));
        assert!(matches!(x.apply(3, Request::Lock { id: 3, exclusive: true }, &m, 1), Applied::Wait));
        x.apply(1, Request::Unlock { id: 4 }, &m, 1);
        assert!(matches!(x.apply(3, Request::Lock { id: 3, exclusive: true }, &m, 1), Applied::Wait));
        x.apply(2, Request::Unlock { id: 5 }, &m, 1);
        assert!(matches!(x.apply(3, Request::Lock { id: 3, exclusive: true }, &m, 1), Applied::Reply(_)));
        assert!(matches!(x.apply(1, Request::Lock { id: 6, exclusive: false }, &m, 1), Applied::Wait));
        assert!(reply(x.apply(2, Request::Unlock { id: 7 }, &m, 1)).result.is_err(), "unlock without a lock");
    }

    #[test]
    fn accumulate_sums_and_fetches_the_old_value() {
        let mut mem = [0u8; 16];
        mem[..8].copy_from_slice(&5i64.to_le_bytes());
        let m = window(&mut mem);
        let mut x = Exposure::default();
        let place = Place { disp: 0, blocks: vec![(0, 8)] };
        let r = reply(x.apply(
            0,
            Request::Acc { id: 1, place, op: PredefOp::Sum, ty: BasicType::Int64, fetch: true, data: 3i64.to_le_bytes().to_vec() },
            &m,
            8,
        ));
        assert_eq!(r.result, Ok(5i64.to_le_bytes().to_vec()));
        assert_eq!(i64::from_le_bytes(mem[..8].try_into().unwrap()), 8);
    }

    #[test]
    fn compare_and_swap_swaps_only_on_equal() {
        let mut mem = [0u8; 4];
        let m = window(&mut mem);
        let mut x = Exposure::default();
        let cas = |cmp: i32, new: i32| Request::Cas { id: 1, disp: 0, ty: BasicType::Int, data: [cmp.to_le_bytes(), new.to_le_bytes()].concat() };
        assert_eq!(reply(x.apply(0, cas(1, 9), &m, 4)).result, Ok(0i32.to_le_bytes().to_vec()));
        assert_eq!(i32::from_le_bytes(mem), 0);
        assert_eq!(reply(x.apply(0, cas(0, 9), &m, 4)).result, Ok(0i32.to_le_bytes().to_vec()));
        assert_eq!(i32::from_le_bytes(mem), 9);
    }

    #[test]
    fn pair_types_accumulate_through_their_extent() {
        // MPI_DOUBLE_INT packs to 12 bytes, its extent is 16.
        let pack = |v: f64, i: i32| [v.to_le_bytes().to_vec(), i.to_le_bytes().to_vec()].concat();
        let out = combine(PredefOp::Maxloc, BasicType::DoubleInt, &pack(2.0, 7), &pack(1.0, 3)).unwrap();
        assert_eq!(out, pack(2.0, 7));
        assert!(combine(PredefOp::Sum, BasicType::Int, &[0; 4], &[0; 8]).is_err());
    }

    #[test]
    fn a_put_outside_the_window_changes_nothing() {
        let mut mem = [7u8; 8];
        let m = window(&mut mem);
        let mut x = Exposure::default();
        let r = reply(x.apply(0, Request::Put { id: 1, place: Place { disp: 6, blocks: vec![(0, 4)] }, data: vec![0; 4] }, &m, 1));
        assert_eq!(r.result.unwrap_err().0, ErrorClass::RmaRange as i32);
        assert_eq!(mem, [7u8; 8]);
    }
}
