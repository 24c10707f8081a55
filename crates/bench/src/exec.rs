//! Running one external command with a time limit, capturing its output,
//! and ending its whole process group if it runs too long.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How often the wait looks at the child.
const POLL: Duration = Duration::from_millis(20);
/// Between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

#[derive(Debug)]
pub struct Finished {
    /// `None` when the limit passed and the group was killed.
    pub status: Option<ExitStatus>,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

fn reader(pipe: Option<impl Read + Send + 'static>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = Vec::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_end(&mut s);
        }
        String::from_utf8_lossy(&s).into_owned()
    })
}

fn signal_group(pgid: u32, sig: i32) {
    if let Ok(p) = i32::try_from(pgid) {
        // SAFETY: kill has no memory preconditions; a negative pid names the
        // process group the child leads (made with process_group(0)).
        unsafe { libc::kill(-p, sig) };
    }
}

/// Runs `cmd` in a process group of its own; past `limit` the group gets
/// SIGTERM, then SIGKILL. Every wait here is bounded.
/// A non-zero `cancel` ends it like the limit does.
pub fn run_limited(mut cmd: Command, limit: Duration, cancel: Option<&AtomicUsize>) -> std::io::Result<Finished> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let out = reader(child.stdout.take());
    let err = reader(child.stderr.take());
    let mut status = None;
    let stop = || cancel.is_some_and(|c| c.load(Ordering::SeqCst) != 0);
    while start.elapsed() < limit && !stop() {
        if let Some(s) = child.try_wait()? {
            status = Some(s);
            break;
        }
        std::thread::sleep(POLL);
    }
    if status.is_none() {
        signal_group(pid, libc::SIGTERM);
        let until = Instant::now() + GRACE;
        while Instant::now() < until && child.try_wait()?.is_none() {
            std::thread::sleep(POLL);
        }
        signal_group(pid, libc::SIGKILL);
        let _ = child.wait();
    } else {
        // Whatever the command left in its group must not outlive the run.
        signal_group(pid, libc::SIGKILL);
    }
    let elapsed = start.elapsed();
    // Output pipes close when the group is gone; a grandchild that moved to
    // another group could hold them open, so the join is not waited on
    // forever: the threads are detached after a bounded wait.
    let join = |h: std::thread::JoinHandle<String>| {
        let until = Instant::now() + GRACE;
        while !h.is_finished() && Instant::now() < until {
            std::thread::sleep(POLL);
        }
        if h.is_finished() {
            h.join().unwrap_or_default()
        } else {
            String::from("(output still open after the run ended)")
        }
    };
    Ok(Finished { status, stdout: join(out), stderr: join(err), elapsed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_status_and_time_limit() {
        let mut c = Command::new("sh");
        c.args(["-c", "echo out; echo err >&2; exit 3"]);
        let f = run_limited(c, Duration::from_secs(10), None).unwrap();
        assert_eq!(f.status.and_then(|s| s.code()), Some(3));
        assert_eq!((f.stdout.as_str(), f.stderr.as_str()), ("out\n", "err\n"));
        let mut c = Command::new("sh");
        c.args(["-c", "sleep 30 & sleep 30; echo never"]);
        let f = run_limited(c, Duration::from_millis(300), None).unwrap();
        assert!(f.status.is_none(), "the limit ended it");
        assert!(f.elapsed < Duration::from_secs(5), "took {:?}", f.elapsed);
        assert!(!f.stdout.contains("never"));
    }
}
