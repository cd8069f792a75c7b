//! `alloclab exec`: any program, run again and again under each allocator, with the same
//! counters as the lab's own workloads.
//!
//! `system` runs the command as it is, unless the program links an allocator library
//! itself ([`elf::own_allocator`]): then it preloads the project's glibc shim, so that
//! glibc's malloc serves it; `jemalloc` and `mimalloc` preload the project's own
//! libraries (`preload/`, built from the same crates and versions as the workers);
//! `name=/path/to/lib.so` preloads any other allocator. Each allocator gets its knobs'
//! environment and nothing inherited that configures an allocator. A probe first checks
//! that each preload takes over `malloc` and that each knob took (see [`probe`]); then
//! warm-up rounds, then `--runs` rounds of the one schedule ([`super::schedule`]): every
//! allocator once per round, in an order shuffled in every round from a recorded seed.
//! Every run is accounted for on its own ([`launch`]).

use super::elf;
use super::probe;
use super::schedule::{Next, Order, Pass, Rounds, Schedule};
use super::spawn::{self as launch, LaunchOptions, Prepared, Termination};
use crate::counters::{CounterMode, CounterPlan};
pub use crate::model::command::{AllocatorRuns, ExecRecord, ExecRun, TracedRun, SCHEMA};
use crate::model::knobs::AllocatorSpec;
use crate::model::spec::{Allocator, Choice, Thp};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where `jemalloc` and `mimalloc` preload libraries are looked for, instead of beside
/// the alloclab executable.
pub const PRELOAD_DIR_ENV: &str = "ALLOCLAB_PRELOAD_DIR";

/// What the probe checks `a` against: a built-in allocator's name, or "custom" for an
/// installed library.
fn kind(a: &AllocatorSpec) -> &'static str {
    match a.library {
        Some(_) => "custom",
        None => a.allocator.name(),
    }
}

/// The library to preload for `a` under a command, if any: for glibc none, or the
/// project's glibc shim where the program links an allocator library itself (`own`, from
/// [`own_allocator`]); the project's preload library for the other built-ins; the library
/// itself for an installed one.
pub fn preload(a: &AllocatorSpec, dir: &Path, own: Option<&str>) -> Option<PathBuf> {
    if let Some(l) = &a.library {
        // A bare file name is looked up as the lab does everywhere; a path that does
        // not resolve is kept as given, and the run says it does not exist.
        return Some(l.resolve().unwrap_or_else(|_| probe::absolute(&l.path)));
    }
    match a.allocator {
        Allocator::System if own.is_none() => None,
        x => Some(probe::absolute(&dir.join(preload_file(x)))),
    }
}

/// The allocator library that `program` links itself, where it matters to `a`: under
/// glibc (`system`), whose malloc it would replace without a preload. The other allocators'
/// preloads come before it in the search order.
pub fn own_allocator(a: &AllocatorSpec, program: &Path) -> Option<String> {
    match (&a.library, a.allocator) {
        (None, Allocator::System) => elf::own_allocator(program),
        _ => None,
    }
}

/// The file name of the project's preload library for `a`.
pub fn preload_file(a: Allocator) -> String {
    format!("liballoclab_preload_{}.so", a.name())
}

/// Where the project's preload libraries are: `$ALLOCLAB_PRELOAD_DIR`; else `examples/`
/// beside this executable, where cargo builds them (`target/release/examples/`); else
/// beside this executable (an installed layout).
pub fn preload_dir() -> PathBuf {
    if let Some(d) = std::env::var_os(PRELOAD_DIR_ENV) {
        return PathBuf::from(d);
    }
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| PathBuf::from("."));
    let built = exe_dir.join("examples");
    if Allocator::ALL
        .iter()
        .filter(|a| **a != Allocator::System)
        .any(|a| built.join(preload_file(*a)).is_file())
    {
        built
    } else {
        exe_dir
    }
}

/// The last three non-empty lines of `text`, joined with " / ".
fn last_lines(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(3)..].join(" / ")
}

