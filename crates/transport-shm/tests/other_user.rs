//! Another user of the host can neither reach nor plant a job's shared
//! memory (issue 23). Root only (it switches users); skipped otherwise.
//!
//! The job runs as an unprivileged uid (root would bypass the permission
//! checks under test); an intruder runs as a second uid from before the job
//! starts until it ends and tries what a stranger could: it plants
//! world-writable ring files and doorbell FIFOs under every name the
//! pre-issue-23 transport would have used (`/dev/shm/wanmpi-shm-<job>-...`,
//! the job id read off the job's `/tmp/wanmpi-<job>`), then reads them for
//! data; it opens whatever it finds in /dev/shm and in the job's /tmp
//! directory; and for
//! every process of the job's uid it lists and opens `/proc/<pid>/fd/*`
//! and `/proc/<pid>/map_files/*`. Nothing may open, nothing may carry data,
//! and the job must finish with every byte checked. Both uids are numbers
//! without a passwd entry: nothing to create or remove.

mod common;

use common::job::{command, shm_job};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROLE: &str = "WANMPI_SHM_INTRUDER_UID";
const RANKS: usize = 4;
/// Jobs run one after another under the same intruder (default 1).
const TRIALS: &str = "WANMPI_SHM_INTRUDER_TRIALS";

fn job_uid() -> u32 {
    61000 + std::process::id() % 1000
}

/// Not a test of its own: the intruder, run by the test below as another
/// uid (does nothing in a normal run). Probes until its stdin closes, then
/// prints `probes <n> pids <n> opened <paths>` and `leaked <paths>`.
#[test]
fn intruder_role() {
    let Some(victim) = std::env::var(ROLE).ok().and_then(|v| v.parse::<u32>().ok()) else { return };
    // SAFETY: umask only affects files this process creates.
    unsafe { libc::umask(0) };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s = stop.clone();
    std::thread::spawn(move || {
        let _ = std::io::stdin().read_to_end(&mut vec![]);
        s.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let mut planted: Vec<std::path::PathBuf> = vec![];
    let (mut probes, mut pids) = (0u64, std::collections::BTreeSet::new());
    let mut opened = std::collections::BTreeSet::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !stop.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < deadline {
        // Plant the old transport's names for every job id in /tmp.
        for e in std::fs::read_dir("/tmp").into_iter().flatten().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_prefix("wanmpi-") else { continue };
            // Only the job's own (other jobs on the host are none of our business).
            if e.metadata().map(|m| m.uid()).ok() != Some(victim) {
                continue;
            }
            for w in 0..RANKS {
                let bell = std::path::PathBuf::from(format!("/dev/shm/wanmpi-shm-{id}-{w}.bell"));
                if !planted.contains(&bell) {
                    let c = std::ffi::CString::new(bell.as_os_str().as_encoded_bytes()).unwrap();
                    // SAFETY: a valid C string.
                    if unsafe { libc::mkfifo(c.as_ptr(), 0o666) } == 0 {
                        planted.push(bell);
                    }
                }
                for r in (0..RANKS).filter(|&r| r != w) {
                    let ring = std::path::PathBuf::from(format!("/dev/shm/wanmpi-shm-{id}-{w}-{r}"));
                    if !planted.contains(&ring) && std::fs::OpenOptions::new().write(true).create_new(true).open(&ring).is_ok() {
                        planted.push(ring);
                    }
                }
            }
            // Whatever the job keeps in its /tmp directory.
            for f in std::fs::read_dir(e.path()).into_iter().flatten().flatten() {
                probes += 1;
                if std::fs::File::open(f.path()).is_ok() {
                    opened.insert(f.path().display().to_string());
                }
            }
        }
        // Anything in /dev/shm that is not ours.
        for e in std::fs::read_dir("/dev/shm").into_iter().flatten().flatten() {
            if planted.contains(&e.path()) {
                continue;
            }
            probes += 1;
            let o = std::fs::OpenOptions::new().read(true).custom_flags_nonblock().open(e.path());
            if o.is_ok() {
                opened.insert(e.path().display().to_string());
            }
        }
        // The fds and mappings of every process of the job's uid.
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
            if std::fs::metadata(e.path()).map(|m| m.uid()).ok() != Some(victim) {
                continue;
            }
            pids.insert(pid);
            for dir in ["fd", "map_files"] {
                probes += 1;
                if let Ok(d) = std::fs::read_dir(e.path().join(dir)) {
                    opened.insert(format!("/proc/{pid}/{dir} (listed)"));
                    for f in d.flatten() {
                        if std::fs::File::open(f.path()).is_ok() {
                            opened.insert(f.path().display().to_string());
                        }
                    }
                }
            }
            for fd in 0..48 {
                probes += 1;
                let p = format!("/proc/{pid}/fd/{fd}");
                if std::fs::OpenOptions::new().read(true).custom_flags_nonblock().open(&p).is_ok() {
                    opened.insert(p);
                }
            }
        }
    }
    // Did the job write into anything planted?
    let mut leaked = vec![];
    for p in &planted {
        let data = std::fs::metadata(p).map(|m| m.len()).unwrap_or(0) > 0;
        let rang = std::fs::OpenOptions::new().read(true).custom_flags_nonblock().open(p).ok().and_then(|mut f| {
            let mut b = [0u8; 64];
            f.read(&mut b).ok()
        });
        if data || rang.unwrap_or(0) > 0 {
            leaked.push(p.display().to_string());
        }
        let _ = std::fs::remove_file(p);
    }
    println!("probes {probes} pids {} planted {} opened {:?}", pids.len(), planted.len(), opened);
    println!("leaked {leaked:?}");
}

