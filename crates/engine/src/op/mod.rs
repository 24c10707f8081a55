//! Reduction operations (MPI-3.1 §5.9): the predefined operations of §5.9.2
//! on every basic type they apply to, MINLOC/MAXLOC on the pair types
//! (§5.9.4), and user-defined operations (§5.9.5).
//!
//! Everything works on plain byte buffers as they come off the wire: possibly
//! unaligned, in the machine's byte order. Operand order is MPI's:
//! `inout[i] = in[i] op inout[i]`, where `in` holds the lower ranks' data.
//!
//! Which type takes which operation comes from [`BasicType::op_class`], with
//! two choices beyond the letter of §5.9.2, as MPICH and Open MPI do:
//! `MPI_CHAR` and `MPI_WCHAR` are integers (so `MPI_SUM` on `MPI_CHAR` works),
//! and `MPI_AINT`/`MPI_OFFSET`/`MPI_COUNT` take the logical and bitwise
//! operations too. Integer arithmetic wraps. `long double` (x87, 80 bits in
//! 16 bytes) and `long double _Complex` are computed by a small C file
//! (`csrc/long_double.c`), because Rust has no such float.

mod bits;
mod complex;
mod elem;
mod floating;
mod integer;
mod long_double;
mod pair;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;

use crate::datatype::{BasicType, OpClass};

/// The predefined reduction operations (MPI_MAX ... MPI_NO_OP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PredefOp {
    Max,
    Min,
    Sum,
    Prod,
    Land,
    Band,
    Lor,
    Bor,
    Lxor,
    Bxor,
    Minloc,
    Maxloc,
    Replace,
    NoOp,
}

impl PredefOp {
    /// Every predefined operation, for table-driven tests.
    pub const ALL: [PredefOp; 14] = [
        PredefOp::Max,
        PredefOp::Min,
        PredefOp::Sum,
        PredefOp::Prod,
        PredefOp::Land,
        PredefOp::Band,
        PredefOp::Lor,
        PredefOp::Bor,
        PredefOp::Lxor,
        PredefOp::Bxor,
        PredefOp::Minloc,
        PredefOp::Maxloc,
        PredefOp::Replace,
        PredefOp::NoOp,
    ];

    pub const fn mpi_name(self) -> &'static str {
        use PredefOp::*;
        match self {
            Max => "MPI_MAX",
            Min => "MPI_MIN",
            Sum => "MPI_SUM",
            Prod => "MPI_PROD",
            Land => "MPI_LAND",
            Band => "MPI_BAND",
            Lor => "MPI_LOR",
            Bor => "MPI_BOR",
            Lxor => "MPI_LXOR",
            Bxor => "MPI_BXOR",
            Minloc => "MPI_MINLOC",
            Maxloc => "MPI_MAXLOC",
            Replace => "MPI_REPLACE",
            NoOp => "MPI_NO_OP",
        }
    }

    /// Whether this operation is defined on `ty` (MPI-3.1 §5.9.2, with the
    /// extensions listed in the module doc). Lets callers reject a bad
    /// (op, type) pair before any data moves.
    pub const fn is_defined_for(self, ty: BasicType) -> bool {
        use PredefOp::*;
        let class = ty.op_class();
        match self {
            Replace | NoOp => true,
            Max | Min => matches!(class, OpClass::Integer | OpClass::Floating),
            Sum | Prod => matches!(class, OpClass::Integer | OpClass::Floating | OpClass::Complex),
            // On real floating types too, as MPICH allows (programs and its tests use it).
            Land | Lor | Lxor => matches!(class, OpClass::Integer | OpClass::Logical | OpClass::Floating),
            Band | Bor | Bxor => matches!(class, OpClass::Integer | OpClass::Byte),
            Minloc | Maxloc => matches!(class, OpClass::Pair),
        }
    }
}

/// A user function (MPI_User_function): combines `count` elements of `in`
/// into `inout`, `inout[i] = in[i] op inout[i]`.
pub type UserFn = Arc<dyn Fn(&[u8], &mut [u8], usize) + Send + Sync>;

/// A reduction operation (MPI_Op).
#[derive(Clone)]
pub enum Op {
    Predef(PredefOp),
    User { func: UserFn, commute: bool },
}

impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Predef(p) => write!(f, "{}", p.mpi_name()),
            Op::User { commute, .. } => write!(f, "user op (commute={commute})"),
        }
    }
}

/// Why a reduction could not be applied. `NotDefined` maps to MPI_ERR_OP.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpError {
    #[error("{} is not defined for {} (MPI-3.1 §5.9.2)", op.mpi_name(), ty.mpi_name())]
    NotDefined { op: PredefOp, ty: BasicType },
    #[error(
        "reduction of {count} x {} needs {needed} bytes per operand, got {input} (in) and {inout} (inout)",
        ty.mpi_name()
    )]
    BufferLength { ty: BasicType, count: usize, needed: usize, input: usize, inout: usize },
    #[error("reduction of {count} x {} is larger than the address space", ty.mpi_name())]
    TooLarge { ty: BasicType, count: usize },
}

impl Op {
    /// MPI_Op_commutative. MPI_REPLACE and MPI_NO_OP keep one operand, so
    /// they are not.
    pub fn is_commutative(&self) -> bool {
        match self {
            Op::Predef(PredefOp::Replace | PredefOp::NoOp) => false,
            Op::Predef(_) => true,
            Op::User { commute, .. } => *commute,
        }
    }

    /// `inout[i] = in[i] op inout[i]` for `count` elements of `ty` (MPI's
    /// order: `in` is the lower rank's). Both buffers must be exactly
    /// `count * ty.extent()` bytes; they may be unaligned.
    pub fn apply(&self, ty: BasicType, count: usize, input: &[u8], inout: &mut [u8]) -> Result<(), OpError> {
        let needed = count.checked_mul(ty.extent()).ok_or(OpError::TooLarge { ty, count })?;
        if input.len() != needed || inout.len() != needed {
            return Err(OpError::BufferLength { ty, count, needed, input: input.len(), inout: inout.len() });
        }
        match self {
            Op::User { func, .. } => {
                func(input, inout, count);
                Ok(())
            }
            Op::Predef(op) => apply_predef(*op, ty, input, inout),
        }
    }
}

/// Buffers have been checked to be `count * ty.extent()` bytes each.
fn apply_predef(op: PredefOp, ty: BasicType, input: &[u8], inout: &mut [u8]) -> Result<(), OpError> {
    if !op.is_defined_for(ty) {
        return Err(OpError::NotDefined { op, ty });
    }
    match op {
        PredefOp::Replace => {
            inout.copy_from_slice(input);
            return Ok(());
        }
        PredefOp::NoOp => return Ok(()),
        _ => {}
    }
    let done = match ty.op_class() {
        OpClass::Integer => integer::reduce(op, ty, input, inout),
        OpClass::Floating => floating::reduce(op, ty, input, inout),
        OpClass::Complex => complex::reduce(op, ty, input, inout),
        OpClass::Logical => bits::reduce_bool(op, input, inout),
        OpClass::Byte => bits::reduce_byte(op, input, inout),
        OpClass::Pair => pair::reduce(op, ty, input, inout),
        OpClass::None => false,
    };
    // The families implement exactly the table of `is_defined_for`; a miss
    // here would be a bug in that agreement, reported rather than ignored.
    if done {
        Ok(())
    } else {
        Err(OpError::NotDefined { op, ty })
    }
}