/// What `alloclab exec` was asked to do, validated.
#[derive(Clone, Debug)]
pub struct ExecSettings {
    /// The allocators to run the command under, in the order given (the rows' order).
    pub allocators: Vec<AllocatorSpec>,
    /// The command and its arguments, as given.
    pub command: Vec<OsString>,
    /// The command's executable, found as execvp would.
    pub program: PathBuf,
    /// Measured rounds (`--runs`): every row (allocator, or allocator and command) runs once
    /// per round.
    pub runs: u32,
    /// Warm-up rounds before the measured ones; their runs are not kept.
    pub warmup: u32,
    /// Let the command's output through to the terminal, instead of discarding its stdout and
    /// keeping the tail of its stderr for the row.
    pub show_output: bool,
    /// Transparent huge pages for the command (`never` disables them for it).
    pub thp: Thp,
    /// How long one run may take before it is killed; None: no limit.
    pub timeout: Option<Duration>,
    /// How syscalls are counted.
    pub counters: CounterMode,
    /// Where the project's preload libraries for the built-in allocators are.
    pub preload_dir: PathBuf,
    /// The band around 1 within which a ratio is no significant difference.
    pub noise_threshold: f64,
    /// The confidence level of the intervals and verdicts (`--confidence`).
    pub level: f64,
    /// The seed of every round's shuffled order (recorded in the record).
    pub order_seed: u64,
    /// A second command every allocator also runs once in every round (in the round's
    /// shuffled order), as a row of its own labelled with the suffix (the same program with twice
    /// the calls, so that a difference per round leaves out its start-up).
    pub second: Option<(Vec<OsString>, String)>,
    /// Several commands in one session (`exec -c … -c …`): each under each allocator, a
    /// row of its own labelled `allocator [name]`; the first is `command`. Empty for one.
    pub versions: Vec<Version>,
    /// After the `runs` rounds, more rounds while a comparison with the first allocator is
    /// still open (no verdict yet, or an interval across an edge of the noise band), none
    /// of them starting when it would end, with the evidence runs, after this long from
    /// the session's start (as `max_time` counts); None: the `runs` rounds only.
    pub adaptive_until: Option<Duration>,
    /// The session's bound: no measured round starts that would end, with the evidence
    /// runs after the rounds, later than this after the session began (the first measured
    /// round always runs); None: every --runs round runs.
    pub max_time: Option<Duration>,
}

/// Rounds an exec session makes at most, adaptive ones included.
pub const MAX_ROUNDS: u32 = 60;

/// One of several commands of a session: its name, arguments and program.
#[derive(Clone, Debug)]
pub struct Version {
    /// The name its rows are labelled with (`allocator [name]`).
    pub name: String,
    /// The command and its arguments, as given.
    pub command: Vec<OsString>,
    /// Its executable, found as execvp would.
    pub program: PathBuf,
}

/// The command's environment under `a`: this process's, minus everything that configures
/// an allocator or preloads a library, plus `a`'s knobs and preload.
fn child_env(a: &AllocatorSpec, preload: Option<&Path>) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = std::env::vars_os()
        .filter(|(k, _)| {
            let k = k.to_string_lossy();
            k != "LD_PRELOAD" && !crate::model::knobs::is_allocator_env(&k)
        })
        .collect();
    env.extend(a.env().into_iter().map(|(k, v)| (k.into(), v.into())));
    // Where the command may say that its burst is over (a byte written to it): the
    // memory sampled afterwards is its idle phase.
    env.retain(|(k, _)| k != crate::engine::spawn::MARK_ENV);
    env.push((
        crate::engine::spawn::MARK_ENV.into(),
        crate::engine::spawn::MARK_FD.to_string().into(),
    ));
    if let Some(p) = preload {
        env.push(("LD_PRELOAD".into(), p.as_os_str().to_owned()));
    }
    // The allocator's own settings and the layout padding take one length under every
    // allocator; each run adds its own random part ([`Prepared::padded`]).
    let mut own = a.env();
    if let Some(p) = preload {
        own.push(("LD_PRELOAD".into(), p.display().to_string()));
    }
    env.retain(|(k, _)| k != crate::model::layout::PAD_ENV);
    env.push((
        crate::model::layout::PAD_ENV.into(),
        crate::model::layout::env_padding(&own, 0).into(),
    ));
    env
}

/// Prepares one allocator: its environment, the probe's verdict, the prepared command.
fn prepare(
    a: &AllocatorSpec,
    settings: &ExecSettings,
    program: &Path,
    command: &[OsString],
) -> (AllocatorRuns, Option<Prepared>) {
    prepare_wrapped(a, settings, program, command, None, &[])
}

