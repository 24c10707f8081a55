//! The few PMIx client calls a rank needs, from the system's `libpmix.so.2`
//! (OpenPMIx 4, Debian's `libpmix2`) loaded at run time: a rank that no
//! PMIx server started never loads it, and libmpi.so does not depend on it.
//! The structures mirror `pmix_common.h`; `tests::layout_matches_pmix_h`
//! checks them against the installed header.

use std::ffi::{c_char, c_int, c_void, CStr};

/// `PMIX_MAX_NSLEN + 1`.
pub const NSPACE_LEN: usize = 256;
/// `PMIX_MAX_KEYLEN + 1`.
pub const KEY_LEN: usize = 512;
pub const SUCCESS: c_int = 0;
/// `PMIX_RANK_UNDEF`: in a get, whichever process put the key.
pub const RANK_UNDEF: u32 = u32::MAX;
/// `PMIX_RANK_WILDCARD`: the job itself (job-level keys).
pub const RANK_WILDCARD: u32 = u32::MAX - 1;
pub const TYPE_BOOL: u16 = 1;
pub const TYPE_STRING: u16 = 3;
pub const TYPE_UINT32: u16 = 14;
/// `PMIX_GLOBAL`: visible to every process of the job.
pub const SCOPE_GLOBAL: u8 = 3;

/// `pmix_proc_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Proc {
    pub nspace: [c_char; NSPACE_LEN],
    pub rank: u32,
}

/// The union of `pmix_value_t` (24 bytes: its largest member is
/// `pmix_envar_t`, two pointers and a char).
#[repr(C)]
#[derive(Clone, Copy)]
pub union ValueData {
    pub flag: bool,
    pub string: *mut c_char,
    pub uint32: u32,
    pub raw: [u64; 3],
}

/// `pmix_value_t`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Value {
    pub kind: u16,
    pub data: ValueData,
}

/// `pmix_info_t`.
#[repr(C)]
pub struct Info {
    pub key: [c_char; KEY_LEN],
    pub flags: u32,
    pub value: Value,
}

impl Info {
    pub fn flag(key: &CStr, on: bool) -> Info {
        let mut k = [0 as c_char; KEY_LEN];
        for (d, s) in k.iter_mut().zip(key.to_bytes()) {
            *d = *s as c_char;
        }
        Info { key: k, flags: 0, value: Value { kind: TYPE_BOOL, data: ValueData { flag: on } } }
    }
}

type Status = c_int;

type InitFn = unsafe extern "C" fn(*mut Proc, *mut Info, usize) -> Status;
type FinalizeFn = unsafe extern "C" fn(*const Info, usize) -> Status;
type AbortFn = unsafe extern "C" fn(c_int, *const c_char, *mut Proc, usize) -> Status;
type PutFn = unsafe extern "C" fn(u8, *const c_char, *mut Value) -> Status;
type CommitFn = unsafe extern "C" fn() -> Status;
type FenceFn = unsafe extern "C" fn(*const Proc, usize, *const Info, usize) -> Status;
type GetFn = unsafe extern "C" fn(*const Proc, *const c_char, *const Info, usize, *mut *mut Value) -> Status;
type DestructFn = unsafe extern "C" fn(*mut Value);
type ErrorStringFn = unsafe extern "C" fn(Status) -> *const c_char;

/// The library and the entry points used.
pub struct Api {
    _lib: *mut c_void,
    pub init: InitFn,
    pub finalize: FinalizeFn,
    pub abort: AbortFn,
    pub put: PutFn,
    pub commit: CommitFn,
    pub fence: FenceFn,
    pub get: GetFn,
    pub value_destruct: DestructFn,
    pub error_string: ErrorStringFn,
}

// SAFETY: the handle and function pointers are plain addresses; libpmix's
// client calls may be made from any thread (it serialises them itself).
unsafe impl Send for Api {}

const LIBRARY: &CStr = c"libpmix.so.2";

fn dl_error() -> String {
    // SAFETY: dlerror returns NULL or a NUL-terminated string.
    let e = unsafe { libc::dlerror() };
    if e.is_null() {
        "unknown error".into()
    } else {
        // SAFETY: checked non-null above.
        unsafe { CStr::from_ptr(e) }.to_string_lossy().into_owned()
    }
}

