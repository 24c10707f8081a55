//! The command line that starts one rank: directly, or through a launch agent.

use crate::env_vars::EnvList;

/// How to start a rank: `argv[0]` is the program to execute here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankCommand {
    pub argv: Vec<String>,
    /// Variables set in the started process's own environment.
    pub env: EnvList,
}

/// Agents that hand the remote side one string for a shell to split.
fn agent_uses_remote_shell(agent_program: &str) -> bool {
    let base = agent_program.rsplit('/').next().unwrap_or(agent_program);
    matches!(base, "ssh" | "rsh")
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
/// `AGENT HOST env VAR=value... program args`, or with `{host}` in the agent
/// replaced by the host name instead of appending it. For ssh/rsh the words
/// after the host are shell-quoted, since the remote shell splits them again.
pub fn build(agent: &str, host: &str, local: bool, env: &EnvList, program: &str, args: &[String]) -> RankCommand {
    if local {
        let mut argv = vec![program.to_string()];
        argv.extend(args.iter().cloned());
        return RankCommand { argv, env: env.clone() };
    }
    let mut argv: Vec<String> = Vec::new();
    let mut templated = false;
    for word in agent.split_whitespace() {
        templated |= word.contains("{host}");
        argv.push(word.replace("{host}", host));
    }
    if !templated {
        argv.push(host.to_string());
    }
    let quote = argv.first().map(|p| agent_uses_remote_shell(p)).unwrap_or(false);
    let mut rest = vec!["env".to_string()];
    rest.extend(env.0.iter().map(|(k, v)| format!("{k}={v}")));
    rest.push(program.to_string());
    rest.extend(args.iter().cloned());
    argv.extend(rest.into_iter().map(|w| if quote { shell_quote(&w) } else { w }));
    // Local agents (ip netns exec) also see the variables directly.
    RankCommand { argv, env: env.clone() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env() -> EnvList {
        EnvList(vec![("WANMPI_RANK".into(), "3".into()), ("MSG".into(), "a b".into())])
    }

    #[test]
    fn local_ranks_run_the_program_itself() {
        let c = build("ssh", "localhost", true, &env(), "./prog", &["--flag".into()]);
        assert_eq!(c.argv, ["./prog", "--flag"]);
        assert_eq!(c.env, env());
    }

    #[test]
    fn ssh_appends_the_host_and_quotes_for_the_remote_shell() {
        let c = build("ssh -p 2222", "node7", false, &env(), "/opt/prog", &["it's".into()]);
        assert_eq!(c.argv, ["ssh", "-p", "2222", "node7", "env", "WANMPI_RANK=3", "'MSG=a b'", "/opt/prog", r"'it'\''s'"]);
    }

    #[test]
    fn host_template_is_replaced_and_words_are_passed_as_they_are() {
        let c = build("ip netns exec {host}", "wan-h2", false, &env(), "./prog", &["a b".into()]);
        assert_eq!(c.argv, ["ip", "netns", "exec", "wan-h2", "env", "WANMPI_RANK=3", "MSG=a b", "./prog", "a b"]);
    }
}