/// As [`prepare`], with the command started by `wrapper` (its program first, e.g.
/// `perf record … --`), which is given the allocator's environment and passes it on;
/// the checks (preload, probe, knobs) are of the command itself. `extra_env` is set for
/// the command (and the wrapper) only, over what it would inherit.
pub fn prepare_wrapped(
    a: &AllocatorSpec,
    settings: &ExecSettings,
    program: &Path,
    command: &[OsString],
    wrapper: Option<&[OsString]>,
    extra_env: &[(OsString, OsString)],
) -> (AllocatorRuns, Option<Prepared>) {
    let own = own_allocator(a, program);
    let preload = preload(a, &settings.preload_dir, own.as_deref());
    let env = child_env(a, preload.as_deref());
    let mut row = AllocatorRuns {
        allocator: a.to_string(),
        preload: preload.as_ref().map(|p| p.display().to_string()),
        env: env
            .iter()
            .filter(|(k, _)| {
                let k = k.to_string_lossy();
                k == "LD_PRELOAD" || crate::model::knobs::is_allocator_env(&k)
            })
            .map(|(k, v)| (k.to_string_lossy().into(), v.to_string_lossy().into()))
            .collect(),
        malloc_from: None,
        version: None,
        knobs_effective: BTreeMap::new(),
        failure: None,
        warmup_runs: 0,
        runs: Vec::new(),
        traced_syscalls: None,
        traced_note: None,
        traced_run: None,
        evidence: None,
        command_index: None,
        own_allocator: own,
    };
    let fail = |mut row: AllocatorRuns, why: String| {
        row.failure = Some(why);
        (row, None)
    };
    if let Some(p) = &preload {
        if !p.is_file() {
            let hint = match a.library {
                None => format!(
                    "; build it with `make build` (cargo build --release --examples) or point {PRELOAD_DIR_ENV} at the folder that holds it"
                ),
                Some(_) => String::new(),
            };
            return fail(
                row,
                format!("preload library {} does not exist{hint}", p.display()),
            );
        }
    }
    if preload.is_some() {
        if let Some(why) = launch::preload_obstacle(program) {
            return fail(row, format!("cannot preload into this command: {why}"));
        }
    }
    let knob_names: Vec<String> = a.knobs.iter().map(|k| k.name.clone()).collect();
    let (report, probe_stderr) = match probe::run_probe(kind(a), &knob_names, &env) {
        Ok(r) => r,
        Err(why) => return fail(row, why),
    };
    row.malloc_from = report.malloc_from.clone();
    row.version = report.version.clone();
    let from = report.malloc_from.as_deref().unwrap_or("nowhere");
    match &preload {
        Some(p)
            if !report
                .malloc_from
                .as_deref()
                .is_some_and(|f| probe::same_file(Path::new(f), p)) =>
        {
            let loader = probe_stderr
                .lines()
                .find(|l| l.contains("LD_PRELOAD"))
                .map(|l| format!(" (the loader said: {})", l.trim()))
                .unwrap_or_default();
            return fail(
                row,
                format!(
                    "preload library {} did not take over malloc: malloc comes from {from}{loader}",
                    p.display()
                ),
            );
        }
        None if !from.contains("libc.so") => {
            return fail(
                row,
                format!("glibc's malloc expected without a preload, but malloc comes from {from}"),
            );
        }
        _ => {}
    }
    if a.library.is_none() {
        let spec = a;
        // glibc's shim says "system", as the other preloads say their allocator.
        if (spec.allocator != Allocator::System || preload.is_some())
            && report.preload_allocator.as_deref() != Some(spec.allocator.name())
        {
            let why = format!(
                "{} is not alloclab's {} preload library (it says {:?})",
                row.preload.as_deref().unwrap_or("?"),
                spec.allocator,
                report.preload_allocator
            );
            return fail(row, why);
        }
        for k in &spec.knobs {
            match report.knobs.iter().find(|(n, _)| *n == k.name) {
                Some((_, Ok(v))) if *v == k.value => {
                    row.knobs_effective.insert(k.name.clone(), v.clone());
                }
                Some((_, Ok(v))) => {
                    return fail(
                        row,
                        format!(
                            "knob {}={} did not take effect: the allocator reports {v}",
                            k.name, k.value
                        ),
                    )
                }
                Some((_, Err(e))) => {
                    return fail(row, format!("knob {} cannot be read back: {e}", k.name))
                }
                None => return fail(row, format!("the probe did not read knob {}", k.name)),
            }
        }
    }
    let mut env = env;
    env.retain(|(k, _)| !extra_env.iter().any(|(x, _)| x == k));
    env.extend(extra_env.iter().cloned());
    let prepared = match wrapper {
        Some(w) if !w.is_empty() => {
            // The wrapper's argv[0] is its bare name: perf puts the folder of an argv[0]
            // with a '/' first on the PATH it passes on, which would shadow the user's
            // own programs (pyenv's python3 by /usr/bin/python3).
            let bare = Path::new(&w[0])
                .file_name()
                .map_or_else(|| w[0].clone(), |n| n.to_owned());
            let argv: Vec<OsString> = std::iter::once(bare)
                .chain(w[1..].iter().cloned())
                .chain(command.iter().cloned())
                .collect();
            Prepared::new(Path::new(&w[0]), &argv, &env)
        }
        _ => Prepared::new(program, command, &env),
    };
    match prepared {
        Ok(p) => (row, Some(p)),
        Err(e) => fail(row, e.to_string()),
    }
}

