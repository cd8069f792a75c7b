//! Checks made before any worker is spawned: the worker binaries are there and the
//! largest run fits in the memory available now.

use crate::counters::memory;
use crate::fmt::human_bytes;
use crate::model::run::RunSpec;
use crate::model::spec::{Allocator, Choice};
use std::path::{Path, PathBuf};

/// Problems found before anything runs.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// The largest run would not fit in the memory available now.
    #[error("{what} needs about {} per run (input plus live temporaries of every thread), but only {} is available (MemAvailable); choose a smaller size or fewer threads", human_bytes(*.needed), human_bytes(*.available))]
    NotEnoughMemory {
        /// The run, in words: workload, variant, size and threads.
        what: String,
        /// Bytes it holds at its peak, every thread's together.
        needed: u64,
        /// MemAvailable, in bytes.
        available: u64,
    },
    /// A glibc `top_pad` larger than the memory available now.
    #[error("{knob}={} asks glibc to grow the heap by that much each time, more than the {} available (MemAvailable): every run would fail to allocate; choose a smaller {knob}", human_bytes(*.value), human_bytes(*.available))]
    PaddingTooLarge {
        /// The knob's name.
        knob: String,
        /// Its value, in bytes.
        value: u64,
        /// MemAvailable, in bytes.
        available: u64,
    },
    /// The available memory could not be read (/proc/meminfo).
    #[error("cannot read available memory: {0}")]
    MemInfo(std::io::Error),
    /// A worker binary the runs need is not there.
    #[error("worker binary {} not found (looked in {}); build every binary with `make build` (cargo build --release)", .binary, .dir.display())]
    MissingWorker {
        /// The binary's file name (`alloclab-<allocator>`).
        binary: String,
        /// The directory it was looked for in.
        dir: PathBuf,
    },
    /// An installed library a run preloads cannot be found (why, from
    /// [`crate::model::library::Library::resolve`]).
    #[error("allocator library {0}")]
    Library(String),
    /// This executable's path is unknown, so the worker binaries beside it cannot be found.
    #[error("cannot locate this executable to find the worker binaries beside it: {0}")]
    NoExe(std::io::Error),
}

/// Refuses runs that would not fit in the memory available now (runs go one at a time,
/// so the largest one counts).
pub fn check_memory(specs: &[RunSpec], available: u64) -> Result<(), PlanError> {
    let Some((spec, needed)) = specs
        .iter()
        .map(|s| {
            let one = s.workload.peak_bytes(s.variant, s.size);
            (s, one.saturating_mul(u64::from(s.threads.max(1))))
        })
        .max_by_key(|(_, b)| *b)
    else {
        return Ok(());
    };
    if needed > available {
        return Err(PlanError::NotEnoughMemory {
            what: match spec.threads {
                1 => format!("{} {} at size {}", spec.workload, spec.variant, spec.size),
                t => format!(
                    "{} {} at size {} with {t} threads",
                    spec.workload, spec.variant, spec.size
                ),
            },
            needed,
            available,
        });
    }
    Ok(())
}

/// Refuses the lab's `release_at_idle` where the command has no idle phase (every command
/// but `run` with an experiment's `idle_time`): it would act on nothing.
pub fn refuse_idle_knobs(specs: &[RunSpec]) -> Result<(), String> {
    match specs
        .iter()
        .find_map(|s| crate::model::knobs::needs_idle(&s.knobs))
    {
        Some(knob) => Err(format!(
            "{knob}=true acts at the start of an idle phase after the burst, which only an experiment gives (`alloclab run` with `idle_time` in its [budget], as experiments/after-burst.toml has)"
        )),
        None => Ok(()),
    }
}

/// [`check_memory`] against this machine's MemAvailable, and the knobs that make the
/// allocator reserve memory on every heap growth (glibc's top_pad) against it too.
pub fn check_memory_here(specs: &[RunSpec]) -> Result<(), PlanError> {
    let available = memory::available_bytes().map_err(PlanError::MemInfo)?;
    check_memory(specs, available)?;
    check_padding(specs, available)
}

