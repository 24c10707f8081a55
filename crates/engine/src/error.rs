//! MPI error classes (MPI-3.1 §8.4) and the engine's error value.
//!
//! The numeric values are MPICH's, because the C API follows the MPICH ABI;
//! the engine itself only ever names the enum.

use thiserror::Error;

/// An MPI error class. `ProcFailed` is ULFM's MPIX_ERR_PROC_FAILED.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum ErrorClass {
    Buffer = 1,
    Count = 2,
    Type = 3,
    Tag = 4,
    Comm = 5,
    Rank = 6,
    Root = 7,
    Group = 8,
    Op = 9,
    Topology = 10,
    Dims = 11,
    Arg = 12,
    Unknown = 13,
    Truncate = 14,
    Other = 15,
    Intern = 16,
    InStatus = 17,
    Pending = 18,
    Request = 19,
    Access = 20,
    Amode = 21,
    BadFile = 22,
    Conversion = 23,
    DupDatarep = 24,
    FileExists = 25,
    FileInUse = 26,
    File = 27,
    Info = 28,
    InfoKey = 29,
    InfoValue = 30,
    InfoNokey = 31,
    Io = 32,
    NoMem = 34,
    NotSame = 35,
    NoSpace = 36,
    NoSuchFile = 37,
    Quota = 39,
    ReadOnly = 40,
    UnsupportedDatarep = 43,
    Keyval = 48,
    Win = 45,
    Base = 46,
    Locktype = 47,
    RmaConflict = 49,
    RmaSync = 50,
    Size = 51,
    Disp = 52,
    Assert = 53,
    RmaRange = 55,
    RmaAttach = 56,
    RmaShared = 57,
    RmaFlavor = 58,
    UnsupportedOperation = 44,
    Session = 75,
    ProcAborted = 76,
    ProcFailed = 101,
}

impl ErrorClass {
    /// The class whose MPICH number is `code`, if any (a reply from a peer,
    /// a user callback's return code).
    pub fn from_code(code: i32) -> Option<ErrorClass> {
        use ErrorClass::*;
        [
            Buffer,
            Count,
            Type,
            Tag,
            Comm,
            Rank,
            Root,
            Group,
            Op,
            Topology,
            Dims,
            Arg,
            Unknown,
            Truncate,
            Other,
            Intern,
            InStatus,
            Pending,
            Request,
            Access,
            Amode,
            BadFile,
            Conversion,
            DupDatarep,
            FileExists,
            FileInUse,
            File,
            Info,
            InfoKey,
            InfoValue,
            InfoNokey,
            Io,
            NoMem,
            NotSame,
            NoSpace,
            NoSuchFile,
            Quota,
            ReadOnly,
            UnsupportedDatarep,
            Keyval,
            Win,
            Base,
            Locktype,
            RmaConflict,
            RmaSync,
            Size,
            Disp,
            Assert,
            RmaRange,
            RmaAttach,
            RmaShared,
            RmaFlavor,
            UnsupportedOperation,
            Session,
            ProcAborted,
            ProcFailed,
        ]
        .into_iter()
        .find(|c| *c as i32 == code)
    }

