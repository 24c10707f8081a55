//! mpirun's options as the ranks see them: environment, output, hosts,
//! launch agents, and the secret that keeps strays out.

mod common;
use common::*;

#[test]
fn variables_are_exported_to_every_rank() {
    let mut c = command(&[
        "-x",
        "PROBE_FROM_ENV",
        "-x",
        "PROBE_SET=two words",
        "--env",
        "PROBE_ENV=3",
        "--transport",
        "sctp",
        "--eager-limit",
        "1000",
        "--progress-thread",
        "-n",
        "2",
        PROBE,
        "env:PROBE_FROM_ENV",
        "env:PROBE_SET",
        "env:PROBE_ENV",
        "env:WANMPI_TRANSPORT",
        "env:WANMPI_EAGER_LIMIT",
        "env:WANMPI_PROGRESS_THREAD",
        "env:WANMPI_PASSED",
        "env:WANMPI_SIZE",
        "env:WANMPI_JOB_SECRET",
        "env:WANMPI_JOB_SECRET_FD",
        "secret",
        "env:WANMPI_ADDR",
    ]);
    c.env("PROBE_FROM_ENV", "hello").env("WANMPI_PASSED", "yes");
    let r = mpirun_with(c);
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr);
    for want in [
        "PROBE_FROM_ENV=hello",
        "PROBE_SET=two words",
        "PROBE_ENV=3",
        "WANMPI_TRANSPORT=sctp",
        "WANMPI_EAGER_LIMIT=1000",
        "WANMPI_PROGRESS_THREAD=1",
        "WANMPI_PASSED=yes",
        "WANMPI_SIZE=2",
        "WANMPI_ADDR unset",
        // Taken out of the environment once read.
        "WANMPI_JOB_SECRET unset",
        "WANMPI_JOB_SECRET_FD unset",
    ] {
        assert_eq!(r.stdout.matches(&format!("{want}\n")).count(), 2, "{want} in {}", r.stdout);
    }
    let secrets: Vec<&str> = r.stdout.lines().filter_map(|l| l.strip_prefix("secret=")).collect();
    assert_eq!(secrets.len(), 2);
    assert_eq!(secrets[0], secrets[1]);
    assert_eq!(secrets[0].len(), 64);
    // A fresh secret every job.
    let again = mpirun(&["-n", "1", PROBE, "secret"]);
    assert!(again.stdout.starts_with("secret="), "{}", again.stdout);
    assert!(!again.stdout.contains(secrets[0]));
}

#[test]
fn transport_defaults_to_the_environment_then_auto() {
    assert!(mpirun(&["-n", "1", PROBE, "env:WANMPI_TRANSPORT"]).stdout.contains("WANMPI_TRANSPORT=auto\n"));
    // --wan-transport reaches the ranks; without it they choose (wamp).
    assert!(mpirun(&["-n", "1", "--wan-transport", "sctp", PROBE, "env:WANMPI_WAN_TRANSPORT"]).stdout.contains("WANMPI_WAN_TRANSPORT=sctp\n"));
    let mut c = command(&["-n", "1", PROBE, "env:WANMPI_TRANSPORT"]);
    c.env("WANMPI_TRANSPORT", "wamp");
    assert!(mpirun_with(c).stdout.contains("WANMPI_TRANSPORT=wamp\n"));
}

#[test]
fn insecure_lan_reaches_the_ranks_only_when_asked() {
    // tcp between hosts is sealed unless the user trusts the LAN.
    assert!(mpirun(&["-n", "1", PROBE, "env:WANMPI_INSECURE_LAN"]).stdout.contains("WANMPI_INSECURE_LAN unset\n"));
    let r = mpirun(&["-n", "1", "--insecure-lan", PROBE, "env:WANMPI_INSECURE_LAN"]);
    assert!(r.stdout.contains("WANMPI_INSECURE_LAN=1\n"), "{} {}", r.stdout, r.stderr);
}

#[test]
fn an_unset_exported_variable_is_an_error() {
    let r = mpirun(&["-x", "PROBE_SURELY_NOT_SET", "-n", "1", PROBE]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("PROBE_SURELY_NOT_SET is not set"), "{}", r.stderr);
}

