//! The directory of published names, opened so that nobody else's can
//! stand in for it: a name holds a port's secret, so a directory another
//! user can read, or swap (a symbolic link, a directory they created first
//! under the name we would use), would hand them our ports or feed us
//! theirs.
//!
//! The directory is `WANMPI_NAME_DIR`, else `$XDG_RUNTIME_DIR/wanmpi-names`
//! (a per-user directory nobody else can create names in), else
//! `wanmpi-names-UID` in the temporary directory. It is created 0700 when
//! missing, then opened without following a symbolic link and checked
//! through that descriptor (ours, a directory, no group or other bits);
//! every file is then reached relative to the descriptor (`openat`), so
//! what was checked is what is used.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

/// Where published names live (see the module doc for the default).
pub const ENV_NAME_DIR: &str = "WANMPI_NAME_DIR";

/// An open, checked name directory.
pub(super) struct NameDir {
    fd: OwnedFd,
    path: PathBuf,
}

fn uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
}

fn c_path(p: &Path) -> MpiResult<CString> {
    CString::new(p.as_os_str().as_bytes()).map_err(|_| MpiError::new(ErrorClass::Service, format!("{} holds a NUL byte", p.display())))
}

/// A user's name, for messages (`uid 1000 (alice)`).
fn who(owner: u32) -> String {
    let mut buf = vec![0 as libc::c_char; 4096];
    // SAFETY: all-zero is a valid passwd to be filled in.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: getpwuid_r writes into `pw` and `buf` (of the given length)
    // and sets `found` to `&pw` or null.
    let rc = unsafe { libc::getpwuid_r(owner, &mut pw, buf.as_mut_ptr(), buf.len(), &mut found) };
    if rc != 0 || found.is_null() || pw.pw_name.is_null() {
        return format!("uid {owner}");
    }
    // SAFETY: pw_name points into `buf`, NUL-terminated by getpwuid_r.
    let name = unsafe { std::ffi::CStr::from_ptr(pw.pw_name) }.to_string_lossy().into_owned();
    format!("uid {owner} ({name})")
}

impl NameDir {
    /// The directory this process publishes in (see the module doc).
    pub fn from_env() -> MpiResult<NameDir> {
        let chosen = match std::env::var_os(ENV_NAME_DIR).filter(|d| !d.is_empty()) {
            Some(d) => PathBuf::from(d),
            None => match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from).filter(|d| d.is_absolute() && d.is_dir()) {
                Some(run) => run.join("wanmpi-names"),
                None => std::env::temp_dir().join(format!("wanmpi-names-{}", uid())),
            },
        };
        NameDir::open(&chosen)
    }

    /// Creates `path` (0700) if missing, opens and checks it.
    pub fn open(path: &Path) -> MpiResult<NameDir> {
        let c = c_path(path)?;
        let fail = |why: String| MpiError::new(ErrorClass::Service, format!("the name directory {}: {why}", path.display()));
        let advice = format!("set {ENV_NAME_DIR} to a directory of this user's with mode 0700");
        // SAFETY: a valid C string; mkdir creates nothing if the name exists.
        if unsafe { libc::mkdir(c.as_ptr(), 0o700) } != 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::AlreadyExists {
                return Err(fail(format!("cannot create it: {e}")));
            }
        }
        // SAFETY: a valid C string; the flags open a directory, never
        // through a symbolic link in the last component.
        let fd = unsafe { libc::open(c.as_ptr(), libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC) };
        if fd < 0 {
            let e = std::io::Error::last_os_error();
            // With O_DIRECTORY, Linux says ENOTDIR for a link: ask lstat.
            let link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
            return Err(fail(match e.raw_os_error() {
                _ if link => format!("is a symbolic link, which someone could point elsewhere; remove it, or {advice}"),
                Some(libc::ELOOP) => format!("is a symbolic link, which someone could point elsewhere; remove it, or {advice}"),
                Some(libc::ENOTDIR) => format!("is not a directory; remove it, or {advice}"),
                _ => format!("cannot open it: {e}"),
            }));
        }
        // SAFETY: a descriptor we just opened and own alone.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: fstat fills the zeroed struct for an open descriptor.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
            return Err(fail(format!("cannot check it: {}", std::io::Error::last_os_error())));
        }
        if st.st_uid != uid() {
            return Err(fail(format!(
                "belongs to {}, not to this user ({}): its owner could read this user's port names or feed it theirs; \
                 if it is stale, its owner or root may remove it; else {advice}",
                who(st.st_uid),
                who(uid())
            )));
        }
        if st.st_mode & 0o077 != 0 {
            return Err(fail(format!(
                "is open to other users (mode {:04o}): published names hold ports' secrets; chmod 700 it, or {advice}",
                st.st_mode & 0o7777
            )));
        }
        Ok(NameDir { fd, path: path.to_path_buf() })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("wanmpi-namedir-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let _ = std::fs::remove_file(&d);
        d
    }

    fn error(path: &Path) -> String {
        NameDir::open(path).err().expect("must be refused").msg
    }

    #[test]
    fn a_missing_directory_is_made_for_this_user_alone() {
        let d = scratch("fresh");
        NameDir::open(&d).expect("open");
        let mode = std::fs::metadata(&d).expect("made").permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::remove_dir_all(&d).expect("clean");
    }

    /// Before, the check followed the link: a stranger who swapped it had
    /// our names written into their directory.
    #[test]
    fn a_symbolic_link_is_refused() {
        let real = scratch("real");
        std::fs::DirBuilder::new().mode(0o700).create(&real).expect("dir");
        let link = scratch("link");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let e = error(&link);
        assert!(e.contains("symbolic link") && e.contains(ENV_NAME_DIR), "{e}");
        std::fs::remove_file(&link).expect("clean");
        std::fs::remove_dir_all(&real).expect("clean");
    }

    /// A directory made by plain mkdir (0755): others could read names.
    #[test]
    fn a_directory_others_may_read_is_refused() {
        let d = scratch("open");
        std::fs::DirBuilder::new().mode(0o755).create(&d).expect("dir");
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let e = error(&d);
        assert!(e.contains("mode 0755") && e.contains("chmod 700"), "{e}");
        std::fs::remove_dir_all(&d).expect("clean");
    }

    /// Another user created the directory first (as root here: chown).
    #[test]
    fn a_directory_of_another_user_is_refused_naming_its_owner() {
        if uid() != 0 {
            eprintln!("skipped: needs root to give a directory away");
            return;
        }
        let d = scratch("theirs");
        std::fs::DirBuilder::new().mode(0o700).create(&d).expect("dir");
        let c = c_path(&d).expect("path");
        // SAFETY: a valid C string; chown to the unprivileged `nobody`.
        assert_eq!(unsafe { libc::chown(c.as_ptr(), 65534, 65534) }, 0);
        let e = error(&d);
        assert!(e.contains("belongs to uid 65534") && e.contains(ENV_NAME_DIR), "{e}");
        std::fs::remove_dir_all(&d).expect("clean");
    }
}
