//! Access modes of MPI_File_open (MPI-4.0 §14.2.1): the MPI_MODE_* bits
//! (MPICH's values) and which combinations are legal. The file is never
//! opened O_APPEND: Linux's pwrite would then ignore the offsets that
//! views compute; MPI_MODE_APPEND only places the initial pointers.

use wanmpi_engine::{error::err, ErrorClass, MpiResult};

pub const CREATE: i32 = 1;
pub const RDONLY: i32 = 2;
pub const WRONLY: i32 = 4;
pub const RDWR: i32 = 8;
pub const DELETE_ON_CLOSE: i32 = 16;
pub const UNIQUE_OPEN: i32 = 32;
pub const EXCL: i32 = 64;
pub const APPEND: i32 = 128;
pub const SEQUENTIAL: i32 = 256;

const ALL: i32 = CREATE | RDONLY | WRONLY | RDWR | DELETE_ON_CLOSE | UNIQUE_OPEN | EXCL | APPEND | SEQUENTIAL;

/// Checks `amode` as MPI_File_open must (MPI_ERR_AMODE when wrong).
pub fn check(amode: i32) -> MpiResult<()> {
    if amode & !ALL != 0 {
        return err(ErrorClass::Amode, format!("amode {amode:#x} has bits that are no MPI_MODE_* constant"));
    }
    let access = [RDONLY, WRONLY, RDWR].iter().filter(|m| amode & **m != 0).count();
    if access != 1 {
        return err(ErrorClass::Amode, "amode needs exactly one of MPI_MODE_RDONLY, MPI_MODE_WRONLY and MPI_MODE_RDWR");
    }
    if amode & RDONLY != 0 && amode & (CREATE | EXCL) != 0 {
        return err(ErrorClass::Amode, "MPI_MODE_RDONLY cannot go with MPI_MODE_CREATE or MPI_MODE_EXCL");
    }
    if amode & RDWR != 0 && amode & SEQUENTIAL != 0 {
        return err(ErrorClass::Amode, "MPI_MODE_RDWR cannot go with MPI_MODE_SEQUENTIAL");
    }
    Ok(())
}

pub fn readable(amode: i32) -> bool {
    amode & WRONLY == 0
}

pub fn writable(amode: i32) -> bool {
    amode & RDONLY == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legal_and_illegal_modes() {
        for ok in [RDONLY, WRONLY | CREATE, RDWR | CREATE | EXCL, WRONLY | SEQUENTIAL, RDWR | DELETE_ON_CLOSE | APPEND | UNIQUE_OPEN] {
            assert!(check(ok).is_ok(), "{ok:#x}");
        }
        for bad in [0, CREATE, RDONLY | WRONLY, RDONLY | CREATE, RDONLY | EXCL, RDWR | SEQUENTIAL, RDWR | 0x1000] {
            assert_eq!(check(bad).unwrap_err().class, ErrorClass::Amode, "{bad:#x}");
        }
    }
}