/// Refuses a glibc `top_pad` larger than `available`: glibc would ask for that much on
/// the first heap growth and the worker would abort.
pub fn check_padding(specs: &[RunSpec], available: u64) -> Result<(), PlanError> {
    for s in specs.iter().filter(|s| s.allocator == Allocator::System) {
        for k in s.knobs.iter().filter(|k| k.name == "top_pad") {
            if let Ok(value) = k.value.parse::<u64>() {
                if value > available {
                    return Err(PlanError::PaddingTooLarge {
                        knob: k.name.clone(),
                        value,
                        available,
                    });
                }
            }
        }
    }
    Ok(())
}

/// The directory holding this executable, where the worker binaries are built.
pub fn workers_dir() -> Result<PathBuf, PlanError> {
    let exe = std::env::current_exe().map_err(PlanError::NoExe)?;
    Ok(exe
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(".")))
}

/// Checks that every needed worker binary exists.
pub fn check_workers(dir: &Path, allocators: &[Allocator]) -> Result<(), PlanError> {
    for a in allocators {
        if !dir.join(a.worker_binary()).is_file() {
            return Err(PlanError::MissingWorker {
                binary: a.worker_binary().to_string(),
                dir: dir.to_path_buf(),
            });
        }
    }
    Ok(())
}

/// Checks that every installed library the runs preload is a file (a bare file name is
/// looked up in the standard library directories). Whether it takes over malloc is
/// checked by the worker, which fails its run otherwise.
pub fn check_libraries(specs: &[RunSpec]) -> Result<(), PlanError> {
    for s in specs {
        if let Some(l) = &s.library {
            l.resolve().map_err(PlanError::Library)?;
        }
    }
    Ok(())
}

/// Everything checked before `specs` run: the worker binaries of their allocators beside
/// this executable, and memory for the largest of them. Returns the workers' folder.
pub fn check(specs: &[RunSpec]) -> Result<PathBuf, PlanError> {
    check_memory_here(specs)?;
    let dir = workers_dir()?;
    let allocators: Vec<Allocator> = Allocator::ALL
        .iter()
        .copied()
        .filter(|a| specs.iter().any(|s| s.allocator == *a))
        .collect();
    check_workers(&dir, &allocators)?;
    check_libraries(specs)?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::spec::{Variant, Workload};

    fn spec(variant: Variant, size: u64) -> RunSpec {
        RunSpec {
            allocator: Allocator::System,
            workload: Workload::Scale,
            variant,
            size,
            threads: 1,
            seed: 1,
            knobs: Vec::new(),
            thp: Default::default(),
            library: None,
        }
    }

    #[test]
    fn memory_check_names_the_largest_run_and_both_amounts() {
        let specs = [
            spec(Variant::InPlace, 1000),
            spec(Variant::OutOfPlace, 1000),
        ];
        assert!(check_memory(&specs, 17_000).is_ok());
        let e = check_memory(&specs, 16_999).unwrap_err().to_string();
        assert!(e.contains("out-of-place"), "{e}");
        assert!(e.contains("16.6 KiB"), "{e}");
        assert!(e.contains("available"), "{e}");
    }

    #[test]
    fn memory_check_counts_every_thread_and_says_how_many() {
        let mut four = spec(Variant::OutOfPlace, 1000);
        four.threads = 4;
        assert!(check_memory(std::slice::from_ref(&four), 4 * 17_000).is_ok());
        let e = check_memory(&[four], 4 * 17_000 - 1)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at size 1000 with 4 threads"), "{e}");
    }

    #[test]
    fn a_top_pad_beyond_available_memory_is_refused() {
        let mut padded = spec(Variant::InPlace, 1000);
        padded.knobs = vec![crate::model::knobs::Knob {
            name: "top_pad".into(),
            value: "1000001".into(),
        }];
        assert!(check_padding(std::slice::from_ref(&padded), 1_000_001).is_ok());
        let e = check_padding(&[padded], 1_000_000).unwrap_err().to_string();
        assert!(e.contains("top_pad=") && e.contains("MemAvailable"), "{e}");
    }
}
