//! Name publishing (MPI_Publish_name, MPI_Lookup_name,
//! MPI_Unpublish_name, §11.2.4): a directory of this user's on this
//! machine, one file per service holding its port name, so that jobs
//! started separately on one host find each other by name. Across hosts,
//! hand the port name over yourself (a file on a shared file system, the
//! command line).

use std::io::Write;
use std::path::PathBuf;

use wanmpi_engine::{ErrorClass, MpiError, MpiResult};

/// Where published names live (default: a 0700 directory of this user's
/// under the temporary directory).
pub const ENV_NAME_DIR: &str = "WANMPI_NAME_DIR";

fn dir() -> MpiResult<PathBuf> {
    let d = match std::env::var_os(ENV_NAME_DIR) {
        Some(d) => PathBuf::from(d),
        // SAFETY: getuid cannot fail.
        None => std::env::temp_dir().join(format!("wanmpi-names-{}", unsafe { libc::getuid() })),
    };
    let io = |e: std::io::Error| MpiError::new(ErrorClass::Service, format!("the name directory {}: {e}", d.display()));
    use std::os::unix::fs::{DirBuilderExt, MetadataExt};
    match std::fs::DirBuilder::new().mode(0o700).create(&d) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(io(e)),
    }
    // Another user's directory could feed us their port names.
    let m = std::fs::metadata(&d).map_err(io)?;
    // SAFETY: getuid cannot fail.
    if m.uid() != unsafe { libc::getuid() } || m.mode() & 0o022 != 0 {
        return Err(MpiError::new(ErrorClass::Service, format!("the name directory {} is not this user's alone", d.display())));
    }
    Ok(d)
}

/// A service name as a file name: hex, so any name is safe.
fn file(service: &str) -> MpiResult<PathBuf> {
    if service.is_empty() || service.len() > 256 {
        return Err(MpiError::new(ErrorClass::Service, format!("service name {service:?} must be 1 to 256 bytes")));
    }
    Ok(dir()?.join(service.bytes().map(|b| format!("{b:02x}")).collect::<String>()))
}

pub(crate) fn publish(service: &str, port: &str) -> MpiResult<()> {
    let path = file(service)?;
    let mut f = std::fs::OpenOptions::new().write(true).create_new(true).open(&path).map_err(|e| {
        let class = if e.kind() == std::io::ErrorKind::AlreadyExists { ErrorClass::Service } else { ErrorClass::Other };
        MpiError::new(class, format!("publishing {service:?}: {e}"))
    })?;
    f.write_all(port.as_bytes()).map_err(|e| MpiError::new(ErrorClass::Other, format!("publishing {service:?}: {e}")))
}

pub(crate) fn lookup(service: &str) -> MpiResult<String> {
    std::fs::read_to_string(file(service)?).map_err(|_| MpiError::new(ErrorClass::Name, format!("no service {service:?} is published")))
}

pub(crate) fn unpublish(service: &str) -> MpiResult<()> {
    std::fs::remove_file(file(service)?).map_err(|_| MpiError::new(ErrorClass::Service, format!("no service {service:?} is published")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_found_until_it_is_withdrawn() {
        let service = format!("wanmpi-test {} ../x", std::process::id());
        publish(&service, "wanmpi-port:1:127.0.0.1:9:00").expect("publish");
        assert_eq!(publish(&service, "other").unwrap_err().class, ErrorClass::Service, "published twice");
        assert_eq!(lookup(&service).expect("lookup"), "wanmpi-port:1:127.0.0.1:9:00");
        unpublish(&service).expect("unpublish");
        assert_eq!(lookup(&service).unwrap_err().class, ErrorClass::Name);
        assert_eq!(unpublish(&service).unwrap_err().class, ErrorClass::Service);
    }
}
