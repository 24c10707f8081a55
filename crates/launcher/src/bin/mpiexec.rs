//! `mpiexec`: the same program as `mpirun`.
fn main() {
    wanmpi_launcher::cli::main()
}
