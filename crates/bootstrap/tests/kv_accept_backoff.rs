//! The key/value service out of file descriptors: `accept` fails with
//! EMFILE while a connection waits in the backlog. The accept thread must
//! back off (a few wakeups a second), not spin on the error, report it once,
//! and serve the waiting connection once descriptors are free again.
//!
//! A test binary of its own: it lowers this process's descriptor limit.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::net::TcpStream;
use std::sync::mpsc::channel;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use wanmpi_bootstrap::{BootstrapAddr, Server, ServerConfig, ServerEvent};

/// The thread id of this process's thread whose name starts with `prefix`.
fn thread_named(prefix: &str) -> Option<String> {
    std::fs::read_dir("/proc/self/task").ok()?.filter_map(|e| e.ok()).find_map(|e| {
        let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
        comm.starts_with(prefix).then(|| e.file_name().to_string_lossy().into_owned())
    })
}

/// User plus system CPU time of a thread so far, in clock ticks, from its
/// `stat` file (kept open: re-reading needs no new descriptor).
fn cpu_ticks(stat: &mut File) -> u64 {
    let mut s = String::new();
    stat.seek(SeekFrom::Start(0)).expect("seek stat");
    stat.read_to_string(&mut s).expect("read stat");
    // Fields after the name: state is field 3, utime 14, stime 15.
    let rest: Vec<&str> = s.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    rest[11].parse::<u64>().unwrap_or(0) + rest[12].parse::<u64>().unwrap_or(0)
}

fn nofile() -> libc::rlimit {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit fills the struct.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) }, 0);
    r
}

fn set_nofile(r: &libc::rlimit) {
    // SAFETY: setrlimit reads the struct.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, r) }, 0, "setrlimit: {}", std::io::Error::last_os_error());
}

#[test]
fn accept_out_of_descriptors_backs_off_and_recovers() {
    let (tx, rx) = channel();
    let tx = Mutex::new(tx);
    let server = Server::start(
        &BootstrapAddr::Tcp("127.0.0.1".into(), 0),
        ServerConfig::new(1, [7; 32]),
        Box::new(move |e| {
            let _ = tx.lock().map(|t| t.send(e));
        }),
    )
    .expect("start the service");
    let port: u16 = server.address().rsplit(':').next().and_then(|p| p.parse().ok()).expect("port");
    // The thread names itself once it runs: wait for that, boundedly.
    let named = Instant::now() + Duration::from_secs(5);
    let tid = loop {
        match thread_named("wanmpi-kv-acc") {
            Some(t) => break t,
            None if Instant::now() < named => std::thread::sleep(Duration::from_millis(5)),
            None => panic!("no accept thread within 5 s"),
        }
    };
    let mut stat = File::open(format!("/proc/self/task/{tid}/stat")).expect("its stat file");

    // Use up every descriptor under a lowered limit, then free one for the
    // connection: the service has none left to accept it with.
    let saved = nofile();
    set_nofile(&libc::rlimit { rlim_cur: 256.min(saved.rlim_max), rlim_max: saved.rlim_max });
    let mut filler: Vec<File> = Vec::new();
    while let Ok(f) = File::open("/dev/null") {
        filler.push(f);
        assert!(filler.len() < 100_000, "the limit did not hold");
    }
    filler.pop();
    let conn = TcpStream::connect(("127.0.0.1", port));
    let before = cpu_ticks(&mut stat);
    let window = Instant::now();
    std::thread::sleep(Duration::from_secs(2));
    let used = cpu_ticks(&mut stat) - before;
    let waited = window.elapsed();
    drop(filler);
    set_nofile(&saved);
    let mut conn = conn.expect("connect (the kernel completes it into the backlog)");

    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    eprintln!("accept thread: {used} ticks of CPU in {waited:?} at {hz} ticks/s while out of descriptors");
    // Spinning on EMFILE costs a whole core (about `hz` ticks a second);
    // backing off costs a few wakeups. Allow 5% of the window.
    assert!(used * 20 <= hz * waited.as_secs(), "the accept thread used {used} ticks in {waited:?}: it spins");
    let events: Vec<ServerEvent> = rx.try_iter().collect();
    let reports = events.iter().filter(|e| matches!(e, ServerEvent::Refused { reason, .. } if reason.contains("accept failed"))).count();
    assert_eq!(reports, 1, "the error is reported once per episode: {events:?}");

    // With descriptors back, the waiting connection is served: the greeting
    // comes within the longest backoff (200 ms) and some slack.
    conn.set_read_timeout(Some(Duration::from_secs(3))).expect("timeout");
    let mut greeting = String::new();
    BufReader::new(&mut conn).read_line(&mut greeting).expect("the greeting after the service recovered");
    assert!(greeting.starts_with("wanmpi-kv 2 "), "{greeting:?}");
}
