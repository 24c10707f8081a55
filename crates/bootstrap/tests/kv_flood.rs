//! The key/value service under a connection flood from a stranger on
//! loopback: the job's ranks still get in and exchange, the service's
//! threads stay bounded throughout, and the launcher's log gets a count, not
//! a line per connection.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::channel;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use wanmpi_bootstrap::server::MAX_HANDSHAKES;
use wanmpi_bootstrap::{BootstrapAddr, Client, KeyValue, Server, ServerConfig, ServerEvent};

const SECRET: [u8; 32] = [0x42; 32];
const RANKS: u32 = 4;
/// The flood: this many connections at most, for this long at most.
const FLOOD_CONNECTIONS: usize = 6000;
const FLOOD_TIME: Duration = Duration::from_secs(4);
/// Idle connections a flooder keeps open at once (its own descriptors).
const HELD: usize = 150;

/// Threads of this process whose name starts with `prefix`.
fn threads_named(prefix: &str) -> usize {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else { return 0 };
    dir.filter_map(|e| e.ok())
        .filter(|e| std::fs::read_to_string(e.path().join("comm")).map(|c| c.trim_end().starts_with(prefix)).unwrap_or(false))
        .count()
}

/// One flooding thread: connects again and again, and does one of the
/// things a stranger might with each connection.
fn flooder(port: u16, made: Arc<AtomicUsize>, stop: Arc<AtomicBool>, kind: usize) {
    let mut held: Vec<TcpStream> = Vec::new();
    // The silent flooder goes first: on a fast machine the others reach
    // the connection cap within a second and can overflow the listen
    // backlog, so silent connections made among them may never be accepted
    // and the handshake table never fills.
    if !kind.is_multiple_of(4) {
        std::thread::sleep(Duration::from_millis(100));
    }
    let started = Instant::now();
    while !stop.load(Ordering::Relaxed) && started.elapsed() < FLOOD_TIME && made.load(Ordering::Relaxed) < FLOOD_CONNECTIONS {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else { continue };
        made.fetch_add(1, Ordering::Relaxed);
        match kind % 4 {
            // Silence: hold it open and say nothing. The first `HELD` stay
            // open for the whole flood time, whatever the machine's speed:
            // the service may accept them late (its backlog), and one closed
            // by then would prove nothing.
            0 => {
                if held.len() < HELD {
                    held.push(s);
                }
            }
            // Garbage where the hello should be.
            1 => {
                let _ = s.write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n");
                held.push(s);
            }
            // A hello with a made-up proof.
            2 => {
                let mut greeting = [0u8; 64];
                let _ = s.set_read_timeout(Some(Duration::from_millis(200)));
                let _ = s.read(&mut greeting);
                let _ = s.write_all(format!("hello 0 {} {}\n", "ab".repeat(16), "00".repeat(32)).as_bytes());
            }
            // Connect and go.
            _ => drop(s),
        }
        if kind % 4 == 1 && held.len() > HELD {
            held.remove(0);
        }
    }
    while kind.is_multiple_of(4) && !stop.load(Ordering::Relaxed) && started.elapsed() < FLOOD_TIME {
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_connection_flood_leaves_the_job_unharmed_and_threads_bounded() {
    let (tx, rx) = channel();
    let tx = Mutex::new(tx);
    let server = Server::start(
        &BootstrapAddr::Tcp("127.0.0.1".into(), 0),
        ServerConfig::new(RANKS, SECRET),
        Box::new(move |e| {
            let _ = tx.lock().map(|t| t.send(e));
        }),
    )
    .expect("start the service");
    let address = server.address().to_string();
    let port: u16 = address.rsplit(':').next().and_then(|p| p.parse().ok()).expect("port");

    let made = Arc::new(AtomicUsize::new(0));
    // Never set: the flood runs its course, bounded by count and time.
    let stop = Arc::new(AtomicBool::new(false));
    let floods: Vec<_> = (0..4)
        .map(|k| {
            let (m, s) = (made.clone(), stop.clone());
            std::thread::spawn(move || flooder(port, m, s, k))
        })
        .collect();

    // Watch the service's threads while everything runs.
    let most = Arc::new(AtomicUsize::new(0));
    let watching = Arc::new(AtomicBool::new(true));
    let watcher = {
        let (most, watching) = (most.clone(), watching.clone());
        std::thread::spawn(move || {
            while watching.load(Ordering::Relaxed) {
                most.fetch_max(threads_named("wanmpi-kv"), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(2));
            }
        })
    };

    // The job starts once the flood is under way.
    let deadline = Instant::now() + Duration::from_secs(5);
    while made.load(Ordering::Relaxed) < 300 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let job_started = Instant::now();
    let ranks: Vec<_> = (0..RANKS)
        .map(|rank| {
            let address = address.clone();
            std::thread::spawn(move || -> Result<Vec<String>, String> {
                // Ranks arrive spread over the flood, as real ones do.
                std::thread::sleep(Duration::from_millis(400) * rank);
                let mut c = Client::connect_to(&address, rank, RANKS, &SECRET, Duration::from_secs(30)).map_err(|e| format!("connect: {e}"))?;
                c.put(&format!("ep.{rank}"), &format!("v{rank}")).map_err(|e| e.to_string())?;
                c.fence().map_err(|e| format!("fence: {e}"))?;
                let got = (0..RANKS).map(|r| c.get(&format!("ep.{r}"))).collect::<Result<Vec<_>, _>>().map_err(|e| e.to_string())?;
                c.finalize().map_err(|e| e.to_string())?;
                Ok(got)
            })
        })
        .collect();
    for (rank, h) in ranks.into_iter().enumerate() {
        let got = h.join().expect("rank thread").unwrap_or_else(|e| panic!("rank {rank} under the flood: {e}"));
        assert_eq!(got, ["v0", "v1", "v2", "v3"], "rank {rank}");
    }
    let job_took = job_started.elapsed();
    let flood_during_job = made.load(Ordering::Relaxed);
    for f in floods {
        f.join().expect("flooder");
    }
    watching.store(false, Ordering::Relaxed);
    watcher.join().expect("watcher");

    let flood = made.load(Ordering::Relaxed);
    let most = most.load(Ordering::Relaxed);
    eprintln!(
        "flood: {flood} connections ({flood_during_job} by the job's end), job took {job_took:?}, {} handshakes cut, at most {most} service threads",
        server.handshakes_cut()
    );
    assert!(flood >= 1000, "the flood was too small to show anything: {flood} connections");
    assert!(server.handshakes_cut() > 0, "the flood never filled the handshake table");
    // accept + handshakes (at most twice the table) + the job's own ranks,
    // and a few that have left the count but not yet the process.
    let bound = 1 + 2 * MAX_HANDSHAKES + RANKS as usize + 8;
    assert!(most <= bound, "{most} service threads, bound {bound}");
    assert!(job_took < Duration::from_secs(20), "the job took {job_took:?} under the flood");

    // Once the flood is gone, the handshake threads end (the silent ones at
    // their hello timeout, 10 s, at the latest).
    let deadline = Instant::now() + Duration::from_secs(15);
    while server.handshake_threads() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(server.handshake_threads(), 0, "handshake threads left after the flood");

    // The log: a few lines and counts, not one per connection.
    drop(server);
    let refusals: Vec<ServerEvent> = rx.try_iter().filter(|e| matches!(e, ServerEvent::Refused { .. } | ServerEvent::RefusedMore { .. })).collect();
    assert!(refusals.len() <= 10 + 4, "{} refusal reports for {flood} connections", refusals.len());
    let counted: u64 = refusals.iter().map(|e| if let ServerEvent::RefusedMore { count } = e { *count } else { 0 }).sum();
    let one_by_one = refusals.iter().filter(|e| matches!(e, ServerEvent::Refused { .. })).count() as u64;
    // Every stranger's connection is accounted for (a few may still have
    // been finishing when the service stopped).
    assert!(one_by_one + counted + 2 * MAX_HANDSHAKES as u64 >= flood as u64, "{one_by_one} reported and {counted} counted of {flood}");
}
