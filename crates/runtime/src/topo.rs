//! Cartesian topology data (MPI-3.1 §7.5), enough for benchmark utilities.

use wanmpi_engine::{error::err, ErrorClass, MpiResult};

use crate::comm::CommId;
use crate::p2p::comm_ref;
use crate::runtime::Runtime;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cart {
    pub dims: Vec<usize>,
    pub periods: Vec<bool>,
}

impl Cart {
    pub fn size(&self) -> usize {
        self.dims.iter().product()
    }

    /// Row-major coordinates of `rank`.
    pub fn coords(&self, rank: usize) -> Vec<usize> {
        let mut c = vec![0; self.dims.len()];
        let mut r = rank;
        for i in (0..self.dims.len()).rev() {
            c[i] = r % self.dims[i];
            r /= self.dims[i];
        }
        c
    }

    /// Rank at `coords`, wrapping periodic dimensions; `None` when outside a
    /// non-periodic dimension.
    pub fn rank(&self, coords: &[i64]) -> MpiResult<Option<usize>> {
        if coords.len() != self.dims.len() {
            return err(ErrorClass::Dims, format!("{} coordinates for {} dimensions", coords.len(), self.dims.len()));
        }
        let mut r = 0usize;
        for (i, &c) in coords.iter().enumerate() {
            let d = self.dims[i] as i64;
            let c = if self.periods[i] {
                c.rem_euclid(d)
            } else if c < 0 || c >= d {
                return Ok(None);
            } else {
                c
            };
            r = r * self.dims[i] + c as usize;
        }
        Ok(Some(r))
    }

    /// MPI_Cart_shift: (source, destination) for a displacement along `dim`.
    pub fn shift(&self, rank: usize, dim: usize, disp: i64) -> MpiResult<(Option<usize>, Option<usize>)> {
        if dim >= self.dims.len() {
            return err(ErrorClass::Dims, format!("dimension {dim} of a {}-dimensional grid", self.dims.len()));
        }
        let c: Vec<i64> = self.coords(rank).iter().map(|&x| x as i64).collect();
        let at = |delta: i64| {
            let mut d = c.clone();
            d[dim] += delta;
            self.rank(&d)
        };
        Ok((at(-disp)?, at(disp)?))
    }
}

/// `n` as a product of `k` factors in non-increasing order, as close to
/// each other as possible: the smallest spread between the largest and the
/// smallest factor. Ties go to the larger smallest factor, then the larger
/// next-to-smallest, and so on up (MPICH's choice, which its `dims5` test
/// checks: 13104 in 4 is 14 x 13 x 9 x 8, not 13 x 12 x 12 x 7).
fn balanced(n: usize, k: usize) -> Vec<usize> {
    let mut divisors: Vec<usize> = (1..).take_while(|d| d * d <= n).filter(|d| n.is_multiple_of(*d)).flat_map(|d| [d, n / d]).collect();
    divisors.sort_unstable();
    divisors.dedup();
    let mut best: Option<Vec<usize>> = None;
    search(n, k, n, &divisors, &mut Vec::with_capacity(k), &mut best);
    best.unwrap_or_else(|| vec![1; k])
}

/// Largest r with r^k <= n.
fn root(n: usize, k: usize) -> usize {
    let mut r = (n as f64).powf(1.0 / k as f64).round() as usize;
    while r > 1 && r.checked_pow(k as u32).is_none_or(|p| p > n) {
        r -= 1;
    }
    while (r + 1).checked_pow(k as u32).is_some_and(|p| p <= n) {
        r += 1;
    }
    r.max(1)
}

/// Whether the non-increasing factors `v` beat `b` (see [`balanced`]).
fn better(v: &[usize], b: &[usize]) -> bool {
    let (sv, sb) = (v[0] - v[v.len() - 1], b[0] - b[b.len() - 1]);
    sv < sb || (sv == sb && v.iter().rev().gt(b.iter().rev()))
}

/// Tries every non-increasing way to write `n` as `k` factors of at most
/// `cap` after the factors in `acc`, keeping the best in `best`. Each next
/// factor runs upward from the k-th root of what is left (the most
/// balanced first), and stops once even the best completion is worse than
/// `best`: the spread is at least the largest factor minus the smallest
/// factor still to come, which is at most the (k-1)-th root of the rest.
fn search(n: usize, k: usize, cap: usize, divisors: &[usize], acc: &mut Vec<usize>, best: &mut Option<Vec<usize>>) {
    if k == 1 {
        if n <= cap {
            acc.push(n);
            if best.as_ref().is_none_or(|b| better(acc, b)) {
                *best = Some(acc.clone());
            }
            acc.pop();
        }
        return;
    }
    // The largest remaining factor is at least the k-th root.
    let r = root(n, k);
    let from = divisors.partition_point(|&d| d < r);
    for &d in &divisors[from..] {
        if d > cap || d > n {
            break;
        }
        if !n.is_multiple_of(d) {
            continue;
        }
        let top = acc.first().copied().unwrap_or(d);
        if let Some(b) = best.as_ref() {
            if top.saturating_sub(root(n / d, k - 1)) > b[0] - b[b.len() - 1] {
                break;
            }
        }
        acc.push(d);
        search(n / d, k - 1, d, divisors, acc, best);
        acc.pop();
    }
}

