//! The why from evidence, on programs written without the lab in mind: small C programs
//! whose memory behaviour is known (a heap that grows once and never trims, a block above
//! glibc's mmap ceiling mapped and unmapped every iteration, a trim every iteration, a
//! pool purged with madvise(DONTNEED), huge-page and dump advice at start-up only), each
//! run under `alloclab exec`: every mechanism the program has is named from its recorded
//! calls, and none it does not have. With strace here, the recorded calls are held
//! against strace's view of the same program.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The programs: name, source. Each takes its iterations as its first argument and uses
/// what it allocates (an empty asm with the pointer), so that the compiler keeps it.
const PROGRAMS: &[(&str, &str)] = &[
    (
        "grow",
        r#"#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10;
    size_t sz = 12u << 20;
    for (int i = 0; i < n; i++) {
        char *p = malloc(sz);
        memset(p, i, sz);
        __asm__ volatile("" :: "r"(p) : "memory");
        free(p);
    }
    return 0;
}
"#,
    ),
    (
        "bigmap",
        r#"#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10;
    size_t sz = 64u << 20;
    for (int i = 0; i < n; i++) {
        char *p = malloc(sz);
        memset(p, i, sz);
        __asm__ volatile("" :: "r"(p) : "memory");
        free(p);
    }
    return 0;
}
"#,
    ),
    (
        "trim",
        r#"#include <malloc.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10;
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 128 << 10);
    size_t sz = 4u << 20;
    for (int i = 0; i < n; i++) {
        char *p = malloc(sz);
        memset(p, i, sz);
        __asm__ volatile("" :: "r"(p) : "memory");
        free(p);
    }
    return 0;
}
"#,
    ),
    (
        "purge",
        r#"#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10;
    size_t sz = 8u << 20;
    char *p = mmap(0, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    for (int i = 0; i < n; i++) {
        memset(p, i + 1, sz);
        madvise(p, sz, MADV_DONTNEED);
    }
    return 0;
}
"#,
    ),
    (
        "advice",
        r#"#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 10;
    size_t sz = 8u << 20;
    char *p = mmap(0, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    madvise(p, sz, MADV_HUGEPAGE);
    madvise(p, sz, MADV_DONTDUMP);
    for (int i = 0; i < n; i++) memset(p, i + 1, sz);
    return 0;
}
"#,
    ),
];

/// Iterations each program runs.
const ITERATIONS: &str = "12";

/// The programs compiled into `dir` (with the machine's C compiler, which the README's
/// set-up asks for).
fn compile(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    PROGRAMS
        .iter()
        .map(|(name, src)| {
            let c = dir.join(format!("{name}.c"));
            std::fs::write(&c, src).unwrap();
            let bin = dir.join(name);
            let o = Command::new("cc")
                .args(["-O2", "-o"])
                .arg(&bin)
                .arg(&c)
                .output()
                .expect("a C compiler (cc) is on PATH, as the README's set-up asks");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
            (*name, bin)
        })
        .collect()
}

/// `exec` of `bin` under glibc and mimalloc, one run each: its record and findings.
fn exec(dir: &Path, name: &str, bin: &Path) -> (Value, Value) {
    let out = dir.join(format!("{name}-out"));
    let o = Command::new(driver_path())
        .args(["exec", "--runs", "1", "--warmup", "0"])
        .args(["--allocators", "system,mimalloc", "--out"])
        .arg(&out)
        .arg("--")
        .arg(bin)
        .arg(ITERATIONS)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
    (
        json(&std::fs::read(out.join("exec.json")).unwrap()),
        json(&std::fs::read(out.join("findings.json")).unwrap()),
    )
}

/// An allocator's recorded evidence in exec.json.
fn evidence<'a>(record: &'a Value, allocator: &str) -> &'a Value {
    let row = record["allocators"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["allocator"] == allocator)
        .unwrap();
    &row["evidence"]["recorded"]
}

