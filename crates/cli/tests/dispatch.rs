//! `wanmpi NAME ARGS` runs `wanmpi-NAME ARGS` beside the program or on PATH;
//! `wanmpi emulate` is the emulator's CLI; `wanmpi bench` the runner.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const WANMPI: &str = env!("CARGO_BIN_EXE_wanmpi");

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("wanmpi-cli-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmpdir");
    d
}

fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

fn run(exe: &Path, args: &[&str], path_env: &str) -> Output {
    Command::new(exe).args(args).env("PATH", path_env).output().expect("run wanmpi")
}

#[test]
fn external_commands_are_found_beside_then_on_path() {
    let dir = tmpdir("beside");
    let exe = dir.join("wanmpi");
    std::fs::copy(WANMPI, &exe).expect("copy wanmpi");
    script(&dir.join("wanmpi-greet"), "echo beside \"$@\"; exit 7");
    let other = tmpdir("path");
    script(&other.join("wanmpi-greet"), "echo on-path");
    script(&other.join("wanmpi-model"), "echo model \"$@\"");
    let path = format!("{}:/usr/bin:/bin", other.display());
    let out = run(&exe, &["greet", "a", "--flag", "b c"], &path);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "beside a --flag b c\n");
    assert_eq!(out.status.code(), Some(7), "the command's exit code is wanmpi's");
    let out = run(&exe, &["model", "--predict"], &path);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "model --predict\n");
    let out = run(&exe, &["nosuchthing"], &path);
    assert_eq!(out.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&out.stderr).contains("`wanmpi-nosuchthing` is not a wanmpi command"));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&other);
}

#[test]
fn emulate_runs_the_emulator_cli_and_bench_the_runner() {
    let beside = Path::new(WANMPI).parent().map(|d| d.join("wanmpi-emu")).filter(|p| p.is_file());
    if beside.is_some() {
        let out = Command::new(WANMPI).args(["emulate", "--help"]).output().expect("run");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("up") && text.contains("down"), "{text}");
    } else {
        eprintln!("SKIPPED the emulate half: wanmpi-emu is not built beside wanmpi (cargo build -p wanmpi-emulator)");
    }
    let out = Command::new(WANMPI).args(["bench", "--help"]).output().expect("run");
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("--latency"));
    let out = Command::new(WANMPI).args(["bench", "--impl", "lam"]).output().expect("run");
    assert_eq!(out.status.code(), Some(2), "usage error: {}", String::from_utf8_lossy(&out.stderr));
}
