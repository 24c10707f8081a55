//! Removing the socket directories (`socket_dir.rs`) that killed mpiruns of
//! this user left behind.
//!
//! mpirun removes its directories (`wanmpi-<pid>-<hex>` for the key/value
//! socket, `wanmpi-ssh-<pid>-<hex>` for ssh's shared connections) when it
//! ends, but not when it is killed (SIGKILL, a node's OOM killer): their
//! Unix socket files need a path, since ranks in the emulator's network
//! namespaces reach the service through the shared file system, where an
//! abstract socket would not reach them. So every mpirun, before it makes
//! its own, removes those a dead mpirun left, and only those:
//!
//! - the name is exactly one of the two forms, with mpirun's pid in it;
//! - `lstat` (never following a link) says a directory, of our effective
//!   user, closed to everyone else (mode 0700, as mpirun makes them);
//! - no process has that pid (`kill(pid, 0)` fails with ESRCH; a reused
//!   pid keeps the directory, which errs on the safe side);
//! - no socket in it accepts a connection (a live mpirun in another pid
//!   namespace sharing /tmp still listens), and one without any socket is
//!   over a minute old (a directory is made an instant before its socket).
//!
//! In a sticky /tmp nobody else can rename our entry between the checks
//! and the removal, and `remove_dir_all` does not follow links inside.

use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A directory with no socket in it is left alone this long after its
/// last change.
const FRESH: Duration = Duration::from_secs(60);

/// Sweeps the temporary directory and /tmp (where `socket_dir` puts them);
/// returns what it removed.
pub fn sweep() -> Vec<PathBuf> {
    let mut roots = vec![std::env::temp_dir()];
    if roots[0] != Path::new("/tmp") {
        roots.push("/tmp".into());
    }
    roots.iter().flat_map(|r| sweep_in(r, &pid_is_alive)).collect()
}

/// Sweeps `root`, `alive` telling whether a pid runs.
fn sweep_in(root: &Path, alive: &dyn Fn(u32) -> bool) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else { return vec![] };
    let mut removed = vec![];
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(mpirun_pid) else { continue };
        let path = e.path();
        if pid == std::process::id() || alive(pid) || !stale(&path) {
            continue;
        }
        if std::fs::remove_dir_all(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// The pid in a socket directory's name, if it is one of mpirun's:
/// `wanmpi-<pid>-<8 hex>` or `wanmpi-ssh-<pid>-<8 hex>` (`job::new_job_id`).
fn mpirun_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("wanmpi-")?;
    let rest = rest.strip_prefix("ssh-").unwrap_or(rest);
    let (pid, tag) = rest.split_once('-')?;
    let digits = !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit());
    let hex = tag.len() == 8 && tag.bytes().all(|b| b.is_ascii_hexdigit());
    if !digits || !hex {
        return None;
    }
    pid.parse().ok().filter(|&p| p > 0)
}

fn pid_is_alive(pid: u32) -> bool {
    let Ok(p) = libc::pid_t::try_from(pid) else { return true };
    // SAFETY: signal 0 only checks that the process exists.
    if unsafe { libc::kill(p, 0) } == 0 {
        return true;
    }
    // EPERM: it exists, as another user's.
    std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Whether `dir` is ours, private, and holds no live socket.
fn stale(dir: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(dir) else { return false };
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if !meta.file_type().is_dir() || meta.uid() != me || meta.mode() & 0o077 != 0 {
        return false;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return false };
    let mut sockets = 0;
    for e in entries.flatten() {
        if !e.file_type().is_ok_and(|t| t.is_socket()) {
            continue;
        }
        sockets += 1;
        match std::os::unix::net::UnixStream::connect(e.path()) {
            // Someone listens: the job is alive somewhere.
            Ok(_) => return false,
            Err(err) if matches!(err.kind(), std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound) => {}
            Err(_) => return false,
        }
    }
    sockets > 0 || meta.modified().ok().and_then(|m| m.elapsed().ok()).is_some_and(|age| age > FRESH)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::DirBuilderExt;

    #[test]
    fn only_mpiruns_names_are_read() {
        assert_eq!(mpirun_pid("wanmpi-123-0a1b2c3d"), Some(123));
        assert_eq!(mpirun_pid("wanmpi-ssh-77-ffffffff"), Some(77));
        for other in [
            "wanmpi-shm-kill-5",
            "wanmpi-123",
            "wanmpi-123-0a1b2c3",
            "wanmpi-x-0a1b2c3d",
            "wanmpi-0-0a1b2c3d",
            "other-1-0a1b2c3d",
            "wanmpi--0a1b2c3d",
        ] {
            assert_eq!(mpirun_pid(other), None, "{other}");
        }
    }

    /// A directory made as mpirun makes them, with a socket file whose
    /// listener is gone (or kept, `listen`).
    fn job_dir(root: &Path, name: &str, listen: bool) -> (PathBuf, Option<std::os::unix::net::UnixListener>) {
        let d = root.join(name);
        std::fs::DirBuilder::new().mode(0o700).create(&d).unwrap();
        let l = std::os::unix::net::UnixListener::bind(d.join("kv.sock")).unwrap();
        (d, listen.then_some(l))
    }

    #[test]
    fn dead_jobs_directories_go_and_nothing_else() {
        let root = std::env::temp_dir().join(format!("wanmpi-sweep-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let dead = |_: u32| false;
        let (gone, _) = job_dir(&root, "wanmpi-1001-00000001", false);
        let (ssh_gone, _) = job_dir(&root, "wanmpi-ssh-1001-00000001", false);
        // Its pid is dead here, but something listens (another pid namespace).
        let (listening, _l) = job_dir(&root, "wanmpi-1002-00000002", true);
        // Not private: not one of ours.
        let (open, _) = job_dir(&root, "wanmpi-1003-00000003", false);
        std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        // A link named like one: neither it nor what it points to goes.
        let target = root.join("target");
        std::fs::create_dir(&target).unwrap();
        std::os::unix::fs::symlink(&target, root.join("wanmpi-1004-00000004")).unwrap();
        // Just made, no socket yet.
        let fresh = root.join("wanmpi-1005-00000005");
        std::fs::DirBuilder::new().mode(0o700).create(&fresh).unwrap();
        // Another user's (root only: it takes chown).
        let (theirs, _) = job_dir(&root, "wanmpi-1007-00000007", false);
        // SAFETY: geteuid cannot fail.
        let root_user = unsafe { libc::geteuid() } == 0;
        if root_user {
            std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
        } else {
            std::fs::remove_dir_all(&theirs).unwrap();
        }
        let mut removed = sweep_in(&root, &dead);
        removed.sort();
        assert_eq!(removed, vec![gone, ssh_gone]);
        for kept in [&listening, &open, &target, &root.join("wanmpi-1004-00000004"), &fresh] {
            assert!(std::fs::symlink_metadata(kept).is_ok(), "{} was removed", kept.display());
        }
        assert_eq!(theirs.exists(), root_user, "another user's directory");
        // A live pid keeps its directory whatever its state.
        let (alive_dir, _) = job_dir(&root, "wanmpi-1006-00000006", false);
        assert!(sweep_in(&root, &|p| p == 1006).is_empty());
        assert!(alive_dir.exists());
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn a_running_process_is_alive_and_a_reaped_one_is_not() {
        assert!(pid_is_alive(std::process::id()));
        let mut c = std::process::Command::new("true").spawn().unwrap();
        let pid = c.id();
        c.wait().unwrap();
        // Pids are not reused at once (they wrap around pid_max first).
        assert!(!pid_is_alive(pid));
    }
}
