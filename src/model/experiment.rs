//! Experiment files (`experiments/*.toml`): a matrix of workloads × variants × sizes ×
//! allocators × threads with a measurement budget, validated strictly — every error names
//! the file, the line and what is allowed — and expanded into runs.

use crate::model::budget::{secs_to_ns, Budget};
use crate::model::knobs::AllocatorSpec;
use crate::model::run::RunSpec;
use crate::model::spec::{self, Allocator, Choice, Thp, Variant, Workload};
use serde::{Deserialize, Serialize};
use std::ops::Range;
use std::path::{Path, PathBuf};
use toml::Spanned;

/// An experiment file that cannot be used, with where and why.
#[derive(Debug, thiserror::Error)]
#[error("{location}: {message}")]
pub struct ExperimentError {
    /// `path:line:column`, or just the path.
    pub location: String,
    /// What is wrong and what is allowed instead.
    pub message: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BudgetFile {
    min_time: Option<Spanned<f64>>,
    min_iters: Option<u64>,
    max_iters: Option<Spanned<u64>>,
    warmup_time: Option<Spanned<f64>>,
    warmup_iters: Option<u64>,
    /// Seconds each worker idles after its measured phase, its buffers freed (what the
    /// allocator gives back after the burst); 0 by default.
    idle_time: Option<Spanned<f64>>,
    /// Worker processes per cell, in interleaved rounds.
    processes: Option<Spanned<u32>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RangeFile {
    from: toml::Value,
    to: toml::Value,
    per_octave: u32,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct QuickFile {
    sizes: Option<Spanned<toml::Value>>,
    threads: Option<Spanned<Vec<u32>>>,
    thp: Option<Spanned<Vec<Thp>>>,
    budget: Option<BudgetFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ExperimentFile {
    description: String,
    workloads: Spanned<Vec<Workload>>,
    variants: Option<Spanned<Vec<Variant>>>,
    allocators: Option<Spanned<Vec<Spanned<String>>>>,
    thp: Option<Spanned<Vec<Thp>>>,
    sizes: Spanned<toml::Value>,
    threads: Option<Spanned<Vec<u32>>>,
    seed: Option<u64>,
    find_cliffs: Option<bool>,
    confirm_cliffs: Option<bool>,
    budget: Option<BudgetFile>,
    quick: Option<QuickFile>,
}

/// A validated experiment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Experiment {
    /// The file's stem: `experiments/size-sweep.toml` → `size-sweep`.
    pub name: String,
    /// The experiment file, as given.
    pub path: PathBuf,
    /// The file's `description`, free text for people.
    pub description: String,
    /// Workloads to run, in the file's order.
    pub workloads: Vec<Workload>,
    /// Variants to run (default: every variant).
    pub variants: Vec<Variant>,
    /// Allocators to run, with their knobs or libraries (default: every built-in allocator, plain).
    pub allocators: Vec<AllocatorSpec>,
    /// THP modes to run each spec under (default: the system's).
    #[serde(default = "default_thp")]
    pub thp: Vec<Thp>,
    /// Sizes in elements, ascending and without duplicates (`[quick] sizes` in quick mode).
    pub sizes: Vec<u64>,
    /// Thread counts, ascending and without duplicates (default: 1).
    pub threads: Vec<u32>,
    /// The seed of every run's input data (default 42).
    pub seed: u64,
    /// After the runs, bisect every change between neighbouring sizes to its exact size
    /// (not in quick mode).
    #[serde(default)]
    pub find_cliffs: bool,
    /// After bisecting, move the threshold each cliff is at (its knob) and bisect again
    /// where the threshold's rule then puts it (`alloclab run --confirm` turns it on).
    #[serde(default)]
    pub confirm_cliffs: bool,
    /// The measurement budget of every process (`[budget]`, with `[quick] budget` over it in
    /// quick mode).
    pub budget: Budget,
    /// Whether it was loaded in quick mode: its `[quick]` overrides applied, no cliff finding.
    pub quick: bool,
    /// Worker processes per cell (`[budget] processes`), one per round, rounds
    /// interleaved: medians over processes with 95 % intervals when there are several.
    #[serde(default = "one_process")]
    pub processes: u32,
}

fn one_process() -> u32 {
    1
}

/// Most worker processes per cell accepted in an experiment file.
pub const MAX_PROCESSES: u32 = 1000;

/// Largest thread count accepted.
pub const MAX_THREADS: u32 = 256;

struct Source<'a> {
    path: &'a Path,
    text: &'a str,
}

impl Source<'_> {
    fn at(&self, span: Option<Range<usize>>) -> String {
        match span {
            Some(span) => {
                let before = &self.text[..span.start.min(self.text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                format!("{}:{line}:{column}", self.path.display())
            }
            None => self.path.display().to_string(),
        }
    }

    fn error(&self, span: Option<Range<usize>>, message: impl Into<String>) -> ExperimentError {
        ExperimentError {
            location: self.at(span),
            message: message.into(),
        }
    }

    /// Sizes: a list of sizes (numbers, or strings such as "1e6" and "2^20"), or a
    /// geometric range `{ from = 32, to = "1e8", per_octave = 2 }`.
    fn sizes(&self, value: &Spanned<toml::Value>) -> Result<Vec<u64>, ExperimentError> {
        let span = Some(value.span());
        let one = |v: &toml::Value| -> Result<u64, ExperimentError> {
            let text = match v {
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::String(s) => s.clone(),
                other => {
                    return Err(self.error(
                        span.clone(),
                        format!("a size must be a whole number or a string like \"1e6\" or \"2^20\", not a {}", other.type_str()),
                    ))
                }
            };
            spec::parse_size(&text).map_err(|e| self.error(span.clone(), e.to_string()))
        };
        let mut sizes = match value.get_ref() {
            toml::Value::Array(items) => items.iter().map(one).collect::<Result<Vec<_>, _>>()?,
            toml::Value::Table(t) => {
                let range: RangeFile = t
                    .clone()
                    .try_into()
                    .map_err(|e: toml::de::Error| self.error(span.clone(), format!("sizes: {}", e.message())))?;
                let from = one(&range.from)?;
                let to = one(&range.to)?;
                let per_octave = range.per_octave;
                if from > to {
                    return Err(self.error(span, format!("sizes: from ({from}) is larger than to ({to}); a range goes from the smaller size to the larger")));
                }
                if !(1..=64).contains(&per_octave) {
                    return Err(self.error(span, format!("sizes: per_octave is {per_octave}; it must be 1 to 64 (sizes per doubling)")));
                }
                geometric(from, to, per_octave)
            }
            _ => {
                return Err(self.error(
                    span,
                    "sizes must be a list such as [1000, \"1e6\"] or a range such as { from = 32, to = \"1e8\", per_octave = 2 }",
                ))
            }
        };
        sizes.sort_unstable();
        sizes.dedup();
        if sizes.is_empty() {
            return Err(self.error(span, "sizes is empty: give at least one size"));
        }
        Ok(sizes)
    }

    fn threads(&self, t: &Spanned<Vec<u32>>) -> Result<Vec<u32>, ExperimentError> {
        let mut v = t.get_ref().clone();
        if v.is_empty() || v.iter().any(|&n| n == 0 || n > MAX_THREADS) {
            return Err(self.error(
                Some(t.span()),
                format!("threads must be a non-empty list of counts from 1 to {MAX_THREADS}"),
            ));
        }
        v.sort_unstable();
        v.dedup();
        Ok(v)
    }

    fn processes(&self, file: Option<&BudgetFile>, base: u32) -> Result<u32, ExperimentError> {
        match file.and_then(|f| f.processes.as_ref()) {
            None => Ok(base),
            Some(p) if (1..=MAX_PROCESSES).contains(p.get_ref()) => Ok(*p.get_ref()),
            Some(p) => Err(self.error(
                Some(p.span()),
                format!(
                    "budget.processes is {}; it must be from 1 to {MAX_PROCESSES} (6 gives a 96.9 % interval for each median)",
                    p.get_ref()
                ),
            )),
        }
    }

    fn budget(&self, file: Option<&BudgetFile>, base: Budget) -> Result<Budget, ExperimentError> {
        let Some(f) = file else { return Ok(base) };
        let secs = |v: &Option<Spanned<f64>>, name: &str, default: u64| match v {
            None => Ok(default),
            Some(s) => {
                let x = *s.get_ref();
                if x.is_finite() && (0.0..=86_400.0).contains(&x) {
                    Ok(secs_to_ns(x))
                } else {
                    Err(self.error(
                        Some(s.span()),
                        format!("budget.{name} is {x}; it must be seconds from 0 to 86400"),
                    ))
                }
            }
        };
        let b = Budget {
            min_time_ns: secs(&f.min_time, "min_time", base.min_time_ns)?,
            warmup_time_ns: secs(&f.warmup_time, "warmup_time", base.warmup_time_ns)?,
            min_iters: f.min_iters.unwrap_or(base.min_iters),
            warmup_iters: f.warmup_iters.unwrap_or(base.warmup_iters),
            max_iters: f
                .max_iters
                .as_ref()
                .map_or(base.max_iters, |m| *m.get_ref()),
            idle_ns: secs(&f.idle_time, "idle_time", base.idle_ns)?,
        };
        if b.max_iters == 0 {
            let span = f.max_iters.as_ref().map(|m| m.span());
            return Err(self.error(span, "budget.max_iters must be at least 1"));
        }
        Ok(b)
    }
}

/// Sizes from `from` to `to` (both included when they fall on the grid), `per_octave`
/// per doubling, rounded to whole elements.
pub fn geometric(from: u64, to: u64, per_octave: u32) -> Vec<u64> {
    let mut out = Vec::new();
    let mut k = 0u32;
    loop {
        let v = (from as f64 * 2f64.powf(f64::from(k) / f64::from(per_octave))).round() as u64;
        if v > to {
            break;
        }
        if out.last() != Some(&v) {
            out.push(v);
        }
        k += 1;
    }
    out
}

impl Experiment {
    /// Reads and validates an experiment file; `quick` applies its `[quick]` overrides.
    pub fn load(path: &Path, quick: bool) -> Result<Self, ExperimentError> {
        let text = crate::files::read_to_string(path).map_err(|e| ExperimentError {
            location: path.display().to_string(),
            message: format!("cannot read the experiment file: {e}"),
        })?;
        Self::parse(path, &text, quick)
    }

    /// Validates the text of an experiment file read from `path` (which names it and its errors);
    /// `quick` applies its `[quick]` overrides.
    pub fn parse(path: &Path, text: &str, quick: bool) -> Result<Self, ExperimentError> {
        let src = Source { path, text };
        let file: ExperimentFile = toml::from_str(text)
            .map_err(|e| src.error(e.span(), e.message().trim().to_string()))?;
        // The stem names the results folder inside --out: a plain name only, never one
        // that leaves the folder ("..", "."), is hidden, or is the index page's name.
        let name = path
            .file_stem()
            .and_then(|s| s.to_str())
            .filter(|s| {
                !s.is_empty()
                    && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                    && s.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && !["index.html", "folder.json"].contains(s)
            })
            .ok_or_else(|| src.error(None, "the file name must start with an ASCII letter or digit and hold only ASCII letters, digits, '-', '_' or '.' (it names the results folder inside --out; 'index.html' and 'folder.json' are the lab's own files there)"))?
            .to_string();
        let nonempty = |what: &str, span: Range<usize>, empty: bool| {
            if empty {
                Err(src.error(Some(span), format!("{what} is empty: give at least one")))
            } else {
                Ok(())
            }
        };
        let mut workloads = file.workloads.get_ref().clone();
        nonempty("workloads", file.workloads.span(), workloads.is_empty())?;
        workloads.dedup();
        let variants = match &file.variants {
            Some(v) => {
                nonempty("variants", v.span(), v.get_ref().is_empty())?;
                // Listed, a variant must be one of every listed workload's; left out, each
                // workload runs the ones it has.
                for w in &workloads {
                    if let Some(why) = v.get_ref().iter().find_map(|&x| w.refuses(x)) {
                        return Err(src.error(
                            Some(v.span()),
                            format!("{why}; list the service in an experiment file of its own"),
                        ));
                    }
                }
                v.get_ref().clone()
            }
            None => Variant::ALL.to_vec(),
        };
        let allocators = match &file.allocators {
            Some(a) => {
                nonempty("allocators", a.span(), a.get_ref().is_empty())?;
                a.get_ref()
                    .iter()
                    .map(|s| {
                        let spec = s
                            .get_ref()
                            .parse::<AllocatorSpec>()
                            .map_err(|e| src.error(Some(s.span()), e.to_string()))?;
                        // Its cells' files are named after it: refused now, not at the
                        // first save.
                        match spec::too_long_for_a_file(&spec.to_string()) {
                            Some(why) => Err(src.error(
                                Some(s.span()),
                                format!("{why}: give the library a shorter name (name=/path/to/lib.so), or the allocator fewer knobs"),
                            )),
                            None => Ok(spec),
                        }
                    })
                    .collect::<Result<Vec<_>, _>>()?
            }
            None => Allocator::ALL
                .iter()
                .map(|&a| AllocatorSpec::plain(a))
                .collect(),
        };
        let mut thp = match &file.thp {
            Some(t) => {
                nonempty("thp", t.span(), t.get_ref().is_empty())?;
                dedup(t.get_ref().clone())
            }
            None => default_thp(),
        };
        let mut sizes = src.sizes(&file.sizes)?;
        let mut threads = match &file.threads {
            Some(t) => src.threads(t)?,
            None => vec![1],
        };
        let mut budget = src.budget(file.budget.as_ref(), Budget::default())?;
        let mut processes = src.processes(file.budget.as_ref(), 1)?;
        // The lab's release_at_idle acts at the idle's start: without one it would do
        // nothing, silently.
        let no_idle = |b: &Budget| b.idle_ns == 0;
        let release_without_idle = |b: &Budget| -> Result<(), ExperimentError> {
            let Some(list) = &file.allocators else {
                return Ok(());
            };
            match list.get_ref().iter().find_map(|s| {
                let knob = s.get_ref().parse::<AllocatorSpec>().ok()?.needs_idle()?;
                Some((s, knob))
            }) {
                Some((s, knob)) if no_idle(b) => Err(src.error(
                    Some(s.span()),
                    format!(
                        "{knob}=true acts at the start of the idle phase, and this experiment has none: give its [budget] an idle_time (e.g. idle_time = 2.0)"
                    ),
                )),
                _ => Ok(()),
            }
        };
        if quick {
            if let Some(q) = &file.quick {
                if let Some(s) = &q.sizes {
                    sizes = src.sizes(s)?;
                }
                if let Some(t) = &q.threads {
                    threads = src.threads(t)?;
                }
                if let Some(t) = &q.thp {
                    nonempty("quick.thp", t.span(), t.get_ref().is_empty())?;
                    thp = dedup(t.get_ref().clone());
                }
                budget = src.budget(q.budget.as_ref(), budget)?;
                processes = src.processes(q.budget.as_ref(), processes)?;
            }
        }
        release_without_idle(&budget)?;
        Ok(Experiment {
            name,
            path: path.to_path_buf(),
            description: file.description,
            workloads,
            variants: dedup(variants),
            allocators: dedup(allocators),
            thp,
            sizes,
            threads,
            seed: file.seed.unwrap_or(42),
            find_cliffs: file.find_cliffs.unwrap_or(false) && !quick,
            confirm_cliffs: file.confirm_cliffs.unwrap_or(false) && !quick,
            budget,
            quick,
            processes,
        })
    }

    /// How many runs [`Experiment::runs`] would give, without building them.
    pub fn run_count(&self) -> u64 {
        [
            self.workloads.len(),
            self.threads.len(),
            self.sizes.len(),
            self.allocators.len(),
            self.thp.len(),
            self.variants.len(),
        ]
        .iter()
        .fold(1u64, |n, &k| n.saturating_mul(k as u64))
    }

    /// Worker processes it starts: every cell in `processes` processes.
    pub fn process_count(&self) -> u64 {
        self.run_count().saturating_mul(u64::from(self.processes))
    }

    /// A lower bound on the time its runs take: each process's warm-up and measured phase.
    pub fn min_seconds(&self) -> f64 {
        let per_run = (self.budget.warmup_time_ns + self.budget.min_time_ns) as f64 / 1e9;
        self.process_count() as f64 * per_run
    }

    /// Every run of the matrix, one per cell: for each workload, thread count and size (in that
    /// order), every allocator, THP mode and variant — size by size, so that a partial
    /// result covers whole sizes.
    pub fn runs(&self) -> Vec<RunSpec> {
        let mut out = Vec::new();
        for &workload in &self.workloads {
            for &threads in &self.threads {
                for &size in &self.sizes {
                    for alloc in &self.allocators {
                        for &thp in &self.thp {
                            for &variant in &self.variants {
                                if workload.refuses(variant).is_some() {
                                    continue;
                                }
                                out.push(RunSpec {
                                    allocator: alloc.allocator,
                                    workload,
                                    variant,
                                    size,
                                    threads,
                                    seed: self.seed,
                                    knobs: alloc.knobs.clone(),
                                    thp,
                                    library: alloc.library.clone(),
                                });
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

fn default_thp() -> Vec<Thp> {
    vec![Thp::System]
}

fn dedup<T: PartialEq>(items: Vec<T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::with_capacity(items.len());
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// A run's identifier, unique within an experiment and usable as a file name:
/// `scale-out-of-place-system-n1000000-t1`.
/// Knobs join the allocator with `+` (`system+top_pad=64M`), THP off adds `-thpnever`;
/// an installed library is named by its name (`scale-out-of-place-gperftools-…`).
pub fn run_id(spec: &RunSpec) -> String {
    let mut alloc = match &spec.library {
        Some(l) => l.name.clone(),
        None => spec.allocator.name().to_string(),
    };
    let label = spec.allocator_spec().to_string();
    if let Some((_, knobs)) = label.split_once(':') {
        alloc.push('+');
        alloc.push_str(&knobs.replace(',', "+"));
    }
    let thp = match spec.thp {
        crate::model::spec::Thp::System => "",
        crate::model::spec::Thp::Never => "-thpnever",
        crate::model::spec::Thp::Advise => "-thpadvise",
    };
    format!(
        "{}-{}-{alloc}-n{}-t{}{thp}",
        spec.workload.name(),
        spec.variant.name(),
        spec.size,
        spec.threads
    )
}

/// The sizes worth a closer look: all of them when there are at most three, else the
/// ones nearest 10^3 and 10^6 elements and the largest.
pub fn sizes_of_interest(sizes: &std::collections::BTreeSet<u64>) -> Vec<u64> {
    if sizes.len() <= 3 {
        return sizes.iter().copied().collect();
    }
    let nearest = |target: f64| {
        sizes
            .iter()
            .copied()
            .min_by(|a, b| {
                let da = ((*a as f64).ln() - target.ln()).abs();
                let db = ((*b as f64).ln() - target.ln()).abs();
                da.total_cmp(&db)
            })
            .unwrap_or(0)
    };
    let mut out: Vec<u64> = vec![nearest(1e3), nearest(1e6)];
    if let Some(&max) = sizes.iter().next_back() {
        out.push(max);
    }
    out.sort_unstable();
    out.dedup();
    out
}

impl Experiment {
    /// The runs whose evidence is recorded after the measured ones (what their memory
    /// syscalls and faults did): those at the sizes of interest of each workload and
    /// thread count, where the findings compare cells.
    pub fn evidence_runs(&self) -> Vec<RunSpec> {
        let runs = self.runs();
        let mut keep = Vec::new();
        for &w in &self.workloads {
            for &t in &self.threads {
                let sizes: std::collections::BTreeSet<u64> = self.sizes.iter().copied().collect();
                let wanted = sizes_of_interest(&sizes);
                keep.extend(
                    runs.iter()
                        .filter(|r| r.workload == w && r.threads == t && wanted.contains(&r.size))
                        .cloned(),
                );
            }
        }
        keep
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Experiment, ExperimentError> {
        Experiment::parse(Path::new("experiments/t.toml"), text, false)
    }

    const OK: &str = r#"
description = "test"
workloads = ["scale"]
variants = ["in-place", "out-of-place"]
allocators = ["system"]
sizes = [1000, "1e6", "2^10"]
threads = [2, 1]
[budget]
min_time = 0.5
[quick]
sizes = [100]
budget = { min_time = 0.01, warmup_time = 0 }
"#;

    #[test]
    fn a_valid_file_expands_to_its_matrix() {
        let e = parse(OK).unwrap();
        assert_eq!(e.name, "t");
        assert_eq!(e.sizes, vec![1000, 1024, 1_000_000]);
        assert_eq!(e.threads, vec![1, 2]);
        assert_eq!(e.budget.min_time_ns, 500_000_000);
        assert_eq!(e.budget.min_iters, Budget::default().min_iters);
        let runs = e.runs();
        assert_eq!(runs.len(), 2 * 3 * 2);
        assert_eq!(e.run_count(), runs.len() as u64);
        let ids: std::collections::BTreeSet<String> = runs.iter().map(run_id).collect();
        assert_eq!(ids.len(), runs.len(), "run ids are unique");
        let q = Experiment::parse(Path::new("experiments/t.toml"), OK, true).unwrap();
        assert_eq!(q.sizes, vec![100]);
        assert_eq!(q.budget.min_time_ns, 10_000_000);
        assert_eq!(q.budget.warmup_time_ns, 0);
        // One process per cell unless the budget says more; quick keeps it.
        assert_eq!((e.processes, e.process_count()), (1, 12));
        let six = OK.replace("min_time = 0.5", "min_time = 0.5\nprocesses = 6");
        let e6 = parse(&six).unwrap();
        assert_eq!((e6.processes, e6.process_count()), (6, 72));
        let q6 = Experiment::parse(Path::new("experiments/t.toml"), &six, true).unwrap();
        assert_eq!(q6.processes, 6);
    }

    #[test]
    fn allocators_take_knobs_and_thp_multiplies_the_matrix() {
        let e = parse(&OK.replace(
            r#"allocators = ["system"]"#,
            "allocators = [\"system\", \"system:top_pad=64M\", \"jemalloc:dirty_decay_ms=-1\"]\nthp = [\"system\", \"never\"]",
        ))
        .unwrap();
        assert_eq!(e.allocators.len(), 3);
        assert_eq!(e.allocators[1].to_string(), "system:top_pad=64M");
        let runs = e.runs();
        assert_eq!(runs.len(), 2 * 3 * 3 * 2 * 2);
        let ids: std::collections::BTreeSet<String> = runs.iter().map(run_id).collect();
        assert_eq!(
            ids.len(),
            runs.len(),
            "knobs and THP are part of the run id"
        );
        assert!(
            ids.contains("scale-in-place-system+top_pad=64M-n1000-t1-thpnever"),
            "{ids:?}"
        );
        let bad = parse(&OK.replace(
            r#"allocators = ["system"]"#,
            r#"allocators = ["jemalloc:dirty_decay=1"]"#,
        ))
        .unwrap_err();
        assert_eq!(bad.location, "experiments/t.toml:5:15");
        assert!(bad.message.contains("dirty_decay_ms"), "{bad}");
    }

    #[test]
    fn geometric_ranges_cover_both_ends_on_the_grid() {
        assert_eq!(geometric(32, 256, 1), vec![32, 64, 128, 256]);
        assert_eq!(geometric(32, 128, 2), vec![32, 45, 64, 91, 128]);
        assert_eq!(geometric(5, 5, 4), vec![5]);
        let e = parse(&OK.replace(
            r#"sizes = [1000, "1e6", "2^10"]"#,
            r#"sizes = { from = "2^5", to = "2^27", per_octave = 2 }"#,
        ))
        .unwrap();
        assert_eq!(e.sizes.first(), Some(&32));
        assert_eq!(e.sizes.last(), Some(&(1 << 27)));
        assert_eq!(e.sizes.len(), 45);
    }

    /// An allocator whose cells' files would get names too long is refused with its
    /// line (issue 71: the run used to fail at its first save).
    #[test]
    fn an_allocator_name_too_long_for_a_file_name_is_refused_with_its_line() {
        let long = format!("{}=/no/such/lib.so", "a".repeat(200));
        fails(
            &OK.replace(
                r#"allocators = ["system"]"#,
                &format!(r#"allocators = ["system", "{long}"]"#),
            ),
            "experiments/t.toml:5:25",
            &["200 bytes as a file name", "shorter name"],
        );
    }

    #[test]
    fn release_at_idle_needs_an_idle_phase() {
        let with = OK.replace(
            r#"allocators = ["system"]"#,
            r#"allocators = ["system", "system:release_at_idle=true"]"#,
        );
        fails(
            &with,
            "experiments/t.toml:5:25",
            &["idle_time", "release_at_idle"],
        );
        let idle = with.replace("min_time = 0.5", "min_time = 0.5\nidle_time = 1.0");
        assert!(parse(&idle).unwrap().allocators[1].releases_at_idle());
    }

    #[track_caller]
    fn fails(text: &str, location: &str, needles: &[&str]) {
        let e = parse(text).unwrap_err();
        assert_eq!(e.location, location, "{e}");
        for n in needles {
            assert!(e.message.contains(n), "expected '{n}' in: {e}");
        }
    }

    #[test]
    fn errors_name_the_line_and_what_is_allowed() {
        fails(
            &OK.replace("threads = [2, 1]", "threds = [2]"),
            "experiments/t.toml:7:1",
            &["threds", "threads"],
        );
        fails(
            &OK.replace(
                r#"allocators = ["system"]"#,
                r#"allocators = ["system", "hoard"]"#,
            ),
            "experiments/t.toml:5:25",
            &["hoard", "system, jemalloc, mimalloc"],
        );
        fails(
            &OK.replace(
                r#"variants = ["in-place", "out-of-place"]"#,
                r#"variants = ["inplace"]"#,
            ),
            "experiments/t.toml:4:13",
            &["inplace", "in-place", "out-of-place", "reuse", "fused"],
        );
        fails(
            &OK.replace(
                r#"sizes = [1000, "1e6", "2^10"]"#,
                r#"sizes = { from = 100, to = 10, per_octave = 2 }"#,
            ),
            "experiments/t.toml:6:9",
            &["from (100) is larger than to (10)"],
        );
        fails(
            &OK.replace(r#"sizes = [1000, "1e6", "2^10"]"#, r#"sizes = [0]"#),
            "experiments/t.toml:6:9",
            &["at least 1"],
        );
        fails(
            &OK.replace(
                r#"sizes = [1000, "1e6", "2^10"]"#,
                r#"sizes = { from = 1, to = 10, step = 2 }"#,
            ),
            "experiments/t.toml:6:9",
            &["step", "per_octave"],
        );
        fails(
            &OK.replace("threads = [2, 1]", "threads = [0]"),
            "experiments/t.toml:7:11",
            &["from 1 to"],
        );
        fails(
            &OK.replace("min_time = 0.5", "min_time = -1.0"),
            "experiments/t.toml:9:12",
            &["min_time", "0 to 86400"],
        );
        fails(
            &OK.replace("min_time = 0.5", "min_time = 0.5\nprocesses = 0"),
            "experiments/t.toml:10:13",
            &["budget.processes is 0", "from 1 to 1000"],
        );
        fails(
            &OK.replace("min_time = 0.5", "min_tme = 0.5"),
            "experiments/t.toml:9:1",
            &["min_tme", "min_time"],
        );
        fails(
            "description = \"x\"\nworkloads = [\"scale\"]\n",
            "experiments/t.toml:1:1",
            &["missing field `sizes`"],
        );
    }
}
