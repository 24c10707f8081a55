//! `--stage`: the programs of a job (and wanmpi's libmpi.so when a program
//! loads it; a Rust program carries the library inside) are copied to each
//! remote host that runs ranks, into a directory of the job's own there,
//! `$TMPDIR/wanmpi-JOBID-XXXXXX` (or under /tmp, mode 0700), and the ranks
//! there run the copies. The directories are removed when the job ends,
//! however it ends, short of mpirun itself being killed with SIGKILL.
//!
//! Every step is one session through the launch agent (for ssh, over the
//! host's shared connection, `ssh_mux`) running a line of POSIX `sh`: make
//! the directory, `cat` each file into it from the session's stdin, and at
//! the end `rm -rf` it. Hosts are staged in parallel.

use crate::command;
use crate::error::LaunchError;
use crate::hosts::Placement;
use crate::spec::JobSpec;
use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long making the directory or copying one file to a host may take.
const COPY_LIMIT: Duration = Duration::from_secs(120);
/// How long removing a host's directory may take at the end.
const REMOVE_LIMIT: Duration = Duration::from_secs(10);

/// Run remotely with the job id as `$1`: a new directory only the user can
/// enter, whose path it prints.
const MAKE_DIR: &str = r#"umask 077 && d=$(mktemp -d "${TMPDIR:-/tmp}/wanmpi-$1-XXXXXX") && printf '%s\n' "$d""#;
/// Stdin into the file `$1`, executable by the user alone.
const WRITE_FILE: &str = r#"umask 077 && cat > "$1" && chmod 700 "$1""#;
const REMOVE_DIR: &str = r#"rm -rf -- "$1""#;

/// Bytes in a library that only wanmpi's libmpi holds (MPICH's
/// libmpi.so.12 has the same name and ABI; it is not ours to copy).
const OUR_LIBRARY_MARK: &[u8] = b"WANMPI_JOB_SECRET_FD";

/// A file to copy: its name on the far side and where it is here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    pub name: String,
    pub from: PathBuf,
}

/// What a job copies to every host: each program under a name of its own,
/// and the libraries the programs load from wanmpi.
#[derive(Debug, Default)]
pub struct Payload {
    /// Program as given on the command line -> its copy.
    pub programs: BTreeMap<String, File>,
    pub libs: Vec<File>,
}

impl Payload {
    /// The files for `programs` (as the job names them), found here: a name
    /// without `/` on PATH, as the shell would.
    pub fn of(programs: &[&str]) -> Result<Payload, String> {
        let mut p = Payload::default();
        for prog in programs {
            if p.programs.contains_key(*prog) {
                continue;
            }
            let from = locate(prog)?;
            let base = from.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "program".into());
            let taken = |n: &str| p.programs.values().any(|f| f.name == n);
            let name = if taken(&base) { format!("{}-{base}", p.programs.len()) } else { base };
            for lib in our_libraries(&from) {
                if !p.libs.iter().any(|l| l.name == lib.name) {
                    p.libs.push(lib);
                }
            }
            p.programs.insert(prog.to_string(), File { name, from });
        }
        Ok(p)
    }

    fn files(&self) -> impl Iterator<Item = &File> {
        self.programs.values().chain(&self.libs)
    }
}

fn locate(prog: &str) -> Result<PathBuf, String> {
    let found = if prog.contains('/') {
        Some(PathBuf::from(prog))
    } else {
        std::env::var_os("PATH").and_then(|path| std::env::split_paths(&path).map(|d| d.join(prog)).find(|p| p.is_file()))
    };
    match found {
        Some(p) if p.is_file() => Ok(p),
        _ => Err(format!("{prog}: no such program here to copy")),
    }
}

