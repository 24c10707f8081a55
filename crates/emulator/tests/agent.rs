//! Emulated hosts share nothing but the network: each has its own `/tmp`,
//! `/dev/shm`, host name and `/etc/hosts`, reached through `wanmpi-emu
//! agent`, which behaves as ssh does (host after the agent's words, the
//! command one string for `sh -c`, stdin passed on, exit status kept, the
//! environment not forwarded). The holders go with `down`. Needs root.

mod common;

use common::*;
use std::io::Write;
use std::process::{Command, Output, Stdio};
use wanmpi_emulator::NatKind;

fn agent(dir: &std::path::Path, host: &str, cmd: &str, stdin: &[u8]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_wanmpi-emu"));
    c.arg("agent").arg(dir).arg(host).arg(cmd).env("WEMU_NOT_FORWARDED", "1");
    let mut child = c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("run agent");
    child.stdin.take().expect("stdin").write_all(stdin).expect("write stdin");
    child.wait_with_output().expect("agent output")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

#[test]
fn hosts_have_their_own_tmp_and_shm_through_an_ssh_like_agent() {
    let _g = serial();
    let mut t = topo(3, "delay=1ms");
    t.set_nat(&[NatKind::None, NatKind::OneToOne, NatKind::None]).expect("nat");
    let Some(emu) = up_or_skip("hosts_have_their_own_tmp_and_shm_through_an_ssh_like_agent", &t) else { return };
    let dir = emu.state_dir().to_path_buf();

    let f = format!("wemu-agent-test-{}", std::process::id());
    let w = agent(&dir, "h1", &format!("echo one > /tmp/{f} && echo one > /dev/shm/{f} && hostname && cat /tmp/{f}"), b"");
    assert!(w.status.success(), "agent failed: {}", String::from_utf8_lossy(&w.stderr));
    assert_eq!(text(&w), "h1\none");
    let r = agent(&dir, "198.18.0.3", &format!("hostname; ls /tmp/{f} || ls /dev/shm/{f}"), b"");
    assert_eq!(text(&r), "h2", "host 2 sees host 1's files: {r:?}");
    assert!(!r.status.success(), "ls of the other host's files should fail");
    for machine in ["/tmp", "/dev/shm"] {
        assert!(!std::path::Path::new(machine).join(&f).exists(), "host 1's file is in this machine's {machine}");
    }

    // stdin passed on, words joined for sh -c, exit status kept, environment dropped
    let o = agent(&dir, "1", "read x; echo got $x ${WEMU_NOT_FORWARDED:-unset}; exit 7", b"secret\n");
    assert_eq!((text(&o), o.status.code()), ("got secret unset".to_string(), Some(7)));
    // the host's own interfaces and names: private address behind 1:1 NAT
    let ip = agent(&dir, "1", "ip -o -4 addr show; ls /sys/class/net; getent hosts h1 h2", b"");
    let s = text(&ip);
    assert!(s.contains("10.1.0.2/24") && !s.contains("198.18.0.2"), "{s}");
    assert!(s.contains("eth0") && s.contains("tun0"), "/sys shows another namespace: {s}");
    assert!(s.contains("10.1.0.2") && s.contains("198.18.0.3"), "/etc/hosts: {s}");

    // from inside an emulated host (as mpirun on host 0 would), with SSH_CONNECTION
    let exe = env!("CARGO_BIN_EXE_wanmpi-emu");
    let line = format!("{exe} agent {} 1 'echo $SSH_CONNECTION; cat /tmp/{f}'", dir.display());
    let nested = emu.isolated_command(0, "/bin/sh").expect("host 0").args(["-c", &line]).output().expect("nested agent");
    assert_eq!(String::from_utf8_lossy(&nested.stdout).trim(), "198.18.0.1 50022 10.1.0.2 22\none", "{nested:?}");

    assert_eq!(holders_of(&dir).len(), 3, "one holder per host");
    let (id, pid) = (emu.id().to_string(), emu.forwarder_pid());
    emu.down().expect("down");
    assert_gone(&id, &dir, pid); // holders too
}
