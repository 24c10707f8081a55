//! A rank program for the launcher's tests. Each argument is a step, run in
//! order; `STEP@R` runs only on rank R. `{rank}` and `{pid}` in texts are replaced.
//!
//!   exchange          put probe.<rank>, fence, get every rank's, print them
//!   fence | finalize  as the client does
//!   print:T eprint:T partial:T   a line to stdout / stderr / no newline
//!   env:VAR           print VAR=value (or VAR unset)
//!   envhex:VAR        print VAR=<value's bytes in hex> (or VAR unset)
//!   secret            print secret=<the job secret it read, in hex>
//!   addr              print addr=<the address it publishes> (or addr=none)
//!   stdin             print stdin=<what standard input holds, in hex>
//!   exit:C  kill  sleep:S  ignore-term  grandchild:S
//!   abort:C:MSG  lost:R:REASON  intrude (connect with a wrong secret)
//!   spawn:HOST:S      open a port, print port=<its whole name>, have mpirun
//!                     spawn this program on HOST with steps
//!                     `parent secret print:child-ready {pid} sleep:S`, and
//!                     wait for the child to connect (print parent-joined)
//!   parent            connect to the port mpirun gave this spawned rank

use std::io::Write;
use std::time::Duration;
use wanmpi_bootstrap::port::Port;
use wanmpi_bootstrap::{Client, JobEnv, KeyValue, SpawnApp, SpawnRequest};

fn main() {
    let env = match JobEnv::from_env() {
        Ok(Some(e)) => e,
        Ok(None) => fail("not started by a launcher"),
        Err(e) => fail(&e.to_string()),
    };
    let mut client: Option<Client> = None;
    for step in std::env::args().skip(1) {
        let (what, only) = match step.rsplit_once('@') {
            Some((w, r)) => (w.to_string(), r.parse::<u32>().ok()),
            None => (step.clone(), None),
        };
        if only.is_some_and(|r| r != env.rank) {
            continue;
        }
        let what = what.replace("{rank}", &env.rank.to_string()).replace("{pid}", &std::process::id().to_string());
        let (verb, arg) = what.split_once(':').unwrap_or((what.as_str(), ""));
        match verb {
            "exchange" => {
                let c = kv(&mut client, &env);
                c.put(&format!("probe.{}", env.rank), &format!("v{}", env.rank)).unwrap_or_else(|e| fail(&e.to_string()));
                c.fence().unwrap_or_else(|e| fail(&format!("fence: {e}")));
                let all: Vec<String> = (0..env.size).map(|r| c.get(&format!("probe.{r}")).unwrap_or_else(|e| fail(&e.to_string()))).collect();
                println!("rank {} of {} got {}", env.rank, env.size, all.join(","));
            }
            "fence" => kv(&mut client, &env).fence().unwrap_or_else(|e| fail(&format!("fence: {e}"))),
            "finalize" => kv(&mut client, &env).finalize().unwrap_or_else(|e| fail(&format!("finalize: {e}"))),
            "print" => println!("{arg}"),
            "eprint" => eprintln!("{arg}"),
            "partial" => {
                print!("{arg}");
                let _ = std::io::stdout().flush();
            }
            "env" => match std::env::var(arg) {
                Ok(v) => println!("{arg}={v}"),
                Err(_) => println!("{arg} unset"),
            },
            "envhex" => match std::env::var_os(arg) {
                Some(v) => println!("{arg}={}", hex(std::os::unix::ffi::OsStrExt::as_bytes(v.as_os_str()))),
                None => println!("{arg} unset"),
            },
            "secret" => println!("secret={}", hex(&env.secret)),
            "addr" => println!("addr={}", env.addr.as_deref().unwrap_or("none")),
            "stdin" => {
                let mut all = Vec::new();
                let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut all);
                println!("stdin={}", hex(&all));
            }
            "exit" => std::process::exit(arg.parse().unwrap_or(1)),
            "kill" => {
                // SAFETY: raising a signal at ourselves.
                unsafe { libc::raise(libc::SIGKILL) };
            }
            "sleep" => std::thread::sleep(Duration::from_secs_f64(arg.parse().unwrap_or(1.0))),
            "ignore-term" => {
                // SAFETY: setting a signal disposition to ignore.
                unsafe { libc::signal(libc::SIGTERM, libc::SIG_IGN) };
            }
            "grandchild" => {
                let child = std::process::Command::new("sleep").arg(arg).spawn().unwrap_or_else(|e| fail(&e.to_string()));
                println!("grandchild pid {}", child.id());
                std::mem::forget(child);
            }
            "abort" => {
                let (code, msg) = arg.split_once(':').unwrap_or((arg, ""));
                kv(&mut client, &env).abort(code.parse().unwrap_or(1), msg).unwrap_or_else(|e| fail(&format!("abort: {e}")));
                // The launcher ends us; do not outrun it.
                std::thread::sleep(Duration::from_secs(30));
            }
            "lost" => {
                let (rank, reason) = arg.split_once(':').unwrap_or((arg, "lost"));
                kv(&mut client, &env).report_peer_lost(rank.parse().unwrap_or(0), reason).unwrap_or_else(|e| fail(&e.to_string()));
            }
            "intrude" => {
                let mut wrong = env.secret;
                wrong[0] ^= 1;
                match Client::connect_to(&env.bootstrap, env.rank, env.size, &wrong, Duration::from_secs(5)) {
                    Ok(_) => println!("intruder accepted"),
                    Err(e) => println!("intruder refused: {e}"),
                }
            }
            "spawn" => {
                let (host, secs) = arg.split_once(':').unwrap_or((arg, "20"));
                let port = Port::open("127.0.0.1", "127.0.0.1", None).unwrap_or_else(|e| fail(&format!("open a port: {e}")));
                println!("port={}", port.name());
                let me = std::env::current_exe().unwrap_or_else(|e| fail(&e.to_string()));
                let args = ["parent", "secret", "print:child-ready {pid}", &format!("sleep:{secs}")].map(str::to_string).to_vec();
                let app = SpawnApp { program: me.display().to_string(), args, count: 1, wdir: None, host: Some(host.to_string()) };
                kv(&mut client, &env).spawn(&SpawnRequest { port: port.name(), apps: vec![app] }).unwrap_or_else(|e| fail(&format!("spawn: {e}")));
                match port.accept(1, Duration::from_secs(30), "probe") {
                    Ok(_) => println!("parent-joined"),
                    Err(e) => fail(&format!("accept: {e}")),
                }
            }
            "parent" => {
                let name = env.parent_port.as_deref().unwrap_or_else(|| fail("no parent port"));
                match wanmpi_bootstrap::port::connect(name, 1, Duration::from_secs(30)) {
                    Ok(_) => println!("child-joined"),
                    Err(e) => fail(&format!("connect to the parent: {e}")),
                }
            }
            _ => fail(&format!("unknown step {step:?}")),
        }
    }
}

/// The client, connected on first use (a program that never uses it never
/// counts as having started MPI).
fn kv<'a>(client: &'a mut Option<Client>, env: &JobEnv) -> &'a mut Client {
    client.get_or_insert_with(|| Client::connect(env).unwrap_or_else(|e| fail(&format!("connect: {e}"))))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn fail(msg: &str) -> ! {
    eprintln!("probe: {msg}");
    std::process::exit(99)
}