/// wanmpi's libraries among those this machine's loader resolves for
/// `program` (`ldd`): (soname, file). None for a static program, or when
/// `ldd` is missing or fails (the far side then needs the library itself).
fn our_libraries(program: &Path) -> Vec<File> {
    let mut c = Command::new("ldd");
    c.arg(program);
    let Ok((ok, out, _)) = run_bounded(c, None, Duration::from_secs(10)) else { return Vec::new() };
    if !ok {
        return Vec::new();
    }
    String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| {
            let (name, rest) = l.trim().split_once(" => ")?;
            let path = PathBuf::from(rest.split(" (").next()?.trim());
            let ours =
                name.starts_with("lib") && std::fs::read(&path).is_ok_and(|b| b.windows(OUR_LIBRARY_MARK.len()).any(|w| w == OUR_LIBRARY_MARK));
            ours.then(|| File { name: name.to_string(), from: path })
        })
        .collect()
}

/// Runs `c` with `stdin` (or /dev/null) in a process group of its own,
/// killed past `limit`: (success, stdout, stderr).
fn run_bounded(mut c: Command, stdin: Option<std::fs::File>, limit: Duration) -> Result<(bool, Vec<u8>, Vec<u8>), String> {
    c.stdin(stdin.map_or_else(Stdio::null, Stdio::from)).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let mut child = c.spawn().map_err(|e| e.to_string())?;
    // Read on threads, and given up on at the deadline: a process the
    // command left behind may hold its output open.
    let read = |r: Option<Box<dyn Read + Send>>| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut v = Vec::new();
            if let Some(mut r) = r {
                let _ = r.read_to_end(&mut v);
            }
            let _ = tx.send(v);
        });
        rx
    };
    let out = read(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let err = read(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let deadline = Instant::now() + limit;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                crate::process::signal_group(child.id(), libc::SIGKILL);
                let _ = child.wait();
                return Err(format!("gave up after {} s", limit.as_secs()));
            }
        }
    };
    let left = || deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(100));
    let out = out.recv_timeout(left()).map_err(|_| "its output did not end".to_string())?;
    Ok((status.success(), out, err.recv_timeout(left()).unwrap_or_default()))
}

/// One session on a host: `sh -c SCRIPT wanmpi-stage ARG` through the
/// agent; its stdout, or why it failed.
fn session(agent: &[String], host: &str, script: &str, arg: &str, stdin: Option<std::fs::File>, limit: Duration) -> Result<String, String> {
    let words = ["sh", "-c", script, "wanmpi-stage", arg].map(str::to_string).to_vec();
    let argv = command::on_host(agent, host, words);
    let mut c = Command::new(&argv[0]);
    c.args(&argv[1..]);
    let (ok, out, err) = run_bounded(c, stdin, limit)?;
    if !ok {
        let why = String::from_utf8_lossy(&err).trim().to_string();
        return Err(if why.is_empty() { "it failed without saying why".into() } else { why });
    }
    Ok(String::from_utf8_lossy(&out).trim_end_matches('\n').to_string())
}

/// The copies on each host, removed when dropped.
pub struct Staged {
    /// Host -> (the agent's words for it, its directory).
    dirs: BTreeMap<String, (Vec<String>, String)>,
    payload: Payload,
}

