//! Links the system libusrsctp. The bindings are hand-written against
//! /usr/include/usrsctp.h of Debian's libusrsctp-dev 0.9.5; install it with
//! `apt-get install libusrsctp-dev`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::path::Path::new("/usr/include/usrsctp.h").exists() {
        println!("cargo:rerun-if-changed=/usr/include/usrsctp.h");
    } else {
        println!("cargo:warning=usrsctp.h not found: install libusrsctp-dev (apt-get install libusrsctp-dev)");
    }
    println!("cargo:rustc-link-lib=dylib=usrsctp");
}