/// How a session's runs are launched: the settings' output, THP mode and timeout, memory
/// sampled, the mark descriptor given; no counters (the session adds its own).
pub fn launch_options(settings: &ExecSettings) -> LaunchOptions {
    LaunchOptions {
        show_output: settings.show_output,
        thp_never: settings.thp == Thp::Never,
        timeout: settings.timeout,
        count_syscalls: false,
        launcher_apart: false,
        trace: None,
        capture_stdout: false,
        log: crate::counters::linux::ptrace::Log::Counts,
        record_faults: false,
        memory_every: crate::engine::spawn::memory_every(),
        mark: true,
    }
}

/// The evidence run of `command` (with `program`) under allocator `a` of `settings`:
/// what its calls and faults did, or why nothing was recorded.
pub fn evidence_of(
    a: &AllocatorSpec,
    settings: &ExecSettings,
    program: &Path,
    command: &[OsString],
) -> crate::model::evidence::Recorded {
    let (row, prepared) = prepare_wrapped(a, settings, program, command, None, &[]);
    match prepared {
        Some(p) => crate::engine::evidence::of_command(&p, &launch_options(settings))
            .map(|(_, e)| e)
            .into(),
        None => crate::model::evidence::Recorded::Unrecorded(
            row.failure
                .unwrap_or_else(|| "the command could not be prepared".into()),
        ),
    }
}

/// Keeps a session's layout draws apart from its order's (both from its seed).
const LAYOUT_STREAM: u64 = 0x6c61_796f_7574_0002;

/// Why a session stopped before its end.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The counters asked for cannot be read on this machine; nothing ran.
    #[error("--counters {}: {why}", .mode.name())]
    Counters {
        /// The counter mode asked for (`--counters`).
        mode: CounterMode,
        /// Why it cannot be used here.
        why: crate::counters::Unavailable,
    },
    /// Saving the results failed (exit status 1).
    #[error("saving the results failed: {0}")]
    Save(String),
}

/// Progress and events of a session, for the terminal.
pub trait Observer {
    /// How many runs the session will make (warm-ups and traced runs included).
    fn session_started(&mut self, total_runs: usize);
    /// A run of the row `label` begins; `what` says which ("warm-up 1/3", "run 2/10", "traced
    /// run (syscall counts)").
    fn run_started(&mut self, label: &str, what: &str);
    /// That run ended: how (`Ok`), or why it could not be started (`Err`).
    fn run_finished(&mut self, label: &str, run: Result<&launch::ChildRun, &str>);
    /// A one-line note or warning for the user.
    fn say(&mut self, msg: &str);
}