impl Staged {
    /// Copies `payload` to every host in `hosts` (with the agent's words
    /// for that host), in parallel. On any failure the directories already
    /// made are removed and the first failure is returned.
    pub fn copy(hosts: Vec<(String, Vec<String>)>, job_id: &str, payload: Payload) -> Result<Staged, (String, String)> {
        let results: Vec<(String, Vec<String>, Result<String, String>)> = std::thread::scope(|s| {
            let running: Vec<_> = hosts
                .into_iter()
                .map(|(host, agent)| {
                    let payload = &payload;
                    s.spawn(move || {
                        let r = stage_host(&agent, &host, job_id, payload);
                        (host, agent, r)
                    })
                })
                .collect();
            running.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        let mut staged = Staged { dirs: BTreeMap::new(), payload: Payload::default() };
        let mut failed = None;
        for (host, agent, r) in results {
            match r {
                Ok(dir) => {
                    staged.dirs.insert(host, (agent, dir));
                }
                Err(why) => {
                    failed.get_or_insert((host, why));
                }
            }
        }
        if let Some(f) = failed {
            return Err(f); // dropping `staged` removes what was made
        }
        staged.payload = payload;
        Ok(staged)
    }

    /// Where `program` runs from on `host`, if it was staged there.
    pub fn program_on(&self, host: &str, program: &str) -> Option<String> {
        let (_, dir) = self.dirs.get(host)?;
        Some(format!("{dir}/{}", self.payload.programs.get(program)?.name))
    }

    /// The directory to put on `LD_LIBRARY_PATH` on `host`, when libraries
    /// were copied there.
    pub fn lib_dir(&self, host: &str) -> Option<&str> {
        let (_, dir) = self.dirs.get(host)?;
        (!self.payload.libs.is_empty()).then_some(dir.as_str())
    }
}

/// Makes the directory on `host` and copies every file into it; the
/// directory, or why not (after removing what it made).
fn stage_host(agent: &[String], host: &str, job_id: &str, payload: &Payload) -> Result<String, String> {
    let dir = session(agent, host, MAKE_DIR, job_id, None, COPY_LIMIT).map_err(|e| format!("cannot make a directory there: {e}"))?;
    // What came back names the directory removed at the end: it must be
    // one that mktemp made for this job, nothing else.
    let plain = dir.starts_with('/') && !dir.contains('\n') && !dir.contains("/../");
    if !plain || !dir.contains(&format!("/wanmpi-{job_id}-")) {
        return Err(format!("the far side answered {dir:?}, not a directory for this job"));
    }
    for f in payload.files() {
        let copied = std::fs::File::open(&f.from)
            .map_err(|e| format!("cannot read {}: {e}", f.from.display()))
            .and_then(|file| session(agent, host, WRITE_FILE, &format!("{dir}/{}", f.name), Some(file), COPY_LIMIT));
        if let Err(e) = copied {
            let _ = session(agent, host, REMOVE_DIR, &dir, None, REMOVE_LIMIT);
            return Err(format!("cannot copy {} there: {e}", f.from.display()));
        }
    }
    Ok(dir)
}

impl Drop for Staged {
    fn drop(&mut self) {
        std::thread::scope(|s| {
            for (host, (agent, dir)) in &self.dirs {
                s.spawn(move || {
                    if let Err(e) = session(agent, host, REMOVE_DIR, dir, None, REMOVE_LIMIT) {
                        let _ = std::io::Write::write_fmt(&mut std::io::stderr(), format_args!("mpirun: could not remove {dir} on {host}: {e}\n"));
                    }
                });
            }
        });
    }
}

/// With `--stage`: copies what the ranks on remote hosts run to their
/// hosts (`agent_for` gives the agent's words for a host). A failure is a
/// failure to start the first rank of the host concerned.
pub fn prepare(
    spec: &JobSpec,
    placements: &[Placement],
    local: &[bool],
    agent_for: impl Fn(&str) -> Vec<String>,
    job_id: &str,
) -> Result<Option<Staged>, LaunchError> {
    if !spec.stage {
        return Ok(None);
    }
    let remote: Vec<u32> = (0..placements.len() as u32).filter(|&r| !local[r as usize]).collect();
    let fail = |rank: u32, why: String| LaunchError::Spawn {
        rank,
        host: placements[rank as usize].host.clone(),
        program: spec.command_of(rank).0.to_string(),
        error: std::io::Error::other(format!("--stage: {why}")),
    };
    let Some(&first) = remote.first() else { return Ok(None) };
    let programs: Vec<&str> = remote.iter().map(|&r| spec.command_of(r).0).collect();
    let payload = Payload::of(&programs).map_err(|why| fail(first, why))?;
    let mut hosts: Vec<(String, Vec<String>)> = Vec::new();
    for &r in &remote {
        let h = &placements[r as usize].host;
        if !hosts.iter().any(|(known, _)| known == h) {
            hosts.push((h.clone(), agent_for(h)));
        }
    }
    Staged::copy(hosts, job_id, payload).map(Some).map_err(|(host, why)| {
        let rank = remote.iter().copied().find(|&r| placements[r as usize].host == host).unwrap_or(first);
        fail(rank, why)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Staging through a local `{host}` agent (`env`: runs the words here)
    /// with TMPDIR pointing at a scratch directory: the copy is made, runs,
    /// and is removed on drop.
    #[test]
    fn files_are_copied_into_a_private_directory_and_removed() {
        let scratch = std::env::temp_dir().join(format!("wanmpi-stage-unit-{}", std::process::id()));
        std::fs::create_dir_all(&scratch).unwrap();
        let agent: Vec<String> = ["env", "TMPDIR={host}"].map(str::to_string).to_vec();
        let payload = Payload::of(&["true"]).unwrap();
        assert!(payload.libs.is_empty());
        let host = scratch.display().to_string();
        let staged = Staged::copy(vec![(host.clone(), agent)], "unit-1", payload).unwrap();
        let prog = staged.program_on(&host, "true").unwrap();
        assert!(prog.starts_with(&format!("{host}/wanmpi-unit-1-")), "{prog}");
        let dir = Path::new(&prog).parent().unwrap().to_path_buf();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        assert!(Command::new(&prog).status().unwrap().success());
        drop(staged);
        assert!(!dir.exists());
        let _ = std::fs::remove_dir_all(&scratch);
    }

    #[test]
    fn a_missing_program_or_a_failing_host_is_an_error() {
        assert!(Payload::of(&["/nonexistent/prog"]).unwrap_err().contains("no such program"));
        let agent: Vec<String> = ["env", "TMPDIR=/nonexistent/{host}"].map(str::to_string).to_vec();
        let (host, why) = Staged::copy(vec![("x".into(), agent)], "unit-2", Payload::of(&["true"]).unwrap()).err().unwrap();
        assert_eq!(host, "x");
        assert!(why.contains("cannot make a directory"), "{why}");
    }

    /// A C program linked against wanmpi's libmpi.so.12 takes the library
    /// along; one linked against MPICH's library of the same ABI does not.
    #[test]
    fn our_libmpi_goes_along_with_a_c_program_and_mpichs_does_not() {
        let lib_dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/wanmpi/lib");
        let ours = lib_dir.join("libmpi.so.12");
        if !ours.is_file() {
            eprintln!("SKIPPED our_libmpi_goes_along_with_a_c_program: {} is missing (run scripts/install-c)", ours.display());
            return;
        }
        let dir = std::env::temp_dir().join(format!("wanmpi-stage-lib-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let src = dir.join("p.c");
        std::fs::write(&src, "int MPI_Init(int *, char ***);\nint main(int c, char **v) { return MPI_Init(&c, &v); }\n").unwrap();
        let build = |lib_dir: &Path, lib: &str, out: &Path| {
            let rpath = format!("-Wl,-rpath,{}", lib_dir.display());
            Command::new("cc")
                .arg("-o")
                .arg(out)
                .arg(&src)
                .arg(format!("-L{}", lib_dir.display()))
                .args([rpath.as_str(), lib])
                .status()
                .is_ok_and(|s| s.success())
        };
        let prog = dir.join("with-wanmpi");
        assert!(build(&lib_dir, "-lmpi", &prog), "cc against {}", lib_dir.display());
        let p = Payload::of(&[prog.to_str().unwrap()]).unwrap();
        assert_eq!(p.libs.len(), 1, "{:?}", p.libs);
        assert_eq!(p.libs[0].name, "libmpi.so.12");
        assert_eq!(p.libs[0].from.canonicalize().unwrap(), ours.canonicalize().unwrap());
        // Debian's MPICH (libmpich-dev), the same ABI and soname.
        let system = Path::new("/usr/lib/x86_64-linux-gnu");
        let prog = dir.join("with-mpich");
        if system.join("libmpich.so").exists() && build(system, "-lmpich", &prog) {
            assert!(Payload::of(&[prog.to_str().unwrap()]).unwrap().libs.is_empty());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn programs_with_one_name_get_distinct_copies() {
        let p = Payload::of(&["true", "/bin/true", "true"]).unwrap();
        let names: Vec<&str> = p.programs.values().map(|f| f.name.as_str()).collect();
        assert_eq!(p.programs.len(), 2);
        assert_ne!(names[0], names[1]);
    }
}
