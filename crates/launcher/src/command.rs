//! The command line that starts one rank: directly, or through a launch agent.
//!
//! The job secret is never on a command line or in an environment: the
//! launcher writes it into a pipe (see `process::spawn`). A local rank finds
//! the pipe on descriptor 3; through an agent it is the agent's standard
//! input (ssh forwards it), and a small `sh` step on the far side moves it
//! to descriptor 3 and gives the program `/dev/null` as its input, as local
//! ranks have. Either way the rank learns the descriptor from
//! `WANMPI_JOB_SECRET_FD` and reads it once at init.
//!
//! On a remote host (an agent the host is appended to, such as ssh) the
//! step also ends the rank with the job: mpirun keeps the agent's standard
//! input open while the rank runs, so its end of file on the far side means
//! mpirun or the connection is gone, and the step then ends the rank's
//! process group (see `REMOTE_STEP`).

use crate::env_vars::EnvList;

/// The descriptor a rank reads the secret from.
pub const SECRET_FD: i32 = 3;

/// Run by `sh -c` on the agent's far side: the secret pipe (stdin) to
/// descriptor 3, `/dev/null` as stdin, then the rank's words unchanged.
const SECRET_STEP: &str = r#"exec 3<&0 0</dev/null; exec "$@""#;

/// The step on a remote host. It reads the secret line from stdin and
/// hands it to the rank on descriptor 3 through a here-document (a pipe in
/// dash, never a file or an argument), keeps stdin (as descriptor 4) in a
/// watcher in the background, and becomes the rank with `/dev/null` as its
/// input (in the foreground, so the rank keeps its signals' default
/// actions and its exit status is what ssh reports). When stdin closes
/// (mpirun ended the job or died, so its ssh went, or the connection
/// broke: a command without a terminal gets no SIGHUP; or the rank ended
/// and sshd closed the session) the watcher sends SIGTERM to the step's
/// process group (sshd makes the command a session leader, so the group is
/// the rank and what it started), then SIGKILL 2 s later. It also exports
/// the address ssh's far side sees its client at (`$SSH_CONNECTION`'s first
/// field) as `WANMPI_SSH_CLIENT`: one more address at which the rank may
/// reach mpirun's key/value service (`wanmpi_bootstrap::service_addrs`).
const REMOTE_STEP: &str = r#"read -r s || exit 127
export WANMPI_SSH_CLIENT="${SSH_CONNECTION%% *}"
exec 4<&0 0</dev/null
(trap '' TERM; while read -r _ <&4; do :; done; kill -TERM 0; sleep 2; kill -KILL 0) >/dev/null 2>&1 &
exec "$@" 3<<EOF 4<&-
$s
EOF"#;

/// Where the started process finds the pipe carrying the secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretVia {
    /// On this descriptor (a local rank); its stdin is `/dev/null`.
    Fd(i32),
    /// On standard input (a launch agent, which passes it on).
    Stdin,
}

/// How to start a rank: `argv[0]` is the program to execute here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankCommand {
    pub argv: Vec<String>,
    /// Variables set in the started process's own environment.
    pub env: EnvList,
    pub secret: SecretVia,
}

/// Quotes a word for a POSIX shell when it needs it.
pub fn shell_quote(w: &str) -> String {
    let plain = !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "_-./:=,@%+".contains(c));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', r"'\''"))
    }
}

/// Local ranks run `program args` with `env` set. Others run
/// `AGENT HOST sh -c STEP wanmpi-rank env VAR=value... program args`, or
/// with `{host}` in the agent replaced by the host name instead of appending
/// it (STEP moves the secret's pipe from stdin to descriptor 3).
///
/// An agent the host is appended to (ssh, rsh, or anything used like them)
/// joins its words into one string for a remote shell, so every word after
/// the host is shell-quoted: the remote shell gives the rank exactly the
/// values it was given, and runs nothing else. A `{host}` agent (such as
/// `ip netns exec {host}`) executes its words directly, so they are passed
/// as they are: no shell sees them until `sh -c STEP`, which passes its
/// arguments on as `"$@"`, untouched.
pub fn build(agent: &[String], host: &str, local: bool, env: &EnvList, program: &str, args: &[String]) -> RankCommand {
    if local {
        let mut argv = vec![program.to_string()];
        argv.extend(args.iter().cloned());
        return RankCommand { argv, env: env.clone(), secret: SecretVia::Fd(SECRET_FD) };
    }
    // A `{host}` agent runs here, where mpirun ends the rank's group itself.
    let step = if is_templated(agent) { SECRET_STEP } else { REMOTE_STEP };
    let mut rest = vec!["sh".to_string(), "-c".to_string(), step.to_string(), "wanmpi-rank".to_string(), "env".to_string()];
    rest.extend(env.0.iter().map(|(k, v)| format!("{k}={v}")));
    rest.push(program.to_string());
    rest.extend(args.iter().cloned());
    let argv = on_host(agent, host, rest);
    // Local agents (ip netns exec) also see the variables directly.
    RankCommand { argv, env: env.clone(), secret: SecretVia::Stdin }
}

/// Whether the agent names the host itself (`{host}`), rather than having
/// it appended.
pub fn is_templated(agent: &[String]) -> bool {
    agent.iter().any(|w| w.contains("{host}"))
}