/// Runs the whole session. `save` is called with the record after every run (and at the
/// end), so that finished runs survive an interruption. Returns the record; `complete` is
/// false when Ctrl-C stopped it. `Err` is for what fails before any run (counters asked
/// for but unusable) and for results that cannot be saved.
pub fn run_session(
    settings: &ExecSettings,
    observer: &mut dyn Observer,
    save: &mut dyn FnMut(&ExecRecord) -> Result<(), String>,
) -> Result<ExecRecord, SessionError> {
    let plan =
        crate::counters::resolve(settings.counters).map_err(|why| SessionError::Counters {
            mode: settings.counters,
            why,
        })?;
    let syscall_counter = match &plan {
        CounterPlan::Perf(_) => "perf".to_string(),
        CounterPlan::Ptrace => "ptrace".to_string(),
        CounterPlan::Unavailable(why) => why.clone(),
    };
    let inherited_preload = std::env::var_os("LD_PRELOAD");
    if let Some(p) = &inherited_preload {
        observer.say(&format!(
            "note: LD_PRELOAD={} from this environment is not passed to the command (each allocator sets its own)",
            p.to_string_lossy()
        ));
    }
    let mut rows: Vec<AllocatorRuns> = Vec::new();
    let mut prepared: Vec<Option<Prepared>> = Vec::new();
    for a in &settings.allocators {
        if !settings.versions.is_empty() {
            for (k, v) in settings.versions.iter().enumerate() {
                let (mut row, p) = prepare(a, settings, &v.program, &v.command);
                row.allocator = format!("{} [{}]", row.allocator, v.name);
                row.command_index = Some(k);
                if let Some(why) = &row.failure {
                    observer.say(&format!("{}: {why}", row.allocator));
                }
                rows.push(row);
                prepared.push(p);
            }
            continue;
        }
        let (row, p) = prepare(a, settings, &settings.program, &settings.command);
        if let Some(why) = &row.failure {
            observer.say(&format!("{}: {why}", row.allocator));
        }
        rows.push(row);
        prepared.push(p);
        if let Some((command, suffix)) = &settings.second {
            let (mut row, p) = prepare(a, settings, &settings.program, command);
            row.allocator.push_str(suffix);
            if let Some(why) = &row.failure {
                observer.say(&format!("{}: {why}", row.allocator));
            }
            rows.push(row);
            prepared.push(p);
        }
    }
    let opts = LaunchOptions {
        count_syscalls: matches!(plan, CounterPlan::Perf(_)),
        ..launch_options(settings)
    };
    let mut record = ExecRecord {
        schema: SCHEMA.into(),
        command: settings
            .command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect(),
        started: crate::fmt::rfc3339(crate::counters::unix_now()),
        complete: false,
        runs_requested: settings.runs,
        warmup: settings.warmup,
        thp: settings.thp,
        timeout_s: settings.timeout.map(|t| t.as_secs_f64()),
        syscall_counter,
        environment: crate::counters::envinfo::Environment::capture(&exec_allocator_info()),
        allocators: rows,
        order_seed: Some(settings.order_seed),
        noise_threshold: settings.noise_threshold,
        confidence: settings.level,
        trap_cost_ns: None,
        stopped_by: None,
        adaptive_rounds: 0,
        rounds_cut: None,
        max_time_s: settings.max_time.map(|t| t.as_secs_f64()),
        commands: settings
            .versions
            .iter()
            .map(|v| crate::model::command::NamedCommand {
                name: v.name.clone(),
                command: v
                    .command
                    .iter()
                    .map(|a| a.to_string_lossy().into_owned())
                    .collect(),
            })
            .collect(),
    };
    save(&record).map_err(SessionError::Save)?;

    // The one schedule: warm-up rounds, then measured rounds, every round in its own
    // shuffled order, so that no allocator always runs after the same one.
    let alive: Vec<usize> = (0..prepared.len())
        .filter(|&i| prepared[i].is_some())
        .collect();
    let traced_runs = if matches!(plan, CounterPlan::Ptrace) {
        alive.len()
    } else {
        0
    };
    // One evidence run per allocator: what its calls and faults did.
    let planned = alive.len() * (settings.warmup + settings.runs + 1) as usize + traced_runs;
    observer.session_started(planned);
    struct Session<'a> {
        settings: &'a ExecSettings,
        opts: LaunchOptions,
        alive: Vec<usize>,
        prepared: &'a mut [Option<Prepared>],
        record: &'a mut ExecRecord,
        observer: &'a mut dyn Observer,
        save: &'a mut dyn FnMut(&ExecRecord) -> Result<(), String>,
        error: Option<SessionError>,
        /// When the first measured round began (the adaptive rounds' clock).
        measuring_since: Option<std::time::Instant>,
        /// When the session began (--max-time's clock: warm-ups count).
        began: std::time::Instant,
        /// The runs the progress counts, adaptive rounds added as they start.
        planned: usize,
        /// The draws of each run's environment padding ([`crate::model::layout`]),
        /// from the order's seed.
        layout: crate::analysis::stats::SplitMix,
    }
    impl Rounds for Session<'_> {
        fn more(&mut self, done: u32) -> bool {
            if done == 0 {
                self.measuring_since = Some(std::time::Instant::now());
            }
            // A round, as long as the rounds so far took on average, and the evidence
            // runs after the last round (one run per allocator, each recorded run a
            // third slower than an untraced one here: a round and a half, to be safe).
            let per_round = self
                .measuring_since
                .map_or(Duration::ZERO, |since| since.elapsed() / done.max(1));
            let fits =
                |until: Duration| self.began.elapsed() + per_round + per_round * 3 / 2 <= until;
            if done < self.settings.runs {
                // The first measured round always runs; each later one when it fits.
                if done > 0 && self.settings.max_time.is_some_and(|t| !fits(t)) {
                    self.record.rounds_cut = Some(done);
                    let alive = self.prepared.iter().filter(|p| p.is_some()).count();
                    self.planned -= alive * (self.settings.runs - done) as usize;
                    self.observer.session_started(self.planned);
                    return false;
                }
                return true;
            }
            let (Some(until), Some(_)) = (self.settings.adaptive_until, self.measuring_since)
            else {
                return false;
            };
            // Another round only while a comparison is open and the round ends in time.
            if done >= MAX_ROUNDS || crate::ui::interrupt::interrupted() || !fits(until) {
                return false;
            }
            let rows = crate::analysis::command::rows(self.record);
            let band = self.settings.noise_threshold;
            if !rows
                .iter()
                .any(|r| crate::analysis::command::still_open(r, band))
            {
                return false;
            }
            self.record.adaptive_rounds += 1;
            let alive = self.prepared.iter().filter(|p| p.is_some()).count();
            self.planned += alive;
            self.observer.session_started(self.planned);
            true
        }
        fn step(&mut self, subject: usize, pass: Pass, position: usize) -> Next {
            let i = self.alive[subject];
            let Some(c) = self.prepared[i].as_ref() else {
                return Next::Retire;
            };
            let settings = self.settings;
            let label = self.record.allocators[i].allocator.clone();
            let what = match pass {
                Pass::Warmup(w) => format!("warm-up {}/{}", w + 1, settings.warmup),
                Pass::Round(r) if r < settings.runs => format!("run {}/{}", r + 1, settings.runs),
                Pass::Round(r) => format!("run {} (adaptive)", r + 1),
            };
            self.observer.run_started(&label, &what);
            let pad =
                crate::model::layout::LayoutDraw::draw(|| self.layout.next_u64()).env_pad_bytes;
            let outcome = launch::run(&c.padded(pad), &self.opts).map_err(|e| e.to_string());
            self.observer
                .run_finished(&label, outcome.as_ref().map_err(String::as_str));
            let row = &mut self.record.allocators[i];
            let mut next = Next::Keep;
            match outcome {
                Err(why) => {
                    row.failure = Some(why);
                    next = Next::Retire;
                }
                Ok(run) if run.termination == Termination::Interrupted => return Next::Stop,
                Ok(run) => {
                    if let (true, Err(why)) = (self.opts.count_syscalls, &run.syscalls) {
                        row.failure = Some(format!("reading the syscall counters failed: {why}"));
                        next = Next::Retire;
                    } else if !run.termination.success() {
                        let said = match run.stderr_tail.as_deref().map(last_lines) {
                            Some(lines) if !lines.is_empty() => format!(
                                "; its stderr ended with: {lines} (all its output: --show-output)"
                            ),
                            Some(_) => "; it wrote nothing to stderr".to_string(),
                            None => String::new(),
                        };
                        row.failure = Some(format!(
                            "the command {} ({what}){said}",
                            run.termination.describe(settings.timeout)
                        ));
                        next = Next::Retire;
                    } else {
                        match pass {
                            Pass::Warmup(_) => row.warmup_runs += 1,
                            Pass::Round(r) => row.runs.push(ExecRun {
                                round: r + 1,
                                position: Some(position as u32),
                                wall_ns: run.wall_ns,
                                start_unix_ns: run.start_unix_ns,
                                usage: run.usage,
                                syscalls: run.syscalls.ok(),
                                memory_unavailable: run.memory.as_ref().err().map(|u| u.0.clone()),
                                memory: run.memory.unwrap_or_default(),
                                idle_from_ms: run.mark_ms,
                                env_pad_bytes: Some(pad),
                            }),
                        }
                    }
                }
            }
            if next == Next::Retire {
                self.prepared[i] = None;
            }
            if let Err(e) = (self.save)(self.record) {
                self.error = Some(SessionError::Save(e));
                return Next::Stop;
            }
            next
        }
    }
    let mut session = Session {
        settings,
        opts,
        alive,
        prepared: &mut prepared,
        record: &mut record,
        observer: &mut *observer,
        save: &mut *save,
        error: None,
        measuring_since: None,
        began: std::time::Instant::now(),
        planned,
        layout: crate::analysis::stats::SplitMix(settings.order_seed ^ LAYOUT_STREAM),
    };
    Schedule {
        subjects: session.alive.len(),
        warmup: settings.warmup,
        seed: settings.order_seed,
        order: Order::Shuffled,
    }
    .run(&mut session);
    if let Some(e) = session.error.take() {
        return Err(e);
    }
    if matches!(plan, CounterPlan::Ptrace) {
        let traced = LaunchOptions {
            trace: Some(crate::counters::linux::ptrace::Scope::Tree),
            count_syscalls: false,
            launcher_apart: false,
            ..opts
        };
        if !crate::ui::interrupt::interrupted() {
            let cost = trap_cost(&opts, &traced);
            observer.say(&match &cost {
                Ok(ns) => format!(
                    "tracer: one trapped memory syscall costs {} here (the lab's own loop of {TRAP_LOOP_CALLS} calls, traced against untraced)",
                    crate::fmt::fmt_ns(*ns)
                ),
                Err(why) => format!("tracer: the cost of a trapped call is unknown: {why}"),
            });
            record.trap_cost_ns = cost.ok();
        }
        for (i, cmd) in prepared.iter().enumerate() {
            if crate::ui::interrupt::interrupted() {
                break;
            }
            let Some(c) = cmd.as_ref() else { continue };
            let label = record.allocators[i].allocator.clone();
            observer.run_started(&label, "traced run (syscall counts)");
            let outcome = launch::run(c, &traced).map_err(|e| e.to_string());
            observer.run_finished(&label, outcome.as_ref().map_err(String::as_str));
            let row = &mut record.allocators[i];
            match outcome {
                Ok(run) if run.termination.success() => {
                    row.traced_syscalls = run.syscalls.ok();
                    // The counts come from a run the tracer slowed down; the summary sets
                    // its time and rusage against the untraced runs' and says where it
                    // behaved otherwise.
                    row.traced_run = Some(TracedRun {
                        wall_ns: run.wall_ns,
                        usage: run.usage,
                    });
                }
                Ok(run) if run.termination == Termination::Interrupted => break,
                Ok(run) => {
                    row.traced_note = Some(format!(
                        "the traced run {}",
                        run.termination.describe(settings.timeout)
                    ))
                }
                Err(why) => row.traced_note = Some(format!("the traced run failed: {why}")),
            }
            save(&record).map_err(SessionError::Save)?;
        }
    }
    for (i, cmd) in prepared.iter().enumerate() {
        if crate::ui::interrupt::interrupted() {
            break;
        }
        let Some(c) = cmd.as_ref() else { continue };
        let label = record.allocators[i].allocator.clone();
        observer.run_started(&label, "evidence run (what its calls and faults did)");
        let recorded = crate::engine::evidence::of_command(c, &opts);
        observer.run_finished(
            &label,
            recorded
                .as_ref()
                .map(|(run, _)| run)
                .map_err(String::as_str),
        );
        if crate::ui::interrupt::interrupted() {
            break;
        }
        record.allocators[i].evidence = Some(recorded.map(|(_, e)| e).into());
        save(&record).map_err(SessionError::Save)?;
    }
    record.complete = !crate::ui::interrupt::interrupted();
    if !record.complete {
        record.stopped_by = crate::ui::interrupt::signal_name().map(str::to_string);
    }
    save(&record).map_err(SessionError::Save)?;
    Ok(record)
}

