//! Compiles the C helper for `long double` reductions (see csrc/long_double.c):
//! Rust has no 80-bit float type.

fn main() {
    println!("cargo:rerun-if-changed=csrc/long_double.c");
    cc::Build::new().file("csrc/long_double.c").warnings(true).compile("wanmpi_long_double");
}
