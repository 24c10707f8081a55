//! Packet buffers, allocated once and recycled: the forwarder does not
//! allocate per packet. Two size classes, so that a queue full of small
//! packets does not pin 64 KiB each. The pool grows on demand up to a byte
//! cap, then refuses (the caller drops the packet and counts it).

pub const SMALL: usize = 2048;
pub const LARGE: usize = 65536;

pub type BufId = u32;

pub struct Pool {
    bufs: Vec<Box<[u8]>>,
    free_small: Vec<BufId>,
    free_large: Vec<BufId>,
    bytes: usize,
    cap_bytes: usize,
}

impl Pool {
    pub fn new(cap_bytes: usize) -> Self {
        let mut p = Pool { bufs: Vec::new(), free_small: Vec::new(), free_large: Vec::new(), bytes: 0, cap_bytes };
        // a warm start, so that ordinary runs never grow the pool
        for _ in 0..256 {
            if let Some(id) = p.grow(SMALL) {
                p.free_small.push(id);
            }
        }
        for _ in 0..64 {
            if let Some(id) = p.grow(LARGE) {
                p.free_large.push(id);
            }
        }
        p
    }

    fn grow(&mut self, size: usize) -> Option<BufId> {
        if self.bytes + size > self.cap_bytes || self.bufs.len() >= u32::MAX as usize {
            return None;
        }
        self.bytes += size;
        self.bufs.push(vec![0u8; size].into_boxed_slice());
        Some((self.bufs.len() - 1) as BufId)
    }

    /// A buffer of at least `len` bytes (`len <= LARGE`), or None when full.
    pub fn get(&mut self, len: usize) -> Option<BufId> {
        if len <= SMALL {
            // fall back to a large buffer rather than dropping
            self.free_small.pop().or_else(|| self.grow(SMALL)).or_else(|| self.free_large.pop())
        } else {
            self.free_large.pop().or_else(|| self.grow(LARGE))
        }
    }

    pub fn put(&mut self, id: BufId) {
        if self.bufs[id as usize].len() == SMALL {
            self.free_small.push(id);
        } else {
            self.free_large.push(id);
        }
    }

    pub fn buf(&self, id: BufId) -> &[u8] {
        &self.bufs[id as usize]
    }

    pub fn buf_mut(&mut self, id: BufId) -> &mut [u8] {
        &mut self.bufs[id as usize]
    }

    /// Copy the first `n` bytes of buffer `from` into buffer `to`.
    pub fn copy(&mut self, from: BufId, to: BufId, n: usize) {
        // take the source out for the copy (an empty boxed slice does not allocate)
        let src = std::mem::take(&mut self.bufs[from as usize]);
        self.bufs[to as usize][..n].copy_from_slice(&src[..n]);
        self.bufs[from as usize] = src;
    }

    pub fn buffers(&self) -> usize {
        self.bufs.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recycles_and_respects_cap() {
        let mut p = Pool::new(256 * SMALL + 64 * LARGE + LARGE);
        let start = p.buffers();
        let a = p.get(LARGE).unwrap();
        p.put(a);
        let b = p.get(100).unwrap();
        assert_eq!(p.buf(b).len(), SMALL);
        p.put(b);
        assert_eq!(p.buffers(), start, "no growth while buffers are free");
        let held: Vec<BufId> = (0..65).map(|_| p.get(LARGE).unwrap()).collect();
        assert!(p.get(LARGE).is_none(), "cap reached");
        assert_eq!(held.len(), 65);
    }
}