impl Api {
    /// Loads libpmix. RTLD_GLOBAL because libpmix loads plugins of its own
    /// that look up its symbols.
    pub fn load() -> Result<Api, String> {
        // SAFETY: a NUL-terminated name; dlopen reports failure as NULL.
        let lib = unsafe { libc::dlopen(LIBRARY.as_ptr(), libc::RTLD_NOW | libc::RTLD_GLOBAL) };
        if lib.is_null() {
            return Err(format!("cannot load {}: {} (Debian: apt-get install libpmix2)", LIBRARY.to_string_lossy(), dl_error()));
        }
        let sym = |name: &CStr| -> Result<*mut c_void, String> {
            // SAFETY: lib is an open handle, name NUL-terminated.
            let p = unsafe { libc::dlsym(lib, name.as_ptr()) };
            if p.is_null() {
                Err(format!("{} lacks {}: {}", LIBRARY.to_string_lossy(), name.to_string_lossy(), dl_error()))
            } else {
                Ok(p)
            }
        };
        // SAFETY: each symbol is the PMIx function of that name, whose C
        // signature (pmix.h) is the one it is cast to.
        unsafe {
            Ok(Api {
                init: std::mem::transmute::<*mut c_void, InitFn>(sym(c"PMIx_Init")?),
                finalize: std::mem::transmute::<*mut c_void, FinalizeFn>(sym(c"PMIx_Finalize")?),
                abort: std::mem::transmute::<*mut c_void, AbortFn>(sym(c"PMIx_Abort")?),
                put: std::mem::transmute::<*mut c_void, PutFn>(sym(c"PMIx_Put")?),
                commit: std::mem::transmute::<*mut c_void, CommitFn>(sym(c"PMIx_Commit")?),
                fence: std::mem::transmute::<*mut c_void, FenceFn>(sym(c"PMIx_Fence")?),
                get: std::mem::transmute::<*mut c_void, GetFn>(sym(c"PMIx_Get")?),
                value_destruct: std::mem::transmute::<*mut c_void, DestructFn>(sym(c"PMIx_Value_destruct")?),
                error_string: std::mem::transmute::<*mut c_void, ErrorStringFn>(sym(c"PMIx_Error_string")?),
                _lib: lib,
            })
        }
    }

    /// PMIx's own words for a status.
    pub fn describe(&self, status: Status) -> String {
        // SAFETY: PMIx_Error_string returns a static string (or NULL).
        let s = unsafe { (self.error_string)(status) };
        let text = if s.is_null() {
            "unknown".into()
        } else {
            // SAFETY: checked non-null above.
            unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
        };
        format!("{text} ({status})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER_DIR: &str = "/usr/lib/x86_64-linux-gnu/pmix2/include";

    /// The structures above against `pmix_common.h`, by a C program built
    /// with the installed header (skipped, saying so, where it is absent).
    #[test]
    fn layout_matches_pmix_h() {
        if !std::path::Path::new(HEADER_DIR).join("pmix.h").is_file() {
            eprintln!("SKIPPED layout_matches_pmix_h: {HEADER_DIR}/pmix.h missing (apt-get install libpmix-dev)");
            return;
        }
        let dir = std::env::temp_dir().join(format!("wanmpi-pmix-layout-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("layout.c");
        std::fs::write(
            &src,
            "#include <stdio.h>\n#include <stddef.h>\n#include <pmix.h>\nint main(void){printf(\"%zu %zu %zu %zu %zu %zu %zu\\n\", \
             sizeof(pmix_proc_t), offsetof(pmix_proc_t, rank), sizeof(pmix_value_t), offsetof(pmix_value_t, data), \
             sizeof(pmix_info_t), offsetof(pmix_info_t, flags), offsetof(pmix_info_t, value));return 0;}\n",
        )
        .unwrap();
        let exe = dir.join("layout");
        let cc = std::process::Command::new("cc").arg(format!("-I{HEADER_DIR}")).arg(&src).arg("-o").arg(&exe).output().unwrap();
        assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));
        let out = std::process::Command::new(&exe).output().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        let c = String::from_utf8(out.stdout).unwrap();
        let ours = format!(
            "{} {} {} {} {} {} {}\n",
            std::mem::size_of::<Proc>(),
            std::mem::offset_of!(Proc, rank),
            std::mem::size_of::<Value>(),
            std::mem::offset_of!(Value, data),
            std::mem::size_of::<Info>(),
            std::mem::offset_of!(Info, flags),
            std::mem::offset_of!(Info, value),
        );
        assert_eq!(c, ours, "pmix.h's layout (left) differs from ffi.rs's");
    }
}
