//! Where mpirun makes the private directories that hold Unix sockets (the
//! key/value service's, ssh's shared connections): in the temporary
//! directory (`$TMPDIR`) unless a socket there would not fit in a socket
//! address, then in /tmp. A long `$TMPDIR` (some CI systems and desktops
//! set one of 80 bytes and more) otherwise made every job fail: `path must
//! be shorter than SUN_LEN`, or ssh's `ControlPath too long`.

use std::path::{Path, PathBuf};

/// The longest socket path, without its NUL: sockaddr_un's sun_path holds
/// 108 bytes on Linux.
pub const SUN_PATH_MAX: usize = 107;

/// `root/name`, where `root` is the temporary directory, or /tmp when a
/// socket name of `longest` bytes inside `temp/name` would be too long.
pub fn path_for(name: &str, longest: usize) -> PathBuf {
    choose(&std::env::temp_dir(), name, longest)
}

fn choose(temp: &Path, name: &str, longest: usize) -> PathBuf {
    let dir = temp.join(name);
    // +1: the slash between the directory and the socket's name.
    if dir.as_os_str().len() + 1 + longest <= SUN_PATH_MAX {
        dir
    } else {
        Path::new("/tmp").join(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_temporary_directory_that_fits_is_used() {
        assert_eq!(choose(Path::new("/var/tmp"), "wanmpi-1-ab", 7), PathBuf::from("/var/tmp/wanmpi-1-ab"));
    }

    #[test]
    fn one_too_long_for_a_socket_falls_back_to_tmp() {
        let long = format!("/home/{}", "x".repeat(90));
        assert_eq!(choose(Path::new(&long), "wanmpi-1-ab", 7), PathBuf::from("/tmp/wanmpi-1-ab"));
    }

    #[test]
    fn the_bound_is_exact() {
        // A directory whose socket of 7 bytes ends at exactly 107 bytes fits.
        let name = "n";
        let root = format!("/{}", "r".repeat(SUN_PATH_MAX - 1 - name.len() - 1 - 1 - 7));
        let dir = choose(Path::new(&root), name, 7);
        assert_eq!(dir.as_os_str().len() + 1 + 7, SUN_PATH_MAX);
        assert!(dir.starts_with(&root));
        assert!(choose(Path::new(&format!("{root}r")), name, 7).starts_with("/tmp"));
    }
}
