//! Reading files without ever blocking on them: a FIFO (or a socket or device) where the
//! lab expects a file would make a plain open or read wait for a writer that never comes.
//! Every file the lab reads is opened non-blocking and read only when it is a regular file;
//! anything else is refused with what it is.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Opens `path` for reading, refusing what is not a regular file (a FIFO, socket, device
/// or directory) before anything is read from it.
pub fn open(path: impl AsRef<Path>) -> io::Result<File> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let kind = f.metadata()?.file_type();
    if kind.is_file() {
        return Ok(f);
    }
    let what = if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_dir() {
        "a directory"
    } else {
        "not a file"
    };
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("is {what}, not a regular file, so it is not read"),
    ))
}

/// The whole of the regular file at `path` (see [`open`]).
pub fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    let mut f = open(path)?;
    let mut out = Vec::new();
    f.read_to_end(&mut out)?;
    Ok(out)
}

/// The whole of the regular file at `path` as UTF-8 (see [`open`]).
pub fn read_to_string(path: impl AsRef<Path>) -> io::Result<String> {
    let mut f = open(path)?;
    let mut out = String::new();
    f.read_to_string(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_at_once_and_a_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("plan.json");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // No writer exists: a blocking open would wait here for ever.
        let e = read_to_string(&fifo).unwrap_err();
        assert!(e.to_string().contains("FIFO"), "{e}");
        let e = read(dir.path()).unwrap_err();
        assert!(e.to_string().contains("directory"), "{e}");
        let file = dir.path().join("a.json");
        std::fs::write(&file, "{}").unwrap();
        assert_eq!(read_to_string(&file).unwrap(), "{}");
        assert!(!read("/proc/self/statm").unwrap().is_empty());
    }
}
