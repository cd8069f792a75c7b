//! Allocator libraries installed on the machine, run by the system worker with the
//! library preloaded: `gperftools=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4`,
//! `gperftools=libtcmalloc_minimal.so.4` (a bare file name is looked up in the standard
//! library directories) or just `libtcmalloc_minimal.so.4` (named after its file).

use serde::{Deserialize, Serialize};
use std::fmt;
use std::path::{Path, PathBuf};

/// A preloaded allocator library: the name it has in reports and the file as given.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Library {
    /// The name it has in reports and labels (`gperftools`; the file's stem when none is given).
    pub name: String,
    /// The file as given: a path, or a bare file name looked up by [`Library::resolve`].
    pub path: PathBuf,
}

impl fmt::Display for Library {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.name, self.path.display())
    }
}

/// Whether `text` names a library file without a directory: `libtcmalloc_minimal.so.4`.
fn is_bare_soname(text: &str) -> bool {
    !text.contains(['/', '=', ':']) && text.starts_with("lib") && text.contains(".so")
}

/// The name a library file gets when none is given: its file name up to `.so`
/// (`libtcmalloc_minimal.so.4` → `libtcmalloc_minimal`).
pub fn name_of_file(file: &str) -> String {
    let base = file.rsplit('/').next().unwrap_or(file);
    base.split(".so").next().unwrap_or(base).to_string()
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

impl Library {
    /// Reads one spec item as a library, if it is written as one: `name=path` (a name
    /// with no ':' before the '=') or a bare `lib….so…` file name. `Ok(None)`: not a
    /// library spec. A built-in allocator's name is refused (`is_builtin`).
    pub fn parse(item: &str, is_builtin: impl Fn(&str) -> bool) -> Result<Option<Self>, String> {
        let item = item.trim();
        if is_bare_soname(item) {
            return Ok(Some(Library {
                name: name_of_file(item),
                path: PathBuf::from(item),
            }));
        }
        let Some((name, path)) = item.split_once('=').filter(|(n, _)| !n.contains(':')) else {
            return Ok(None);
        };
        let (name, path) = (name.trim(), path.trim());
        if is_builtin(name) {
            return Err(format!(
                "'{item}': {name} is built in (its worker and preload library are the project's own); give another name for a library of your own, e.g. my{name}={path}"
            ));
        }
        if !valid_name(name) {
            return Err(format!(
                "'{item}': a library is name=/path/to/lib.so with a name of letters, digits, '-', '_' or '.'"
            ));
        }
        if path.is_empty() {
            return Err(format!(
                "'{item}': no library after '=': give a path (/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4) or a file name in the standard library directories (libtcmalloc_minimal.so.4)"
            ));
        }
        if !path.contains('/') && path.contains('=') {
            // "system:top_pad=64M" never gets here (':' before '='); this is "a=b=c".
            return Err(format!("'{item}': expected name=/path/to/lib.so"));
        }
        Ok(Some(Library {
            name: name.to_string(),
            path: PathBuf::from(path),
        }))
    }

    /// The library file, absolute: a path is checked to be a file; a bare file name is
    /// looked up in `$LD_LIBRARY_PATH` and the standard library directories.
    pub fn resolve(&self) -> Result<PathBuf, String> {
        let given = self.path.to_string_lossy();
        if given.contains('/') {
            return match std::fs::metadata(&self.path) {
                Ok(m) if m.is_file() => {
                    Ok(std::fs::canonicalize(&self.path).unwrap_or_else(|_| self.path.clone()))
                }
                Ok(_) => Err(format!(
                    "{}: {} is not a file (expected an allocator library, lib….so)",
                    self.name, given
                )),
                Err(e) => Err(format!(
                    "{}: cannot read {given}: {e}{}",
                    self.name,
                    hint_installed()
                )),
            };
        }
        for dir in search_dirs() {
            let p = dir.join(&self.path);
            if p.is_file() {
                return Ok(std::fs::canonicalize(&p).unwrap_or(p));
            }
        }
        let dirs: Vec<String> = search_dirs()
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        Err(format!(
            "{}: no file {given} in {}{}",
            self.name,
            dirs.join(", "),
            hint_installed()
        ))
    }
}

fn hint_installed() -> String {
    let found = installed();
    if found.is_empty() {
        " (no allocator library is installed in the standard directories; e.g. `apt-get install libtcmalloc-minimal4` installs gperftools' tcmalloc)".into()
    } else {
        let specs: Vec<String> = found.iter().map(ToString::to_string).collect();
        format!(" (installed here: {})", specs.join(", "))
    }
}

/// Where bare library file names are looked up: `$LD_LIBRARY_PATH`, then the
/// directories the dynamic loader searches by default on Debian-like and other systems.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var("LD_LIBRARY_PATH")
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .collect();
    let triple = format!("{}-linux-gnu", std::env::consts::ARCH);
    for d in [
        format!("/usr/local/lib/{triple}"),
        "/usr/local/lib".into(),
        format!("/usr/lib/{triple}"),
        format!("/lib/{triple}"),
        "/lib64".into(),
        "/usr/lib64".into(),
        "/lib".into(),
        "/usr/lib".into(),
    ] {
        let d = PathBuf::from(d);
        if !dirs.contains(&d) {
            dirs.push(d);
        }
    }
    dirs
}

