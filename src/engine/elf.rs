//! What a program links by itself: the `DT_NEEDED` entries of its ELF dynamic section
//! (ELF64 little-endian, as on x86_64), read through [`crate::files`] with every length
//! bounded. `exec` asks it whether a command brings its own allocator library (Debian's
//! redis-server needs libjemalloc.so.2), which a `system` row without a preload would
//! measure instead of glibc's malloc.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// The most program headers read (real executables have about a dozen).
const MAX_PHNUM: u64 = 512;
/// The most bytes of the dynamic section and of its string table read.
const MAX_DYNAMIC: u64 = 64 << 10;
const MAX_STRTAB: u64 = 1 << 20;

/// `len` bytes of `f` from `offset`.
fn read_at(f: &mut std::fs::File, offset: u64, len: u64) -> Result<Vec<u8>, String> {
    let mut buf = vec![0u8; len as usize];
    f.seek(SeekFrom::Start(offset))
        .and_then(|_| f.read_exact(&mut buf))
        .map_err(|e| format!("reading {len} bytes at offset {offset}: {e}"))?;
    Ok(buf)
}

fn u16_at(b: &[u8], o: usize) -> u64 {
    u16::from_le_bytes([b[o], b[o + 1]]) as u64
}

fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]])
}

fn u64_at(b: &[u8], o: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[o..o + 8]);
    u64::from_le_bytes(x)
}

/// The libraries `program` names in its dynamic section (`DT_NEEDED`, in order, as
/// written: `libjemalloc.so.2`); empty for a statically linked executable. `Err` when it is
/// not an ELF64 little-endian file or cannot be read.
pub fn needed(program: &Path) -> Result<Vec<String>, String> {
    let mut f = crate::files::open(program).map_err(|e| format!("{}: {e}", program.display()))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let not_elf = || format!("{} is not an ELF64 little-endian file", program.display());
    if len < 64 {
        return Err(not_elf());
    }
    let head = read_at(&mut f, 0, 64)?;
    if &head[..4] != b"\x7fELF" || head[4] != 2 || head[5] != 1 {
        return Err(not_elf());
    }
    let phoff = u64_at(&head, 0x20);
    let (phentsize, phnum) = (u16_at(&head, 0x36), u16_at(&head, 0x38));
    if phentsize < 56 || phnum > MAX_PHNUM || phoff.saturating_add(phentsize * phnum) > len {
        return Err(format!(
            "{}: its program headers are malformed",
            program.display()
        ));
    }
    let table = read_at(&mut f, phoff, phentsize * phnum)?;
    const PT_LOAD: u32 = 1;
    const PT_DYNAMIC: u32 = 2;
    // (file offset, virtual address, size in the file) of each loaded segment.
    let mut loads: Vec<(u64, u64, u64)> = Vec::new();
    let mut dynamic: Option<(u64, u64)> = None;
    for ph in table.chunks_exact(phentsize as usize) {
        let (offset, vaddr, filesz) = (u64_at(ph, 8), u64_at(ph, 16), u64_at(ph, 32));
        match u32_at(ph, 0) {
            PT_LOAD => loads.push((offset, vaddr, filesz)),
            PT_DYNAMIC => dynamic = Some((offset, filesz)),
            _ => {}
        }
    }
    let Some((dyn_offset, dyn_size)) = dynamic else {
        return Ok(Vec::new());
    };
    let dyn_size = dyn_size
        .min(MAX_DYNAMIC)
        .min(len.saturating_sub(dyn_offset));
    let entries = read_at(&mut f, dyn_offset, dyn_size - dyn_size % 16)?;
    const DT_NULL: u64 = 0;
    const DT_NEEDED: u64 = 1;
    const DT_STRTAB: u64 = 5;
    const DT_STRSZ: u64 = 10;
    let (mut names, mut strtab, mut strsz) = (Vec::new(), None, None);
    for e in entries.chunks_exact(16) {
        let (tag, val) = (u64_at(e, 0), u64_at(e, 8));
        match tag {
            DT_NULL => break,
            DT_NEEDED => names.push(val),
            DT_STRTAB => strtab = Some(val),
            DT_STRSZ => strsz = Some(val),
            _ => {}
        }
    }
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let malformed = || {
        format!(
            "{}: its dynamic string table is malformed",
            program.display()
        )
    };
    let (Some(addr), Some(size)) = (strtab, strsz) else {
        return Err(malformed());
    };
    // The string table's address is virtual: its place in the file is that of the loaded
    // segment that holds it.
    let offset = loads
        .iter()
        .find(|(_, vaddr, filesz)| addr >= *vaddr && addr - vaddr < *filesz)
        .map(|(offset, vaddr, _)| offset + (addr - vaddr))
        .ok_or_else(malformed)?;
    let size = size.min(MAX_STRTAB).min(len.saturating_sub(offset));
    let strings = read_at(&mut f, offset, size)?;
    Ok(names
        .into_iter()
        .filter_map(|at| {
            let rest = strings.get(at as usize..)?;
            let end = rest.iter().position(|&b| b == 0)?;
            Some(String::from_utf8_lossy(&rest[..end]).into_owned())
        })
        .collect())
}

