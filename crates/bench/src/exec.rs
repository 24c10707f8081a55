//! Running one external command with a time limit, capturing its output,
//! and ending its whole process group if it runs too long.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How often the wait looks at the child.
const POLL: Duration = Duration::from_millis(20);
/// Between SIGTERM and SIGKILL.
const GRACE: Duration = Duration::from_secs(2);

#[derive(Debug)]
pub struct Finished {
    /// `None` when the limit passed and the group was killed.
    pub status: Option<ExitStatus>,
    /// The output had shown what was wanted (`Early`), and the command was
    /// killed because it did not exit within the grace after that.
    pub hung_after_result: bool,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

/// Ends a run soon after its output shows what was wanted: a program that
/// printed its result and then hangs at exit costs `grace`, not the limit.
pub struct Early<'a> {
    pub seen: &'a dyn Fn(&str) -> bool,
    pub grace: Duration,
}

type Shared = Arc<Mutex<Vec<u8>>>;

fn reader(pipe: Option<impl Read + Send + 'static>, into: Shared) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let Some(mut p) = pipe else { return };
        let mut buf = [0u8; 8192];
        loop {
            match p.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => into.lock().unwrap_or_else(|e| e.into_inner()).extend_from_slice(&buf[..n]),
            }
        }
    })
}

fn text(s: &Shared) -> String {
    String::from_utf8_lossy(&s.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
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
pub fn run_limited(mut cmd: Command, limit: Duration, cancel: Option<&AtomicUsize>, early: Option<Early>) -> std::io::Result<Finished> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).process_group(0);
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let pid = child.id();
    let (so, se): (Shared, Shared) = (Arc::default(), Arc::default());
    let out = reader(child.stdout.take(), so.clone());
    let err = reader(child.stderr.take(), se.clone());
    let mut status = None;
    let stop = || cancel.is_some_and(|c| c.load(Ordering::SeqCst) != 0);
    let mut deadline = start + limit;
    let mut shortened = false;
    while Instant::now() < deadline && !stop() {
        if let Some(s) = child.try_wait()? {
            status = Some(s);
            break;
        }
        if let Some(e) = early.as_ref().filter(|_| !shortened) {
            if (e.seen)(&text(&so)) {
                shortened = true;
                deadline = deadline.min(Instant::now() + e.grace);
            }
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
    let until = Instant::now() + GRACE;
    while !(out.is_finished() && err.is_finished()) && Instant::now() < until {
        std::thread::sleep(POLL);
    }
    let hung_after_result = status.is_none() && shortened && !stop();
    Ok(Finished { status, hung_after_result, stdout: text(&so), stderr: text(&se), elapsed })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_status_and_time_limit() {
        let mut c = Command::new("sh");
        c.args(["-c", "echo out; echo err >&2; exit 3"]);
        let f = run_limited(c, Duration::from_secs(10), None, None).unwrap();
        assert_eq!(f.status.and_then(|s| s.code()), Some(3));
        assert_eq!((f.stdout.as_str(), f.stderr.as_str()), ("out\n", "err\n"));
        let mut c = Command::new("sh");
        c.args(["-c", "sleep 30 & sleep 30; echo never"]);
        let f = run_limited(c, Duration::from_millis(300), None, None).unwrap();
        assert!(f.status.is_none() && !f.hung_after_result, "the limit ended it");
        assert!(f.elapsed < Duration::from_secs(5), "took {:?}", f.elapsed);
        assert!(!f.stdout.contains("never"));
        // Printed what was wanted, then hung: ended after the short grace.
        let mut c = Command::new("sh");
        c.args(["-c", "echo result; sleep 30"]);
        let seen = |s: &str| s.contains("result");
        let f = run_limited(c, Duration::from_secs(20), None, Some(Early { seen: &seen, grace: Duration::from_millis(300) })).unwrap();
        assert!(f.status.is_none() && f.hung_after_result, "{f:?}");
        assert!(f.elapsed < Duration::from_secs(5), "took {:?}", f.elapsed);
        assert_eq!(f.stdout, "result\n");
    }
}