#[test]
fn tag_output_prefixes_lines_and_keeps_partial_ones() {
    let r = mpirun(&["--tag-output", "-n", "2", PROBE, "print:hello {rank}", "eprint:oops {rank}", "partial:tail {rank}"]);
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr);
    let mut out: Vec<&str> = r.stdout.lines().collect();
    out.sort();
    assert_eq!(out, ["[0] hello 0", "[0] tail 0", "[1] hello 1", "[1] tail 1"]);
    let mut err: Vec<&str> = r.stderr.lines().collect();
    err.sort();
    assert_eq!(err, ["[0] oops 0", "[1] oops 1"]);
}

#[test]
fn untagged_output_is_passed_on_as_written() {
    let r = mpirun(&["-n", "1", PROBE, "print:a", "partial:b"]);
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr);
    assert_eq!(r.stdout, "a\nb");
}

#[test]
fn options_after_the_program_are_the_programs() {
    // `--tag-output` after the program is a probe step (unknown: exit 99),
    // not an mpirun option.
    let r = mpirun(&["-n", "1", PROBE, "print:x", "--tag-output"]);
    assert_eq!(r.code, Some(99), "stderr: {}", r.stderr);
    assert!(r.stdout.starts_with("x\n"), "{}", r.stdout);
    assert!(r.stderr.contains("unknown step \"--tag-output\""), "{}", r.stderr);
}

#[test]
fn a_stray_with_the_wrong_secret_is_refused_and_the_job_goes_on() {
    let r = mpirun(&["-n", "2", PROBE, "intrude@1", "exchange", "finalize"]);
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr);
    assert!(r.stdout.contains("intruder refused: "), "{}", r.stdout);
    assert!(!r.stdout.contains("intruder accepted"));
    assert_eq!(r.stdout.matches("got v0,v1").count(), 2);
    assert!(r.stderr.contains("mpirun: refused a connection to the key/value service"), "{}", r.stderr);
}

#[test]
fn hostfile_places_ranks_and_sets_their_address() {
    let dir = std::env::temp_dir().join(format!("wanmpi-hostfile-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let hf = dir.join("hosts");
    std::fs::write(&hf, "# two local slots and one by address\nlocalhost slots=2\n127.0.0.1:1\n").unwrap();
    let r = mpirun(&["--hostfile", hf.to_str().unwrap(), PROBE, "exchange", "env:WANMPI_ADDR", "finalize"]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr);
    assert_eq!(r.stdout.matches("got v0,v1,v2").count(), 3, "{}", r.stdout);
    assert_eq!(r.stdout.matches("WANMPI_ADDR unset\n").count(), 2, "{}", r.stdout);
    assert_eq!(r.stdout.matches("WANMPI_ADDR=127.0.0.1\n").count(), 1, "{}", r.stdout);
}

#[test]
fn too_few_slots_is_an_error() {
    let r = mpirun(&["--host", "localhost:1", "-n", "2", PROBE]);
    assert_eq!(r.code, Some(2));
    assert!(r.stderr.contains("only 1 slots"), "{}", r.stderr);
}

#[test]
fn a_host_template_agent_runs_each_rank_through_it() {
    // `env PROBE_VIA={host}` stands in for `ip netns exec {host}`: a local
    // command that takes the host name and then runs the rest.
    let r = mpirun(&[
        "--host",
        "emu-a:1,emu-b:1",
        "--host-addr",
        "emu-b=198.18.0.2",
        "--launch-agent",
        "env PROBE_VIA={host}",
        PROBE,
        "exchange",
        "env:PROBE_VIA",
        "env:WANMPI_ADDR",
        "env:WANMPI_BOOTSTRAP",
        "finalize",
    ]);
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr);
    assert_eq!(r.stdout.matches("got v0,v1").count(), 2, "{}", r.stdout);
    assert!(r.stdout.contains("PROBE_VIA=emu-a\n") && r.stdout.contains("PROBE_VIA=emu-b\n"), "{}", r.stdout);
    assert!(r.stdout.contains("WANMPI_ADDR=198.18.0.2\n"), "{}", r.stdout);
    // Hosts that share this machine's files use the Unix socket.
    assert_eq!(r.stdout.matches("WANMPI_BOOTSTRAP=unix:").count(), 2, "{}", r.stdout);
}