/// The program that really runs for `program`: itself, or for a script (`#!`) its
/// interpreter (the program `env` is asked to find, for `#!/usr/bin/env python3`), followed
/// through at most four scripts.
pub fn executable(program: &Path) -> PathBuf {
    let mut p = program.to_path_buf();
    for _ in 0..4 {
        let mut head = [0u8; 256];
        let Ok(n) = crate::files::open(&p).and_then(|mut f| f.read(&mut head)) else {
            break;
        };
        let Some(rest) = head[..n].strip_prefix(b"#!") else {
            break;
        };
        let line = rest.split(|&b| b == b'\n').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        let mut words = line.split_whitespace();
        let Some(interp) = words.next() else {
            break;
        };
        p = PathBuf::from(interp);
        if p.file_name().is_some_and(|n| n == "env") {
            let path_var = std::env::var_os("PATH");
            if let Some(found) = words
                .find(|w| !w.starts_with('-'))
                .and_then(|w| super::spawn::resolve_program(w.as_ref(), path_var.as_deref()).ok())
            {
                p = found;
            }
        }
    }
    p
}

/// The allocator library (as the program names it: `libjemalloc.so.2`) that `program`, or
/// a script's interpreter, links directly, if any ([`crate::model::library::is_allocator_library`]).
/// A program that cannot be read as ELF links none that the lab can see.
pub fn own_allocator(program: &Path) -> Option<String> {
    needed(&executable(program))
        .ok()?
        .into_iter()
        .find(|n| crate::model::library::is_allocator_library(n))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn a_plain_program_links_libc_and_no_allocator() {
        let n = needed(Path::new("/bin/true")).unwrap();
        assert!(n.iter().any(|l| l.starts_with("libc.so")), "{n:?}");
        assert_eq!(own_allocator(Path::new("/bin/true")), None);
    }

    #[test]
    fn a_program_linking_jemalloc_is_seen() {
        let lib = Path::new("/lib/x86_64-linux-gnu/libjemalloc.so.2");
        if !lib.is_file() {
            eprintln!("skipped: {} is not installed", lib.display());
            return;
        }
        let dir = std::env::temp_dir().join(format!("alloclab-elf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let c = dir.join("own.c");
        std::fs::write(
            &c,
            "#include <stdlib.h>\nint main(void) { free(malloc(16)); return 0; }\n",
        )
        .unwrap();
        let bin = dir.join("own");
        let o = std::process::Command::new("cc")
            .arg("-o")
            .arg(&bin)
            .arg(&c)
            .arg(lib)
            .output()
            .expect("a C compiler (cc)");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let n = needed(&bin).unwrap();
        assert!(n.iter().any(|l| l == "libjemalloc.so.2"), "{n:?}");
        assert_eq!(own_allocator(&bin).as_deref(), Some("libjemalloc.so.2"));
        // A script is judged by its interpreter.
        let script = dir.join("script");
        std::fs::write(&script, format!("#!{} -x\n", bin.display())).unwrap();
        assert_eq!(own_allocator(&script).as_deref(), Some("libjemalloc.so.2"));
        assert!(needed(&c).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
