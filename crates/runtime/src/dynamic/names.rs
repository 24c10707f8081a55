//! Name publishing (MPI_Publish_name, MPI_Lookup_name,
//! MPI_Unpublish_name, §11.2.4): a directory of this user's on this
//! machine (`name_dir.rs`), one file per service holding its port name, so
//! that jobs started separately on one host find each other by name. Across
//! hosts, hand the port name over yourself (a file on a shared file system,
//! the command line).
//!
//! A name file is mode 0600, written under a fresh temporary name
//! (`O_CREAT|O_EXCL|O_NOFOLLOW`) and renamed into place without replacing
//! another. Its first line names the publisher (pid, start time, host): a
//! name whose publisher has ended (a job that did not unpublish) counts as
//! absent, and is removed when met.
//!
//! ```text
//! wanmpi-name 1 <pid> <start time in clock ticks> <host>
//! <port name>
//! ```

use std::ffi::CString;
use std::io::{Read, Write};
use std::os::fd::FromRawFd;

use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

use super::name_dir::NameDir;

pub use super::name_dir::ENV_NAME_DIR;

/// Largest name file read.
const MAX_FILE: u64 = 64 * 1024;

/// Who published a name.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Publisher {
    pid: u32,
    start: u64,
    host: String,
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname").map(|h| h.trim().to_string()).unwrap_or_default()
}

/// A live process's start time (clock ticks since boot), from /proc.
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // After the command's closing parenthesis: state is field 3, the start
    // time field 22.
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

impl Publisher {
    fn me() -> Publisher {
        let pid = std::process::id();
        Publisher { pid, start: start_time(pid).unwrap_or(0), host: hostname() }
    }

    /// Whether the publisher may still run: on another host (a shared
    /// file system) this one cannot tell, and says yes.
    fn alive(&self) -> bool {
        if self.host != hostname() {
            return true;
        }
        start_time(self.pid) == Some(self.start)
    }
}

/// A service name as a file name: hex, so any name is safe.
fn file_name(service: &str) -> MpiResult<CString> {
    if service.is_empty() || service.len() > 256 {
        return Err(MpiError::new(ErrorClass::Service, format!("service name {service:?} must be 1 to 256 bytes")));
    }
    Ok(CString::new(service.bytes().map(|b| format!("{b:02x}")).collect::<String>()).expect("hex has no NUL"))
}

fn render(p: &Publisher, port: &str) -> String {
    format!("wanmpi-name 1 {} {} {}\n{}\n", p.pid, p.start, p.host, port.trim())
}

fn parse(text: &str) -> Option<(Publisher, String)> {
    let (head, port) = text.split_once('\n')?;
    let w: Vec<&str> = head.split(' ').collect();
    let ["wanmpi-name", "1", pid, start, host] = w[..] else { return None };
    let p = Publisher { pid: pid.parse().ok()?, start: start.parse().ok()?, host: host.to_string() };
    Some((p, port.trim().to_string()))
}

/// What the directory holds under a name.
enum Entry {
    Missing,
    /// Something that is no name file of ours (a link, another format).
    Invalid,
    Name(Publisher, String),
}

fn read_entry(dir: &NameDir, name: &CString) -> Entry {
    match read_file(dir, name) {
        Ok(Some((p, port))) => Entry::Name(p, port),
        Ok(None) => Entry::Invalid,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Entry::Missing,
        Err(_) => Entry::Invalid,
    }
}

