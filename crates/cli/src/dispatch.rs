//! Finding and running `wanmpi-NAME`: first beside this executable (an
//! install or build directory keeps its programs together), then on PATH.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum DispatchError {
    #[error("`{0}` is not a wanmpi command: no {0} beside this program or on PATH")]
    NotFound(String),
    #[error("cannot run {0}: {1}")]
    Exec(String, std::io::Error),
}

/// Where `name` is: beside the current executable, else the first PATH entry
/// that has it.
pub fn find(name: &str) -> Option<PathBuf> {
    let beside = std::env::current_exe().ok().and_then(|me| me.parent().map(|d| d.join(name)));
    let on_path = std::env::var_os("PATH").and_then(|p| std::env::split_paths(&p).map(|d| d.join(name)).find(|c| c.is_file()));
    beside.filter(|c| c.is_file()).or(on_path)
}

/// Replaces this process with `name args`; returns an exit code only when
/// that cannot happen (127 when not found, 126 when not runnable).
pub fn exec_program(name: &str, args: &[OsString]) -> i32 {
    let err = match find(name) {
        None => DispatchError::NotFound(name.to_string()),
        // exec only returns on failure
        Some(path) => DispatchError::Exec(path.display().to_string(), std::process::Command::new(&path).args(args).exec()),
    };
    eprintln!("wanmpi: {err}");
    match err {
        DispatchError::NotFound(_) => 127,
        DispatchError::Exec(..) => 126,
    }
}
