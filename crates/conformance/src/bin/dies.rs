//! Robustness: the rank named by the first argument leaves mid-run in the
//! way named by the second (`exit`: exits with code 3 without finalizing;
//! `kill`: SIGKILLs itself; `midsend`: SIGKILLs itself while sending each
//! other rank a 64 MiB message); the others are blocked in a receive from it.
//! The harness checks that the job ends within a bounded time with a
//! message naming the rank.

use wanmpi::prelude::*;

fn main() -> wanmpi::Result<()> {
    let victim: i32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let how = std::env::args().nth(2).unwrap_or_else(|| "kill".into());
    let u = initialize()?;
    let world = u.world();
    world.barrier()?;
    const BIG: usize = 64 << 20;
    if world.rank() == victim && how == "midsend" {
        std::thread::spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(30));
            kill_self();
        });
        let data = vec![7u8; BIG];
        for r in (0..world.size()).filter(|&r| r != victim) {
            world.send(&data, r, 0)?;
        }
        eprintln!("rank {victim}: every 64 MiB send finished before the kill");
        kill_self();
    }
    if world.rank() == victim {
        std::thread::sleep(std::time::Duration::from_millis(200));
        if how == "exit" {
            std::process::exit(3);
        }
        kill_self();
    }
    let mut x = vec![0u8; if how == "midsend" { BIG } else { 1 }];
    world.receive_into(&mut x, victim, 0)?;
    eprintln!("rank {}: receive from the dead rank completed?!", world.rank());
    Ok(())
}

/// SIGKILL to ourselves without a libc dependency: `kill -9 <pid>`.
fn kill_self() -> ! {
    let pid = std::process::id().to_string();
    let _ = std::process::Command::new("kill").args(["-9", &pid]).status();
    std::process::exit(99)
}