/// Splits off, largest first, the primes of `n` that occur once and exceed
/// the square root of what is left: each must sit in a dimension of its
/// own, as no other factor can share it without making that dimension the
/// largest by far. At most `k - 1` are split off, and never the smallest
/// prime. Returns them and what is left of `n`. (MPICH does this before
/// balancing the rest, so the rest is balanced among itself; `dims5`
/// checks the outcome.)
fn split_large_primes(n: usize, k: usize) -> (Vec<usize>, usize) {
    let mut primes: Vec<(usize, u32)> = Vec::new();
    let mut m = n;
    let mut p = 2;
    while p * p <= m {
        if m.is_multiple_of(p) {
            let mut c = 0;
            while m.is_multiple_of(p) {
                m /= p;
                c += 1;
            }
            primes.push((p, c));
        }
        p += 1;
    }
    if m > 1 {
        primes.push((m, 1));
    }
    let (mut large, mut rest) = (Vec::new(), n);
    for &(p, c) in primes.iter().skip(1).rev() {
        if large.len() + 1 >= k || c != 1 || p * p <= rest {
            break;
        }
        large.push(p);
        rest /= p;
    }
    (large, rest)
}

/// MPI_Dims_create: fills zero entries of `dims` so their product is
/// `nnodes`, as balanced as possible, in non-increasing order.
pub fn dims_create(nnodes: usize, dims: &mut [usize]) -> MpiResult<()> {
    let fixed: usize = dims.iter().filter(|&&d| d > 0).product();
    if fixed == 0 || !nnodes.is_multiple_of(fixed) {
        return err(ErrorClass::Dims, format!("{nnodes} processes cannot be split with the fixed dimensions {dims:?}"));
    }
    let free = dims.iter().filter(|&&d| d == 0).count();
    if free == 0 {
        return if fixed == nnodes { Ok(()) } else { err(ErrorClass::Dims, "fixed dimensions do not multiply to the process count") };
    }
    let (mut parts, rest) = split_large_primes(nnodes / fixed, free);
    let k = free - parts.len();
    parts.extend(balanced(rest, k));
    parts.sort_unstable_by(|a, b| b.cmp(a));
    let mut it = parts.into_iter();
    for d in dims.iter_mut().filter(|d| **d == 0) {
        *d = it.next().unwrap_or(1);
    }
    Ok(())
}

impl Runtime {
    /// MPI_Cart_create (no reordering): the first prod(dims) ranks of `comm`
    /// form the grid; the others get `None`.
    pub fn cart_create(&self, comm: CommId, dims: &[usize], periods: &[bool]) -> MpiResult<Option<CommId>> {
        let cart = Cart { dims: dims.to_vec(), periods: periods.to_vec() };
        if dims.len() != periods.len() {
            return err(ErrorClass::Dims, "dims and periods differ in length");
        }
        let group = self.comm_group(comm)?;
        if cart.size() > group.size() {
            return err(ErrorClass::Dims, format!("a grid of {} processes on a communicator of {}", cart.size(), group.size()));
        }
        let ranks: Vec<i32> = (0..cart.size() as i32).collect();
        let sub = group.incl(&ranks)?;
        let id = self.comm_create(comm, &sub)?;
        if let Some(id) = id {
            if let Some(c) = self.lock().comms.get_mut(id) {
                c.cart = Some(cart);
            }
        }
        Ok(id)
    }

    /// The Cartesian topology of `comm`, if it has one (MPI_Topo_test, MPI_Cart_get).
    pub fn cart_get(&self, comm: CommId) -> MpiResult<Option<Cart>> {
        Ok(comm_ref(&self.lock(), comm)?.cart.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dims_and_coordinates() {
        let mut d = [0, 0];
        dims_create(12, &mut d).unwrap();
        assert_eq!(d, [4, 3]);
        let mut d = [0, 3, 0];
        dims_create(24, &mut d).unwrap();
        assert_eq!(d, [4, 3, 2]);
        assert!(dims_create(7, &mut [2, 0]).is_err());
        // As balanced as possible, not greedy (greedy gives 12 x 6).
        let mut d = [0, 0];
        dims_create(72, &mut d).unwrap();
        assert_eq!(d, [9, 8]);
        let mut d = [0, 0, 0];
        dims_create(72, &mut d).unwrap();
        assert_eq!(d, [6, 4, 3]);
        let mut d = [0, 0, 0, 0];
        dims_create(7, &mut d).unwrap();
        assert_eq!(d, [7, 1, 1, 1]);
        let mut d = [0, 0];
        dims_create(1 << 20, &mut d).unwrap();
        assert_eq!(d, [1024, 1024]);
        // Ties in spread go to the larger small factors.
        let mut d = [0; 4];
        dims_create(13104, &mut d).unwrap();
        assert_eq!(d, [14, 13, 9, 8]);
        // A prime above the square root of the rest gets a dimension of its
        // own, and the rest is balanced among itself.
        let mut d = [0; 3];
        dims_create(110, &mut d).unwrap();
        assert_eq!(d, [11, 5, 2]);
        let c = Cart { dims: vec![2, 3], periods: vec![false, true] };
        assert_eq!(c.coords(4), vec![1, 1]);
        assert_eq!(c.rank(&[1, 4]).unwrap(), Some(4));
        assert_eq!(c.rank(&[2, 0]).unwrap(), None);
        assert_eq!(c.shift(0, 1, 1).unwrap(), (Some(2), Some(1)));
        assert_eq!(c.shift(0, 0, 1).unwrap(), (None, Some(3)));
    }
}
