//! `mpirun`: see docs/launcher.md.
fn main() {
    wanmpi_launcher::cli::main()
}