fn read_file(dir: &NameDir, name: &CString) -> std::io::Result<Option<(Publisher, String)>> {
    // SAFETY: a directory descriptor and a valid C string; never through a
    // symbolic link.
    let fd = unsafe { libc::openat(dir.fd(), name.as_ptr(), libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor we just opened; the File owns and closes it.
    let f = unsafe { std::fs::File::from_raw_fd(fd) };
    let m = f.metadata()?;
    use std::os::unix::fs::MetadataExt;
    // SAFETY: getuid cannot fail.
    if !m.is_file() || m.uid() != unsafe { libc::getuid() } {
        return Ok(None);
    }
    let mut text = String::new();
    f.take(MAX_FILE).read_to_string(&mut text)?;
    Ok(parse(&text))
}

fn unlink(dir: &NameDir, name: &CString) -> std::io::Result<()> {
    // SAFETY: a directory descriptor and a valid C string.
    if unsafe { libc::unlinkat(dir.fd(), name.as_ptr(), 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// `port` under `service` in `dir`; an error of class `Service` if a live
/// publisher holds the name.
pub(super) fn publish_in(dir: &NameDir, service: &str, port: &str) -> MpiResult<()> {
    let name = file_name(service)?;
    let io =
        |what: &str, e: std::io::Error| MpiError::new(ErrorClass::Other, format!("publishing {service:?} in {}: {what}: {e}", dir.path().display()));
    let taken = || MpiError::new(ErrorClass::Service, format!("{service:?} is already published"));
    match read_entry(dir, &name) {
        Entry::Name(p, _) if p.alive() => return Err(taken()),
        Entry::Missing => {}
        // A dead publisher's name, or a file that is no name: gone.
        Entry::Name(..) | Entry::Invalid => {
            let _ = unlink(dir, &name);
        }
    }
    let nonce = wanmpi_bootstrap::auth::nonce().map_err(|e| io("no randomness", std::io::Error::other(e.to_string())))?;
    let tmp = CString::new(format!(".tmp-{}-{nonce}", std::process::id())).expect("no NUL");
    let flags = libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: a directory descriptor and a valid C string; O_EXCL makes a
    // new file or fails.
    let fd = unsafe { libc::openat(dir.fd(), tmp.as_ptr(), flags, 0o600 as libc::c_uint) };
    if fd < 0 {
        return Err(io("creating it", std::io::Error::last_os_error()));
    }
    // SAFETY: a descriptor we just created; the File owns and closes it.
    let mut f = unsafe { std::fs::File::from_raw_fd(fd) };
    let written = f.write_all(render(&Publisher::me(), port).as_bytes());
    drop(f);
    if let Err(e) = written {
        let _ = unlink(dir, &tmp);
        return Err(io("writing it", e));
    }
    // Into place only if the name is still free (another publisher may
    // have come meanwhile).
    // SAFETY: the directory descriptor twice and valid C strings.
    let moved = unsafe { libc::renameat2(dir.fd(), tmp.as_ptr(), dir.fd(), name.as_ptr(), libc::RENAME_NOREPLACE) };
    if moved == 0 {
        return Ok(());
    }
    let result = match std::io::Error::last_os_error() {
        e if e.kind() == std::io::ErrorKind::AlreadyExists => Err(taken()),
        // A file system without RENAME_NOREPLACE: a hard link also
        // refuses to replace.
        // SAFETY: as above.
        _ if unsafe { libc::linkat(dir.fd(), tmp.as_ptr(), dir.fd(), name.as_ptr(), 0) } == 0 => Ok(()),
        _ => match std::io::Error::last_os_error() {
            e if e.kind() == std::io::ErrorKind::AlreadyExists => Err(taken()),
            e => Err(io("putting it in place", e)),
        },
    };
    let _ = unlink(dir, &tmp);
    result
}

/// The port published under `service` by a publisher still running.
pub(super) fn lookup_in(dir: &NameDir, service: &str) -> MpiResult<String> {
    let name = file_name(service)?;
    let absent = || MpiError::new(ErrorClass::Name, format!("no service {service:?} is published"));
    match read_entry(dir, &name) {
        Entry::Name(p, port) if p.alive() => Ok(port),
        Entry::Name(..) => {
            // Its publisher ended without unpublishing.
            let _ = unlink(dir, &name);
            Err(absent())
        }
        Entry::Missing | Entry::Invalid => Err(absent()),
    }
}

pub(super) fn unpublish_in(dir: &NameDir, service: &str) -> MpiResult<()> {
    let name = file_name(service)?;
    unlink(dir, &name).map_err(|_| MpiError::new(ErrorClass::Service, format!("no service {service:?} is published")))
}

pub(crate) fn publish(service: &str, port: &str) -> MpiResult<()> {
    publish_in(&NameDir::from_env()?, service, port)
}

pub(crate) fn lookup(service: &str) -> MpiResult<String> {
    lookup_in(&NameDir::from_env()?, service)
}

pub(crate) fn unpublish(service: &str) -> MpiResult<()> {
    unpublish_in(&NameDir::from_env()?, service)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;
    use std::path::PathBuf;

    fn dir(name: &str) -> (NameDir, PathBuf) {
        let d = std::env::temp_dir().join(format!("wanmpi-names-test-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        (NameDir::open(&d).expect("open"), d)
    }

    #[test]
    fn a_name_is_found_until_it_is_withdrawn() {
        let (d, path) = dir("round");
        let service = "a service ../x";
        publish_in(&d, service, "wanmpi-port:1:127.0.0.1:9:00").expect("publish");
        assert_eq!(publish_in(&d, service, "other").unwrap_err().class, ErrorClass::Service, "published twice");
        assert_eq!(lookup_in(&d, service).expect("lookup"), "wanmpi-port:1:127.0.0.1:9:00");
        // Only the name file is left, and only its owner may read it.
        let files: Vec<_> = std::fs::read_dir(&path).expect("list").filter_map(Result::ok).collect();
        assert_eq!(files.len(), 1, "{files:?}");
        assert_eq!(files[0].metadata().expect("stat").permissions().mode() & 0o777, 0o600);
        unpublish_in(&d, service).expect("unpublish");
        assert_eq!(lookup_in(&d, service).unwrap_err().class, ErrorClass::Name);
        assert_eq!(unpublish_in(&d, service).unwrap_err().class, ErrorClass::Service);
        std::fs::remove_dir_all(&path).expect("clean");
    }

    /// A job that ended without unpublishing leaves its name: it counts as
    /// absent, and another may take it.
    #[test]
    fn a_name_whose_publisher_ended_is_absent() {
        let (d, path) = dir("stale");
        let mut child = std::process::Command::new("true").spawn().expect("true");
        let pid = child.id();
        let start = start_time(pid);
        child.wait().expect("reaped");
        let dead = Publisher { pid, start: start.unwrap_or(1), host: hostname() };
        let file = path.join(file_name("stale").expect("name").to_str().expect("hex"));
        std::fs::write(&file, render(&dead, "wanmpi-port:1:127.0.0.1:9:00")).expect("plant");
        assert_eq!(lookup_in(&d, "stale").unwrap_err().class, ErrorClass::Name);
        assert!(!file.exists(), "a stale name is removed when met");
        std::fs::write(&file, render(&dead, "wanmpi-port:1:127.0.0.1:9:00")).expect("plant again");
        publish_in(&d, "stale", "wanmpi-port:1:127.0.0.1:10:00").expect("a stale name is free");
        assert_eq!(lookup_in(&d, "stale").expect("lookup"), "wanmpi-port:1:127.0.0.1:10:00");
        // A live publisher on another host (a shared file system) is kept.
        let far = Publisher { pid, start: 1, host: "another-host".into() };
        std::fs::write(path.join(file_name("far").expect("name").to_str().expect("hex")), render(&far, "p")).expect("plant");
        assert_eq!(lookup_in(&d, "far").expect("kept"), "p");
        std::fs::remove_dir_all(&path).expect("clean");
    }

    /// A symbolic link under a name's file name is not followed.
    #[test]
    fn a_planted_link_is_not_followed() {
        let (d, path) = dir("link");
        let target = path.with_extension("target");
        std::fs::write(&target, render(&Publisher::me(), "wanmpi-port:1:10.9.9.9:9:00")).expect("target");
        let file = path.join(file_name("svc").expect("name").to_str().expect("hex"));
        std::os::unix::fs::symlink(&target, &file).expect("link");
        assert_eq!(lookup_in(&d, "svc").unwrap_err().class, ErrorClass::Name, "a link is no name");
        // Publishing replaces the link; the link's target is untouched.
        publish_in(&d, "svc", "wanmpi-port:1:127.0.0.1:11:00").expect("publish over a link");
        assert!(std::fs::read_to_string(&target).expect("target").contains("10.9.9.9"));
        assert!(!std::fs::symlink_metadata(&file).expect("file").file_type().is_symlink());
        std::fs::remove_dir_all(&path).expect("clean");
        std::fs::remove_file(&target).expect("clean");
    }
}
