//! `wanmpi`: the project's command. `wanmpi emulate ...` is the WAN
//! emulator's CLI (`wanmpi-emu`), `wanmpi bench ...` the experiment runner,
//! and any other `wanmpi NAME ARGS` runs `wanmpi-NAME ARGS` found beside
//! this program or on PATH (like git), e.g. `wanmpi model` -> `wanmpi-model`.

mod dispatch;

use clap::{Parser, Subcommand};
use std::ffi::OsString;

#[derive(Debug, Parser)]
#[command(
    name = "wanmpi",
    version,
    about = "wanmpi: MPI for wide-area networks",
    after_help = "Other commands: `wanmpi NAME ARGS` runs wanmpi-NAME (beside this program or on PATH).\nThe launcher is `mpirun` (docs/launcher.md)."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The WAN emulator (same as wanmpi-emu): up, down, status, hosts, exec, link.
    #[command(disable_help_flag = true)]
    Emulate {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<OsString>,
    },
    /// Run a grid of implementations x latencies x losses x sizes over the emulator.
    #[command(disable_help_flag = true)]
    Bench {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, value_name = "ARGS")]
        args: Vec<OsString>,
    },
    #[command(external_subcommand)]
    External(Vec<OsString>),
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Emulate { args } => dispatch::exec_program("wanmpi-emu", &args),
        Command::Bench { args } => wanmpi_bench::cli::main_with(args),
        Command::External(mut words) => {
            if words.is_empty() {
                2
            } else {
                let name = words.remove(0);
                dispatch::exec_program(&format!("wanmpi-{}", name.to_string_lossy()), &words)
            }
        }
    };
    std::process::exit(code)
}