/// `alloclab trap-loop --calls N`: N memory syscalls, one-page mmap and munmap pairs.
pub fn trap_loop(calls: u64) {
    for _ in 0..calls.div_ceil(2) {
        // SAFETY: an anonymous private mapping of one page, unmapped at once; nothing
        // refers to it.
        unsafe {
            let p = libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            );
            if p != libc::MAP_FAILED {
                libc::munmap(p, 4096);
            }
        }
    }
}

/// Calls the trap loop makes: enough that the tracer's cost (23 µs per call measured
/// here: 115 ms) stands far above the process's start (a few ms).
const TRAP_LOOP_CALLS: u64 = 5_000;

/// What one trapped memory syscall costs here, in ns: the lab's own trap loop run three
/// times untraced and three times traced, alternating; the difference of the medians over
/// the traced run's counted calls.
fn trap_cost(untraced: &LaunchOptions, traced: &LaunchOptions) -> Result<f64, String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find the lab's own program: {e}"))?;
    let argv: Vec<OsString> = vec![
        exe.clone().into_os_string(),
        "trap-loop".into(),
        "--calls".into(),
        TRAP_LOOP_CALLS.to_string().into(),
    ];
    let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let cmd = Prepared::new(&exe, &argv, &env).map_err(|e| e.to_string())?;
    let quiet = LaunchOptions {
        show_output: false,
        ..*untraced
    };
    let quiet_traced = LaunchOptions {
        show_output: false,
        ..*traced
    };
    let (mut plain, mut trapped, mut calls) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        let a = launch::run(&cmd, &quiet).map_err(|e| e.to_string())?;
        let b = launch::run(&cmd, &quiet_traced).map_err(|e| e.to_string())?;
        for r in [&a, &b] {
            if !r.termination.success() {
                return Err(format!(
                    "the trap loop {}",
                    r.termination.describe(untraced.timeout)
                ));
            }
        }
        let counted = b.syscalls.map_err(|u| u.to_string())?;
        plain.push(a.wall_ns as f64);
        trapped.push(b.wall_ns as f64);
        calls.push(
            (counted.brk + counted.mmap + counted.munmap + counted.madvise + counted.mremap) as f64,
        );
    }
    let med = |v: &[f64]| crate::analysis::stats::median(v).unwrap_or(f64::NAN);
    let per = (med(&trapped) - med(&plain)) / med(&calls).max(1.0);
    if per.is_finite() && per > 0.0 {
        Ok(per)
    } else {
        Err("the traced loop was not slower than the untraced one".into())
    }
}