    /// The C name of the class, for messages.
    pub fn mpi_name(self) -> &'static str {
        use ErrorClass::*;
        match self {
            Buffer => "MPI_ERR_BUFFER",
            Count => "MPI_ERR_COUNT",
            Type => "MPI_ERR_TYPE",
            Tag => "MPI_ERR_TAG",
            Comm => "MPI_ERR_COMM",
            Rank => "MPI_ERR_RANK",
            Root => "MPI_ERR_ROOT",
            Group => "MPI_ERR_GROUP",
            Op => "MPI_ERR_OP",
            Topology => "MPI_ERR_TOPOLOGY",
            Dims => "MPI_ERR_DIMS",
            Arg => "MPI_ERR_ARG",
            Unknown => "MPI_ERR_UNKNOWN",
            Truncate => "MPI_ERR_TRUNCATE",
            Other => "MPI_ERR_OTHER",
            Intern => "MPI_ERR_INTERN",
            InStatus => "MPI_ERR_IN_STATUS",
            Pending => "MPI_ERR_PENDING",
            Request => "MPI_ERR_REQUEST",
            Access => "MPI_ERR_ACCESS",
            Amode => "MPI_ERR_AMODE",
            BadFile => "MPI_ERR_BAD_FILE",
            Conversion => "MPI_ERR_CONVERSION",
            DupDatarep => "MPI_ERR_DUP_DATAREP",
            FileExists => "MPI_ERR_FILE_EXISTS",
            FileInUse => "MPI_ERR_FILE_IN_USE",
            File => "MPI_ERR_FILE",
            Io => "MPI_ERR_IO",
            NotSame => "MPI_ERR_NOT_SAME",
            NoSpace => "MPI_ERR_NO_SPACE",
            NoSuchFile => "MPI_ERR_NO_SUCH_FILE",
            Quota => "MPI_ERR_QUOTA",
            ReadOnly => "MPI_ERR_READ_ONLY",
            UnsupportedDatarep => "MPI_ERR_UNSUPPORTED_DATAREP",
            Info => "MPI_ERR_INFO",
            InfoKey => "MPI_ERR_INFO_KEY",
            InfoValue => "MPI_ERR_INFO_VALUE",
            InfoNokey => "MPI_ERR_INFO_NOKEY",
            NoMem => "MPI_ERR_NO_MEM",
            Keyval => "MPI_ERR_KEYVAL",
            Win => "MPI_ERR_WIN",
            Base => "MPI_ERR_BASE",
            Locktype => "MPI_ERR_LOCKTYPE",
            RmaConflict => "MPI_ERR_RMA_CONFLICT",
            RmaSync => "MPI_ERR_RMA_SYNC",
            Size => "MPI_ERR_SIZE",
            Disp => "MPI_ERR_DISP",
            Assert => "MPI_ERR_ASSERT",
            RmaRange => "MPI_ERR_RMA_RANGE",
            RmaAttach => "MPI_ERR_RMA_ATTACH",
            RmaShared => "MPI_ERR_RMA_SHARED",
            RmaFlavor => "MPI_ERR_RMA_FLAVOR",
            UnsupportedOperation => "MPI_ERR_UNSUPPORTED_OPERATION",
            Session => "MPI_ERR_SESSION",
            ProcAborted => "MPI_ERR_PROC_ABORTED",
            ProcFailed => "MPIX_ERR_PROC_FAILED",
        }
    }

    /// The standard's one-line description of the class.
    pub fn description(self) -> &'static str {
        use ErrorClass::*;
        match self {
            Buffer => "invalid buffer pointer",
            Count => "invalid count argument",
            Type => "invalid datatype",
            Tag => "invalid tag",
            Comm => "invalid communicator",
            Rank => "invalid rank",
            Root => "invalid root",
            Group => "invalid group",
            Op => "invalid reduce operation",
            Topology => "invalid topology",
            Dims => "invalid dimension argument",
            Arg => "invalid argument",
            Unknown => "unknown error",
            Truncate => "message truncated",
            Other => "other error",
            Intern => "internal error",
            InStatus => "error code is in status",
            Pending => "pending request",
            Request => "invalid request",
            Access => "permission denied",
            Amode => "invalid amode argument",
            BadFile => "invalid file name",
            Conversion => "an error in a user-supplied data conversion function",
            DupDatarep => "data representation identifier already registered",
            FileExists => "file exists",
            FileInUse => "file operation could not be completed, the file is in use",
            File => "invalid file handle",
            Io => "I/O error",
            NotSame => "collective argument not identical on all processes",
            NoSpace => "not enough space",
            NoSuchFile => "file does not exist",
            Quota => "quota exceeded",
            ReadOnly => "read-only file or file system",
            UnsupportedDatarep => "unsupported data representation",
            Info => "invalid info object",
            InfoKey => "invalid info key",
            InfoValue => "invalid info value",
            InfoNokey => "info key not defined",
            NoMem => "out of memory",
            Keyval => "invalid attribute key",
            Win => "invalid window",
            Base => "invalid base address",
            Locktype => "invalid lock type",
            RmaConflict => "conflicting accesses to a window",
            RmaSync => "wrong synchronization of RMA calls",
            Size => "invalid size argument",
            Disp => "invalid displacement argument",
            Assert => "invalid assert argument",
            RmaRange => "target memory is not part of the window",
            RmaAttach => "memory cannot be attached",
            RmaShared => "memory cannot be shared",
            RmaFlavor => "passed window has the wrong flavor for the called function",
            UnsupportedOperation => "operation not supported",
            Session => "invalid session",
            ProcAborted => "peer process aborted",
            ProcFailed => "peer process failed",
        }
    }
}

/// An MPI error: its class and a message saying what was wrong.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("{}: {msg}", class.mpi_name())]
pub struct MpiError {
    pub class: ErrorClass,
    pub msg: String,
}

impl MpiError {
    pub fn new(class: ErrorClass, msg: impl Into<String>) -> MpiError {
        MpiError { class, msg: msg.into() }
    }
}

/// Shorthand for building an error in argument checks.
pub fn err<T>(class: ErrorClass, msg: impl Into<String>) -> Result<T, MpiError> {
    Err(MpiError::new(class, msg))
}

pub type MpiResult<T> = Result<T, MpiError>;
