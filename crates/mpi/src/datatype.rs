//! Rust types that have an MPI datatype (MPI-3.1 §3.2.2).

use wanmpi_runtime::{BasicType, Datatype};

/// A type whose values MPI can send as they are in memory.
///
/// # Safety
/// `datatype()` must describe exactly the memory layout of `Self`.
pub unsafe trait Equivalence: Copy + Default {
    fn datatype() -> Datatype;
}

macro_rules! equivalent {
    ($($t:ty => $b:ident),* $(,)?) => {
        $(unsafe impl Equivalence for $t {
            fn datatype() -> Datatype {
                Datatype::basic(BasicType::$b)
            }
        })*
    };
}

equivalent! {
    i8 => Int8, i16 => Int16, i32 => Int32, i64 => Int64,
    u8 => Uint8, u16 => Uint16, u32 => Uint32, u64 => Uint64,
    f32 => Float, f64 => Double, bool => CBool,
    isize => Aint, usize => Uint64,
}
