//! Chooses which usrsctp to link.
//!
//! 1. The patched usrsctp that `scripts/build-usrsctp` builds from Debian's
//!    source package plus `patches/usrsctp/` (static, `target/usrsctp/lib/
//!    libusrsctp.a`, or `$WANMPI_USRSCTP_DIR/lib`), when it is there.
//! 2. Otherwise Debian's binary libusrsctp (`apt-get install libusrsctp-dev`),
//!    exactly as before the patch series existed, so a build never breaks.
//!
//! `WANMPI_USRSCTP=system` forces 2 (to measure the stock stack beside the
//! patched one). The bindings are hand-written against usrsctp.h of 0.9.5,
//! which both are. The crate learns which one it got through the cfg
//! `usrsctp_patched` (`usrsctp_sys::PATCHED`).

use std::path::{Path, PathBuf};

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=WANMPI_USRSCTP");
    println!("cargo:rerun-if-env-changed=WANMPI_USRSCTP_DIR");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_DIR");
    println!("cargo::rustc-check-cfg=cfg(usrsctp_patched)");

    let dir = patched_dir();
    // Watch the directory (created if missing, so cargo does not rerun this
    // script on every build): a library built later is picked up.
    let _ = std::fs::create_dir_all(&dir);
    println!("cargo:rerun-if-changed={}", dir.display());
    let lib = dir.join("lib").join("libusrsctp.a");
    let forced_system = std::env::var("WANMPI_USRSCTP").is_ok_and(|v| v == "system");

    if !forced_system && lib.exists() && dir.join("stamp").exists() {
        println!("cargo:rustc-link-search=native={}", dir.join("lib").display());
        println!("cargo:rustc-link-lib=static=usrsctp");
        println!("cargo:rustc-link-lib=dylib=pthread");
        println!("cargo:rustc-cfg=usrsctp_patched");
        return;
    }
    if Path::new("/usr/include/usrsctp.h").exists() {
        println!("cargo:rerun-if-changed=/usr/include/usrsctp.h");
    } else {
        println!("cargo:warning=usrsctp.h not found: install libusrsctp-dev (apt-get install libusrsctp-dev) or run scripts/build-usrsctp");
    }
    println!("cargo:rustc-link-lib=dylib=usrsctp");
}

/// Where `scripts/build-usrsctp` puts its output.
fn patched_dir() -> PathBuf {
    if let Ok(d) = std::env::var("WANMPI_USRSCTP_DIR") {
        return PathBuf::from(d);
    }
    let target = match std::env::var("CARGO_TARGET_DIR") {
        Ok(t) => PathBuf::from(t),
        Err(_) => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("..").join("target"),
    };
    target.join("usrsctp")
}
