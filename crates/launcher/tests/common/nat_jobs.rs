//! Jobs across issue 26's NAT scenarios (`wanmpi_emulator::scenario`):
//! mpirun in the scenario's driver host, ranks through `wanmpi-emu agent`,
//! a 2-rank `hello` (allreduce) then a 1 MiB `pingpong`. For
//! `tests/nat_scenarios.rs` and any test that adds a case.

use super::MPIRUN;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};
use wanmpi_emulator::scenario::{self, Scenario};
use wanmpi_emulator::UpOptions;

/// A job may take this long: past tcp's 60 s setup limit, so a job that
/// cannot connect reports its own error first.
pub const JOB_LIMIT: Duration = Duration::from_secs(100);

pub fn sibling(name: &str) -> Option<PathBuf> {
    let dir = Path::new(MPIRUN).parent()?;
    Some(dir.join(name)).filter(|p| p.is_file())
}

/// hello, pingpong and wanmpi-emu, or None with the reason printed.
pub fn ready(test: &str) -> Option<(PathBuf, PathBuf, PathBuf)> {
    if let Err(e) = wanmpi_emulator::preflight() {
        println!("SKIPPED {test}: {e}");
        return None;
    }
    match (sibling("hello"), sibling("pingpong"), sibling("wanmpi-emu")) {
        (Some(h), Some(p), Some(e)) => Some((h, p, e)),
        _ => {
            println!("SKIPPED {test}: build hello, pingpong and wanmpi-emu first (cargo build --release -p wanmpi-examples -p wanmpi-emulator)");
            None
        }
    }
}

/// Output of one job, killed past `JOB_LIMIT`.
pub struct Job {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

pub fn run_job(mut cmd: std::process::Command) -> Job {
    let started = Instant::now();
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("start mpirun in the driver host");
    let pipe = |r: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            if let Some(mut r) = r {
                let _ = r.read_to_string(&mut s);
            }
            s
        })
    };
    let out = pipe(child.stdout.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let err = pipe(child.stderr.take().map(|s| Box::new(s) as Box<dyn Read + Send>));
    let status = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break Some(st);
        }
        if started.elapsed() > JOB_LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Job {
        ok: status.is_some_and(|s| s.success()),
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
        took: started.elapsed(),
    }
}

/// Bring scenario `name` up with `profile` on every link and run its two
/// jobs (with `extra` mpirun options); Err describes what failed.
pub fn run_scenario(name: &str, profile: &str, extra: &[&str]) -> Option<Result<String, String>> {
    run(scenario::by_name(name).unwrap_or_else(|| panic!("no scenario {name}")), profile, extra)
}

/// `run_scenario` for any scenario, e.g. one of a test's own making.
pub fn run(s: Scenario, profile: &str, extra: &[&str]) -> Option<Result<String, String>> {
    let name = s.name;
    let (hello, pingpong, emu_bin) = ready(name)?;
    let opts = UpOptions { forwarder_exe: Some(emu_bin.clone()), ..UpOptions::default() };
    let setup = s.up(profile, &opts).unwrap_or_else(|e| panic!("{name}: bringing the scenario up: {e}"));
    let mpirun = Path::new(MPIRUN);
    let mut report = format!("scenario {name} ({}), profile {profile}\n", s.about);
    let hello_job = run_job(setup.mpirun(mpirun, extra, &hello, &[]).expect("mpirun command"));
    report += &format!("hello: {} in {:.1} s\n", if hello_job.ok { "ok" } else { "FAILED" }, hello_job.took.as_secs_f64());
    let n = s.ranks.len();
    let want = format!("allreduce: sum of ranks = {0} (expected {0})", n * (n - 1) / 2);
    if !hello_job.ok || !hello_job.stdout.contains(&want) {
        return Some(Err(format!("{report}stdout:\n{}\nstderr:\n{}", hello_job.stdout, hello_job.stderr)));
    }
    let pp = run_job(setup.mpirun(mpirun, extra, &pingpong, &["--sizes", "1048576", "--iters", "3", "--csv"]).expect("mpirun command"));
    report += &format!("1 MiB exchange: {} in {:.1} s\n", if pp.ok { "ok" } else { "FAILED" }, pp.took.as_secs_f64());
    let line = pp.stdout.lines().find(|l| l.starts_with("1048576,"));
    if !pp.ok || line.is_none() {
        return Some(Err(format!("{report}stdout:\n{}\nstderr:\n{}", pp.stdout, pp.stderr)));
    }
    report += &format!("pingpong: {}\n", line.unwrap_or_default());
    Some(Ok(report))
}
