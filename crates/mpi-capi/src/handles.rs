//! MPICH-ABI handle values. A handle is an `int`: bits 30-31 say the kind
//! (0 invalid/null, 1 builtin, 2 direct, 3 indirect), bits 26-29 the object
//! type, the low 26 bits an index. Builtin handles name fixed objects (see
//! `predef.rs`); user objects get direct handles indexing our own tables.

use std::collections::HashMap;

pub const KIND_BUILTIN: u32 = 1;
pub const KIND_DIRECT: u32 = 2;
pub const KIND_INDIRECT: u32 = 3;

/// MPICH's object type numbers (bits 26-29).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Obj {
    Comm = 0x1,
    Group = 0x2,
    Datatype = 0x3,
    Errhandler = 0x5,
    Op = 0x6,
    Info = 0x7,
    Win = 0x8,
    Keyval = 0x9,
    Request = 0xb,
    Session = 0xe,
}

/// First index handed to user objects. MPICH's pair datatypes
/// (MPI_FLOAT_INT, ...) use direct datatype indices 0..=4, so user indices
/// start above them for every kind.
pub const FIRST_USER_INDEX: u32 = 64;
const INDEX_MASK: u32 = (1 << 26) - 1;

pub const fn make(kind: u32, obj: Obj, index: u32) -> i32 {
    ((kind << 30) | ((obj as u32) << 26) | (index & INDEX_MASK)) as i32
}

/// (kind, object type, index) of a handle.
pub fn split(h: i32) -> (u32, u32, u32) {
    let u = h as u32;
    (u >> 30, (u >> 26) & 0xf, u & INDEX_MASK)
}

/// A table of user objects of one kind, addressed by direct handles.
/// Freed slots are reused (request handles churn quickly); the 26-bit
/// index space is the limit.
pub struct Table<T> {
    obj: Obj,
    kind: u32,
    items: HashMap<u32, T>,
    free: Vec<u32>,
    next: u32,
}

impl<T> Table<T> {
    pub fn new(obj: Obj, kind: u32) -> Table<T> {
        Table { obj, kind, items: HashMap::new(), free: Vec::new(), next: FIRST_USER_INDEX }
    }

    /// Stores `v` and returns its handle; `None` when the index space is full.
    pub fn insert(&mut self, v: T) -> Option<i32> {
        let idx = match self.free.pop() {
            Some(i) => i,
            None if self.next <= INDEX_MASK => {
                self.next += 1;
                self.next - 1
            }
            None => return None,
        };
        self.items.insert(idx, v);
        Some(make(self.kind, self.obj, idx))
    }

    fn index(&self, h: i32) -> Option<u32> {
        let (kind, obj, idx) = split(h);
        (kind == self.kind && obj == self.obj as u32).then_some(idx)
    }

    pub fn get(&self, h: i32) -> Option<&T> {
        self.index(h).and_then(|i| self.items.get(&i))
    }
    pub fn get_mut(&mut self, h: i32) -> Option<&mut T> {
        self.index(h).and_then(|i| self.items.get_mut(&i))
    }
    pub fn remove(&mut self, h: i32) -> Option<T> {
        let i = self.index(h)?;
        let v = self.items.remove(&i)?;
        self.free.push(i);
        Some(v)
    }
    pub fn iter(&self) -> impl Iterator<Item = (i32, &T)> {
        self.items.iter().map(|(i, v)| (make(self.kind, self.obj, *i), v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_follow_mpich_bit_layout() {
        assert_eq!(make(KIND_BUILTIN, Obj::Comm, 0) as u32, 0x4400_0000);
        assert_eq!(make(KIND_BUILTIN, Obj::Op, 3) as u32, 0x5800_0003);
        assert_eq!(split(0x4c00_0405), (1, 3, 0x405));
        let mut t: Table<&str> = Table::new(Obj::Group, KIND_DIRECT);
        let a = t.insert("a").unwrap();
        assert_eq!(split(a), (2, 2, FIRST_USER_INDEX));
        assert_eq!(t.get(a), Some(&"a"));
        assert!(t.get(make(KIND_DIRECT, Obj::Comm, FIRST_USER_INDEX)).is_none());
        assert_eq!(t.remove(a), Some("a"));
        assert!(t.get(a).is_none());
    }
}