/// File-name stems of allocator libraries people install: gperftools' tcmalloc
/// (full and minimal), jemalloc, mimalloc, snmalloc, rpmalloc, Hoard, TBB's scalable
/// allocator.
const KNOWN: &[&str] = &[
    "libtcmalloc",
    "libtcmalloc_minimal",
    "libjemalloc",
    "libmimalloc",
    "libsnmallocshim",
    "librpmalloc",
    "libhoard",
    "libtbbmalloc",
];

/// Whether the library file `file` (a path or a soname: `libjemalloc.so.2`) is one of the
/// allocator libraries people install ([`KNOWN`]).
pub fn is_allocator_library(file: &str) -> bool {
    KNOWN.contains(&name_of_file(file).as_str())
}

/// The allocator libraries installed in the standard directories, one spec per file
/// (the shortest name the loader resolves: `libtcmalloc_minimal.so.4` rather than
/// `libtcmalloc_minimal.so.4.5.9`), named after the file.
pub fn installed() -> Vec<Library> {
    let mut found: Vec<(PathBuf, Library)> = Vec::new();
    for dir in search_dirs() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut names: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".so") && is_allocator_library(n))
            .collect();
        // Shorter names first: `.so.4` before `.so.4.5.9`; the bare `.so` (a
        // development link) is skipped when a versioned name exists.
        names.sort_by_key(|n| (n.ends_with(".so"), n.len(), n.clone()));
        for n in names {
            let path = dir.join(&n);
            let Ok(real) = std::fs::canonicalize(&path) else {
                continue;
            };
            if !real.is_file() || found.iter().any(|(r, _)| *r == real) {
                continue;
            }
            found.push((
                real,
                Library {
                    name: name_of_file(&n),
                    path,
                },
            ));
        }
    }
    found.into_iter().map(|(_, l)| l).collect()
}

/// Whether two paths name the same file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(a), std::fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin(n: &str) -> bool {
        n == "jemalloc"
    }

    #[test]
    fn library_specs_parse_in_three_forms() {
        let l = Library::parse("gperftools=/usr/lib/x/libtcmalloc_minimal.so.4", builtin)
            .unwrap()
            .unwrap();
        assert_eq!(l.name, "gperftools");
        assert_eq!(l.path, PathBuf::from("/usr/lib/x/libtcmalloc_minimal.so.4"));
        let l = Library::parse("tc=libtcmalloc.so.4", builtin)
            .unwrap()
            .unwrap();
        assert_eq!(
            (l.name.as_str(), l.path.to_str()),
            ("tc", Some("libtcmalloc.so.4"))
        );
        let l = Library::parse("libjemalloc.so.2", builtin)
            .unwrap()
            .unwrap();
        assert_eq!(l.name, "libjemalloc");
        assert_eq!(l.to_string(), "libjemalloc=libjemalloc.so.2");
        // Not libraries: built-in specs with knobs.
        assert_eq!(Library::parse("system:top_pad=64M", builtin), Ok(None));
        assert_eq!(Library::parse("system", builtin), Ok(None));
    }

    #[test]
    fn bad_library_specs_say_what_is_expected() {
        let e = Library::parse("jemalloc=/x/libjemalloc.so.2", builtin).unwrap_err();
        assert!(e.contains("built in") && e.contains("myjemalloc="), "{e}");
        let e = Library::parse("my lib=/x.so", builtin).unwrap_err();
        assert!(e.contains("letters, digits"), "{e}");
        let e = Library::parse("tc=", builtin).unwrap_err();
        assert!(e.contains("no library after '='"), "{e}");
    }

    #[test]
    fn missing_files_are_named_with_where_they_were_looked_for() {
        let l = Library {
            name: "tc".into(),
            path: "/nonexistent/libtcmalloc.so.4".into(),
        };
        let e = l.resolve().unwrap_err();
        assert!(
            e.starts_with("tc: cannot read /nonexistent/libtcmalloc.so.4"),
            "{e}"
        );
        let l = Library {
            name: "tc".into(),
            path: "libno_such_allocator.so.9".into(),
        };
        let e = l.resolve().unwrap_err();
        assert!(
            e.contains("no file libno_such_allocator.so.9 in") && e.contains("/usr/lib"),
            "{e}"
        );
        let l = Library {
            name: "tc".into(),
            path: "/tmp".into(),
        };
        assert!(l.resolve().unwrap_err().contains("is not a file"));
    }

    #[test]
    fn bare_names_resolve_in_the_standard_directories() {
        // libc is in every glibc system's standard directories.
        let l = Library {
            name: "c".into(),
            path: "libc.so.6".into(),
        };
        let p = l.resolve().unwrap();
        assert!(p.is_absolute() && p.is_file(), "{}", p.display());
        assert_eq!(
            name_of_file("libtcmalloc_minimal.so.4.5.9"),
            "libtcmalloc_minimal"
        );
    }

    #[test]
    fn installed_libraries_resolve_to_distinct_files() {
        let found = installed();
        for (i, l) in found.iter().enumerate() {
            let p = l.resolve().unwrap();
            assert!(found[..i]
                .iter()
                .all(|o| !same_file(&o.resolve().unwrap(), &p)));
            assert!(KNOWN.contains(&l.name.as_str()), "{l}");
        }
    }
}