/// The allocators' build facts as an exec session records them.
pub fn exec_allocator_info() -> crate::counters::envinfo::AllocatorInfo {
    crate::counters::envinfo::AllocatorInfo {
        version: "per allocator: see each row".into(),
        crates: format!(
            "tikv-jemallocator {}, tikv-jemalloc-sys {}, mimalloc {}, libmimalloc-sys {}",
            env!("ALLOCLAB_JEMALLOCATOR_VERSION"),
            env!("ALLOCLAB_JEMALLOC_SYS_VERSION"),
            env!("ALLOCLAB_MIMALLOC_CRATE_VERSION"),
            env!("ALLOCLAB_LIBMIMALLOC_SYS_VERSION")
        ),
        read_knob: |_| Err("not in this process".into()),
        stats: || Err("not in this process".into()),
        release: crate::counters::envinfo::no_release,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocator_lists_parse_with_and_without_knobs() {
        let parse = crate::model::knobs::parse_spec_list;
        let a = parse("system,jemalloc,tc=/usr/lib/libtcmalloc.so.4").unwrap();
        assert_eq!(
            a.iter().map(|x| x.to_string()).collect::<Vec<_>>(),
            ["system", "jemalloc", "tc"]
        );
        assert_eq!(
            preload(&a[2], Path::new("/d"), None),
            Some(PathBuf::from("/usr/lib/libtcmalloc.so.4"))
        );
        let a = parse("system:top_pad=64M;mimalloc:purge_delay=0;x=/a/b.so").unwrap();
        assert_eq!(a[0].to_string(), "system:top_pad=64M");
        assert_eq!(a[1].to_string(), "mimalloc:purge_delay=0");
        assert!(a[2].library.is_some());
        for bad in [
            "",
            "jemalloc=/x.so",
            "a b=/x.so",
            "x=",
            "system,system",
            "system,glibc",
            "hoard",
        ] {
            assert!(parse(bad).is_err(), "{bad:?} accepted");
        }
        // glibc's malloc by the names its headers print.
        assert_eq!(parse("glibc").unwrap()[0].to_string(), "system");
    }

    #[test]
    fn preloads_are_where_cargo_builds_them() {
        let dir = Path::new("/d");
        assert_eq!(
            preload(&AllocatorSpec::plain(Allocator::Jemalloc), dir, None),
            Some(PathBuf::from("/d/liballoclab_preload_jemalloc.so"))
        );
        let system = AllocatorSpec::plain(Allocator::System);
        assert_eq!(preload(&system, dir, None), None);
        // glibc's shim, only over a program that links an allocator library itself.
        assert_eq!(
            preload(&system, dir, Some("libjemalloc.so.2")),
            Some(PathBuf::from("/d/liballoclab_preload_system.so"))
        );
        assert_eq!(own_allocator(&system, Path::new("/bin/true")), None);
    }

    #[test]
    fn the_child_environment_drops_inherited_allocator_settings() {
        let spec: AllocatorSpec = "jemalloc:dirty_decay_ms=-1".parse().unwrap();
        let env = child_env(&spec, Some(Path::new("/x/lib.so")));
        let get = |k: &str| {
            env.iter()
                .filter(|(n, _)| n == k)
                .map(|(_, v)| v.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(get("LD_PRELOAD"), ["/x/lib.so"]);
        assert_eq!(get("_RJEM_MALLOC_CONF"), ["dirty_decay_ms:-1"]);
        assert!(env
            .iter()
            .all(|(k, _)| k != "GLIBC_TUNABLES" && !k.to_string_lossy().starts_with("MIMALLOC_")));
    }
}