/// The command that runs `words` on `host` through `agent`: `{host}`
/// replaced and the words as they are, or the host appended and every word
/// shell-quoted for the remote shell an appended agent (ssh) runs them in.
pub fn on_host(agent: &[String], host: &str, words: Vec<String>) -> Vec<String> {
    let templated = is_templated(agent);
    let mut argv: Vec<String> = agent.iter().map(|w| w.replace("{host}", host)).collect();
    if templated {
        argv.extend(words);
    } else {
        argv.push(host.to_string());
        argv.extend(words.iter().map(|w| shell_quote(w)));
    }
    argv
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn env() -> EnvList {
        EnvList(vec![("WANMPI_RANK".into(), "3".into()), ("MSG".into(), "a b".into())])
    }

    #[test]
    fn local_ranks_run_the_program_itself() {
        let c = build(&words("ssh"), "localhost", true, &env(), "./prog", &["--flag".into()]);
        assert_eq!(c.argv, ["./prog", "--flag"]);
        assert_eq!(c.env, env());
    }

    #[test]
    fn ssh_appends_the_host_and_quotes_for_the_remote_shell() {
        let c = build(&words("ssh -p 2222"), "node7", false, &env(), "/opt/prog", &["it's".into()]);
        let step = shell_quote(REMOTE_STEP);
        assert_eq!(
            c.argv,
            ["ssh", "-p", "2222", "node7", "sh", "-c", &step, "wanmpi-rank", "env", "WANMPI_RANK=3", "'MSG=a b'", "/opt/prog", r"'it'\''s'"]
        );
        assert_eq!(c.secret, SecretVia::Stdin);
    }

    #[test]
    fn host_template_is_replaced_and_words_are_passed_as_they_are() {
        let c = build(&words("ip netns exec {host}"), "wan-h2", false, &env(), "./prog", &["a b".into()]);
        assert_eq!(
            c.argv,
            ["ip", "netns", "exec", "wan-h2", "sh", "-c", SECRET_STEP, "wanmpi-rank", "env", "WANMPI_RANK=3", "MSG=a b", "./prog", "a b"]
        );
        assert_eq!(c.secret, SecretVia::Stdin);
    }

    /// What a POSIX shell makes of a quoted word: the test runs the real
    /// `sh`, as the remote side of ssh does, and nothing may run.
    #[test]
    fn quoted_words_survive_a_real_shell_unchanged() {
        let hostile = [
            "a b",
            "it's",
            r#""q" 'q'"#,
            "x; touch /nonexistent/pwned",
            "$(echo pwned)",
            "`echo pwned`",
            "tab\tnew\nline",
            "",
            "\\",
            "*",
            "$HOME",
            "!",
        ];
        let line: Vec<String> = ["printf", "[%s]\\n"].iter().map(|w| shell_quote(w)).chain(hostile.iter().map(|w| shell_quote(w))).collect();
        let out = std::process::Command::new("sh").arg("-c").arg(line.join(" ")).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let want: String = hostile.iter().map(|w| format!("[{w}]\n")).collect();
        assert_eq!(String::from_utf8_lossy(&out.stdout), want);
    }
}

/// The remote step under a real `sh`, in a process group of its own as
/// sshd would start it.
#[cfg(test)]
mod remote_step {
    use super::REMOTE_STEP;
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::process::CommandExt;
    use std::process::{Child, Command, Stdio};
    use std::time::{Duration, Instant};

    fn step(rank: &str) -> Child {
        let mut c = Command::new("sh");
        c.args(["-c", REMOTE_STEP, "wanmpi-rank", "sh", "-c", rank]);
        c.stdin(Stdio::piped()).stdout(Stdio::piped()).process_group(0);
        let mut child = c.spawn().expect("sh");
        child.stdin.as_mut().expect("stdin").write_all(b"s3cr3t\n").expect("secret");
        child
    }

    fn wait_bounded(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(st) = child.try_wait().expect("try_wait") {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        None
    }

    #[test]
    fn the_rank_gets_the_secret_on_fd_3_and_its_exit_code_is_the_steps() {
        let mut child = step(r#"read -r x <&3; echo "got $x"; read -r y && echo "stdin $y"; exit 7"#);
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("line");
        assert_eq!(line, "got s3cr3t\n");
        // stdin stays open (mpirun holds it) and the rank still ends on its own.
        let st = wait_bounded(&mut child, Duration::from_secs(5)).expect("the step ended");
        assert_eq!(st.code(), Some(7));
        drop(child.stdin.take());
    }

    /// The rank runs in the foreground: SIGINT and SIGQUIT keep their
    /// default actions (a background job of `sh` would ignore them).
    #[test]
    fn the_rank_keeps_the_default_action_of_sigint() {
        let mut child = step(r#"grep SigIgn /proc/$$/status"#);
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("line");
        let mask = u64::from_str_radix(line.trim().trim_start_matches("SigIgn:").trim(), 16).expect("mask");
        assert_eq!(mask & ((1 << (libc::SIGINT - 1)) | (1 << (libc::SIGQUIT - 1))), 0, "{line}");
        assert!(wait_bounded(&mut child, Duration::from_secs(5)).is_some_and(|s| s.success()));
        drop(child.stdin.take());
    }

    #[test]
    fn closing_stdin_ends_a_rank_that_ignores_sigterm() {
        let mut child = step(r#"trap '' TERM; echo $$; while :; do sleep 1; done"#);
        let mut line = String::new();
        BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("pid line");
        let pid: i32 = line.trim().parse().expect("pid");
        // mpirun gone: its end of the agent's stdin closes.
        drop(child.stdin.take());
        assert!(wait_bounded(&mut child, Duration::from_secs(5)).is_some(), "the step did not end");
        let deadline = Instant::now() + Duration::from_secs(5);
        // SAFETY: kill with signal 0 only asks whether the pid exists.
        while unsafe { libc::kill(pid, 0) } == 0 && !zombie(pid) {
            assert!(Instant::now() < deadline, "rank {pid} survived the end of its stdin");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn zombie(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')))
            .unwrap_or(true)
    }
}
