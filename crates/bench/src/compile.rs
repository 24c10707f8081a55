//! Compiling the C program of a cell with Open MPI's or MPICH's mpicc.

use crate::error::BenchError;
use crate::grid::Implementation;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The compiler wrapper Debian installs for an implementation.
pub fn mpicc(imp: &Implementation) -> Option<&'static str> {
    match imp {
        Implementation::OpenMpi => Some("mpicc.openmpi"),
        Implementation::Mpich => Some("mpicc.mpich"),
        Implementation::Wanmpi(_) => None,
    }
}

/// Whether a program can be found on PATH.
pub fn on_path(name: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}

/// Compiles `source` into `out_dir`; `Ok(None)` when the implementation is
/// not installed here (its cells are then marked skipped, not failed).
pub fn compile(imp: &Implementation, source: &Path, out_dir: &Path) -> Result<Option<PathBuf>, BenchError> {
    let Some(cc) = mpicc(imp) else { return Ok(None) };
    if !on_path(cc) {
        return Ok(None);
    }
    let stem = source.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_else(|| "prog".into());
    let out = out_dir.join(format!("{stem}-{imp}"));
    let err = |problem: String| BenchError::Compile { source_file: source.display().to_string(), compiler: cc.into(), problem };
    let res = Command::new(cc).arg("-O2").arg("-o").arg(&out).arg(source).output().map_err(|e| err(e.to_string()))?;
    if !res.status.success() {
        return Err(err(String::from_utf8_lossy(&res.stderr).into_owned()));
    }
    Ok(Some(out))
}
