//! System call failures as MPI-IO error classes (MPI-4.0 §14.7): the
//! class a program can act on (no such file, exists, access, read-only,
//! no space, quota), MPI_ERR_IO for the rest; the message keeps the
//! system's words and the file's name.

use std::io;

use wanmpi_engine::{ErrorClass, MpiError};

pub fn class_of(e: &io::Error) -> ErrorClass {
    match e.raw_os_error() {
        Some(libc::ENOENT) => ErrorClass::NoSuchFile,
        Some(libc::EEXIST) => ErrorClass::FileExists,
        Some(libc::EACCES | libc::EPERM) => ErrorClass::Access,
        Some(libc::EROFS) => ErrorClass::ReadOnly,
        Some(libc::ENOSPC | libc::EFBIG) => ErrorClass::NoSpace,
        Some(libc::EDQUOT) => ErrorClass::Quota,
        Some(libc::ETXTBSY | libc::EBUSY) => ErrorClass::FileInUse,
        Some(libc::ENAMETOOLONG | libc::ENOTDIR | libc::EISDIR | libc::ELOOP) => ErrorClass::BadFile,
        _ => ErrorClass::Io,
    }
}

/// `what` failed on `path` with `e`.
pub fn os_error(e: &io::Error, what: &str, path: &str) -> MpiError {
    MpiError::new(class_of(e), format!("{what} {path}: {e}"))
}

/// The error of the last system call.
pub fn last(what: &str, path: &str) -> MpiError {
    os_error(&io::Error::last_os_error(), what, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errno_to_class() {
        let c = |n| class_of(&io::Error::from_raw_os_error(n));
        assert_eq!(c(libc::ENOENT), ErrorClass::NoSuchFile);
        assert_eq!(c(libc::EEXIST), ErrorClass::FileExists);
        assert_eq!(c(libc::EACCES), ErrorClass::Access);
        assert_eq!(c(libc::EROFS), ErrorClass::ReadOnly);
        assert_eq!(c(libc::EIO), ErrorClass::Io);
    }
}
