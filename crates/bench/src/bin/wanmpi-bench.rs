fn main() {
    std::process::exit(wanmpi_bench::cli::main_with(std::env::args_os().skip(1).collect()));
}