trait NonBlock {
    fn custom_flags_nonblock(&mut self) -> &mut Self;
}
impl NonBlock for std::fs::OpenOptions {
    fn custom_flags_nonblock(&mut self) -> &mut Self {
        std::os::unix::fs::OpenOptionsExt::custom_flags(self, libc::O_NONBLOCK)
    }
}

#[test]
fn another_user_can_neither_open_nor_plant_the_jobs_shared_memory() {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIPPED: this test needs root, to run the job and an intruder as two other users");
        return;
    }
    let (job, intruder) = (job_uid(), job_uid() + 1);
    let exe = shm_job();
    // The job's uid must be able to run the program, the intruder the test.
    std::fs::set_permissions(exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut spy = Command::new(std::env::current_exe().unwrap())
        .args(["intruder_role", "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, job.to_string())
        .uid(intruder)
        .gid(intruder)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the intruder");
    // One job by default; benches/shm-intruder runs many in a row, the
    // intruder probing from before the first to after the last, so it is
    // there during every set-up.
    let trials: usize = std::env::var(TRIALS).ok().and_then(|v| v.parse().ok()).unwrap_or(1).max(1);
    let mut out = None;
    for t in 0..trials {
        let mut c = command(RANKS, if trials == 1 { 2.0 } else { 0.2 });
        c.uid(job).gid(job).env("TMPDIR", "/tmp").env_remove("HOME");
        let o = c.output().expect("run mpirun as the job's user");
        let stdout = String::from_utf8_lossy(&o.stdout);
        assert!(
            o.status.success() && stdout.contains(&format!("shm_job ok: {RANKS} ranks")),
            "trial {t}: {stdout}\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        out = Some(o);
    }
    let out = out.expect("at least one trial");
    eprintln!("{trials} jobs verified while the intruder probed");
    drop(spy.stdin.take());
    let mut report = String::new();
    for line in BufReader::new(spy.stdout.take().unwrap()).lines().map_while(Result::ok) {
        // The harness may print "test intruder_role ... " on the same line.
        if let Some(i) = line.find("probes ").or_else(|| line.find("leaked ")) {
            report.push_str(&line[i..]);
            report.push('\n');
        }
    }
    assert!(spy.wait().unwrap().success(), "the intruder failed");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("job: {}intruder: {report}", stdout.lines().filter(|l| l.starts_with("shm_job")).collect::<Vec<_>>().join("\n") + "\n");
    assert!(out.status.success() && stdout.contains(&format!("shm_job ok: {RANKS} ranks")), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let probes_line = report.lines().find(|l| l.starts_with("probes ")).expect("the intruder's report");
    let words: Vec<&str> = probes_line.split_whitespace().collect();
    let pids: usize = words[3].parse().unwrap();
    assert!(pids > RANKS, "the intruder saw only {pids} processes of the job (mpirun and {RANKS} ranks expected)");
    assert!(probes_line.ends_with("opened {}"), "the intruder opened: {probes_line}");
    assert!(report.contains("leaked []"), "the job wrote into planted files: {report}");
    let _ = std::io::stdout().flush();
}