/// Every mechanism the why of `allocator`'s item names.
fn named(findings: &Value, allocator: &str) -> (String, Vec<String>) {
    let item = findings["answer"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["figures"]["allocator"] == allocator)
        .unwrap();
    let keys = item["figures"]["cause"]["mechanisms"]
        .as_array()
        .map(|m| {
            m.iter()
                .map(|x| x["key"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default();
    (item["text"].as_str().unwrap().to_string(), keys)
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// Each program's mechanisms, named from what its recorded calls did, and nothing else:
/// the heap that grows once never trims; the big block is mapped and unmapped every time
/// and faulted in again; the trim program trims every iteration; the pool is purged and
/// faulted in again; advice gives nothing back.
#[test]
fn each_program_gets_its_own_mechanism_and_no_other() {
    let dir = tempfile::tempdir().unwrap();
    let iterations: u64 = ITERATIONS.parse().unwrap();
    for (name, bin) in compile(dir.path()) {
        let (record, findings) = exec(dir.path(), name, &bin);
        let e = evidence(&record, "system");
        assert!(e.is_object(), "{name}: no evidence recorded: {record}");
        let shrank = n(&e["brk"]["shrank"]["calls"]);
        let again = n(&e["unmapped_again"]["calls"]);
        let dontneed = n(&e["madvise"]["dontneed"]["calls"]);
        let faults = &e["faults"];
        // Where this user may sample faults, their split; else the sentences say so.
        let recorded = faults.is_object();
        let (text, keys) = named(&findings, "mimalloc");
        let said = |key: &str| keys.iter().any(|k| k == key);
        match name {
            "grow" => {
                assert_eq!(shrank, 0, "{name}: {e}");
                assert!(!said("trim") && !text.contains("a trim"), "{name}: {text}");
                assert!(!text.contains("faulted in again"), "{name}: {text}");
                if recorded {
                    assert_eq!(n(&faults["after_trim"]), 0, "{name}: {e}");
                }
            }
            "bigmap" => {
                assert!(again >= iterations, "{name}: {e}");
                assert!(said("map-per-buffer"), "{name}: {text}");
                assert!(!said("trim") && !said("purge"), "{name}: {text}");
                if recorded {
                    // Every block after the first lands where the last was unmapped.
                    assert!(
                        n(&faults["after_unmap"]) >= (iterations - 1) * 16_000,
                        "{name}: {e}"
                    );
                }
            }
            "trim" => {
                assert!(shrank >= iterations - 1, "{name}: {e}");
                assert!(said("trim"), "{name}: {text}");
                assert!(text.contains("shrank the heap"), "{name}: {text}");
                if recorded {
                    // Less glibc's top pad (128 KiB) it keeps at each trim.
                    assert!(
                        n(&faults["after_trim"]) >= (iterations - 1) * 900,
                        "{name}: {e}"
                    );
                    assert!(
                        text.contains("landed on the trimmed pages"),
                        "{name}: {text}"
                    );
                }
            }
            "purge" => {
                assert_eq!(dontneed, iterations, "{name}: {e}");
                // The program's own purge, under every allocator: the same under both,
                // so not a cost of either.
                assert!(!said("trim"), "{name}: {text}");
                if recorded {
                    assert_eq!(
                        n(&faults["after_purge"]),
                        (iterations - 1) * 2048,
                        "{name}: {e}"
                    );
                }
            }
            "advice" => {
                assert_eq!(n(&e["madvise"]["hugepage"]["calls"]), 1, "{name}: {e}");
                assert_eq!(n(&e["madvise"]["dontdump"]["calls"]), 1, "{name}: {e}");
                assert_eq!(dontneed, 0, "{name}: {e}");
                assert!(!said("purge") && !said("unused-purge"), "{name}: {text}");
                if recorded {
                    assert_eq!(n(&faults["after_purge"]), 0, "{name}: {e}");
                }
            }
            _ => unreachable!(),
        }
        // The recorded run's counts agree with the timed run's (no check note).
        assert!(
            !text.contains("where the timed ones made"),
            "{name}: {text}"
        );
    }
}

/// strace's count of each program's calls under glibc: brk calls that lowered the
/// break, munmap calls, madvise calls by advice.
fn strace_counts(bin: &Path) -> (u64, u64, u64, u64) {
    let o = Command::new("strace")
        .args(["-f", "-e", "trace=brk,munmap,madvise", "-o", "/dev/stdout"])
        .arg(bin)
        .arg(ITERATIONS)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    let (mut down, mut munmap, mut dontneed, mut hugepage) = (0, 0, 0, 0);
    let mut last: Option<u64> = None;
    for line in text.lines() {
        let result = line
            .rsplit("= ")
            .next()
            .and_then(|r| r.split_whitespace().next())
            .unwrap_or("");
        if line.contains("brk(") {
            if let Ok(now) = u64::from_str_radix(result.trim_start_matches("0x"), 16) {
                if last.is_some_and(|l| now < l) {
                    down += 1;
                }
                last = Some(now);
            }
        } else if line.contains("munmap(") {
            munmap += 1;
        } else if line.contains("MADV_DONTNEED") {
            dontneed += 1;
        } else if line.contains("MADV_HUGEPAGE") {
            hugepage += 1;
        }
    }
    (down, munmap, dontneed, hugepage)
}

/// The recorded calls are strace's: under glibc, the brk calls that shrank the heap, the
/// munmap calls and madvise by advice of each program equal strace's count of the same
/// program.
#[test]
#[ignore = "needs strace (Debian: apt-get install strace); .ci/run installs it and runs this with --ignored"]
fn the_recorded_calls_are_straces() {
    let dir = tempfile::tempdir().unwrap();
    for (name, bin) in compile(dir.path()) {
        let (record, _) = exec(dir.path(), name, &bin);
        let e = evidence(&record, "system");
        let (down, munmap, dontneed, hugepage) = strace_counts(&bin);
        assert_eq!(n(&e["brk"]["shrank"]["calls"]), down, "{name}: {e}");
        assert_eq!(n(&e["munmap"]["calls"]), munmap, "{name}: {e}");
        assert_eq!(
            n(&e["madvise"]["dontneed"]["calls"]),
            dontneed,
            "{name}: {e}"
        );
        assert_eq!(
            n(&e["madvise"]["hugepage"]["calls"]),
            hugepage,
            "{name}: {e}"
        );
    }
}

/// A run folder keeps each cell's evidence, and the founding case's cause is glibc's
/// trim, said with its brk calls and the faults on the trimmed pages (where faults are
/// recorded).
#[test]
fn a_run_folder_keeps_its_evidence_and_the_founding_why_rests_on_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_experiment(
        dir.path(),
        "founding",
        "description = \"founding\"\nworkloads = [\"scale\"]\nvariants = [\"in-place\", \"out-of-place\"]\nallocators = [\"system\"]\nsizes = [\"1e6\"]\n\n[budget]\nmin_time = 0.02\nmin_iters = 5\nwarmup_time = 0\nwarmup_iters = 2\nprocesses = 2\n",
    );
    let kept: Vec<_> = std::fs::read_dir(out.join("evidence"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(kept.len(), 2, "{kept:?}");
    let findings = json(&std::fs::read(out.join("findings.json")).unwrap());
    let item = findings["comparisons"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| {
            i["figures"]["variant"] == "out-of-place" && i["figures"]["against"] == "in-place"
        })
        .unwrap();
    let cause = &item["figures"]["cause"];
    assert_eq!(cause["basis"], "mechanism", "{item}");
    assert_eq!(cause["mechanisms"][0]["key"], "trim", "{item}");
    let text = item["text"].as_str().unwrap();
    assert!(text.contains("brk per iteration shrank the heap"), "{text}");
    let e: Value = json(&std::fs::read(kept[0].path()).unwrap());
    if e["recorded"]["faults"].is_object() {
        assert!(text.contains("landed on the trimmed pages"), "{text}");
    }
}
