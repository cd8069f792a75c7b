//! The driver's command line (clap definitions) and its validation into a plan. Parsing
//! and validating are two steps; everything after sees only valid options.

use crate::error::Error;
use crate::export::Format;
use crate::model::budget::BudgetArgs;
use crate::model::counts::CounterMode;
use crate::model::experiment::Experiment;
use crate::model::run::RunSpec;
use crate::model::spec::{self, Allocator, Choice, Variant, Workload};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "alloclab",
    version,
    about = "Allocator-behaviour experiment lab: the same temporary-array workloads under glibc malloc, jemalloc, mimalloc, TCMalloc, snmalloc and rpmalloc, one process per run",
    after_help = "Each run is a separate worker process (alloclab-system, alloclab-jemalloc, …, alloclab-rpmalloc) found beside this executable; an installed allocator library (name=/path/lib.so) runs in alloclab-system with the library preloaded."
)]
pub struct Cli {
    /// Confidence level of every interval, in percent [default: 95; `report`: the
    /// folder's]; a verdict needs this coverage (95 needs 6 processes, 99 needs 8).
    #[arg(long, global = true, value_name = "PERCENT", value_parser = crate::analysis::stats::parse_confidence)]
    pub confidence: Option<f64>,
    #[command(subcommand)]
    pub command: Command,
}

impl Command {
    /// A mistyped option taken for the user's command: the commands that run a program
    /// of yours take everything from the first word clap does not know as that program,
    /// so `alloclab exec --max-tme 3 -- prog` would try to run `--max-tme`. No program's
    /// name starts with `-`: such a first word is an option this command does not have,
    /// said with the closest one it has.
    /// A warning for each of alloclab's own options that comes after the command (and so
    /// goes to the command): `alloclab exec ./prog 10 --runs 1` runs the default rounds
    /// and passes `--runs 1` to ./prog. Not an error: the command may take an option of
    /// that name too.
    pub fn options_after_command(&self) -> Vec<String> {
        let Some((name, command)) = self.command_of() else {
            return Vec::new();
        };
        let longs = long_options(name);
        let program = command
            .first()
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let words: Vec<String> = command
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        // `--port {port}` (serve) is the server's own: the placeholder says so; so is
        // `--port N` when serve was given `--port N` too (a server on a fixed port).
        let fixed = match self {
            Command::Serve(a) => a.port.map(|p| p.to_string()),
            _ => None,
        };
        let fixed = fixed.as_deref();
        let port_of_server = |i: usize| {
            let is_port = |w: &str| w.contains("{port}") || Some(w) == fixed;
            is_port(&words[i])
                || words[i].strip_prefix("--port=").is_some_and(is_port)
                || words.get(i + 1).is_some_and(|n| is_port(n))
        };
        words
            .iter()
            .enumerate()
            .skip(1)
            .filter(|(i, _)| !port_of_server(*i))
            .map(|(_, a)| a.clone())
            .filter(|a| longs.iter().any(|l| a.split('=').next() == Some(l.as_str())))
            .map(|a| format!(
                "warning: {a} comes after the command, so it goes to {program}, not to alloclab {name}; if it was meant for alloclab, put it before the command (alloclab {name} {a} … -- {program} …)"
            ))
            .collect()
    }

    /// The subcommand's name and the user's command, for those that run one.
    fn command_of(&self) -> Option<(&'static str, &Vec<std::ffi::OsString>)> {
        Some(match self {
            Command::Exec(a) => ("exec", &a.command),
            Command::Serve(a) => ("serve", &a.command),
            Command::Trace(a) => ("trace", &a.command),
            Command::Tune(a) => ("tune", &a.program.command),
            Command::Sweep(a) => ("sweep", &a.program.command),
            Command::Cliff(a) => ("cliff", &a.program.command),
            _ => return None,
        })
    }

    pub fn mistyped_option(&self) -> Option<String> {
        let (name, command) = self.command_of()?;
        let first = command.first()?.to_string_lossy().into_owned();
        if !first.starts_with('-') {
            return None;
        }
        let given = first.split('=').next().unwrap_or(&first).to_string();
        let longs = long_options(name);
        let closest = longs
            .iter()
            .map(|l| (crate::model::spec::edit_distance(&given, l), l))
            .filter(|(d, _)| *d <= 2)
            .min_by_key(|(d, _)| *d)
            .map(|(_, l)| format!(" (did you mean '{l}'?)"))
            .unwrap_or_default();
        Some(format!(
            "unknown option '{given}' for alloclab {name}{closest}: its options go before `--` and your command after it; `alloclab {name} --help` lists them"
        ))
    }
}

impl Cli {
    /// The command line's definition with its help laid out in the console's width
    /// ([`crate::fmt::screen_width`]: `COLUMNS`, else the terminal's, else 100), as the
    /// lab's own screens are.
    pub fn command_in_width() -> clap::Command {
        <Cli as clap::CommandFactory>::command().term_width(crate::fmt::screen_width())
    }

    /// [`Parser::try_parse`] with the help wrapped to [`Cli::command_in_width`].
    pub fn try_parse_in_width() -> Result<Cli, clap::Error> {
        let mut matches = Self::command_in_width().try_get_matches()?;
        <Cli as clap::FromArgMatches>::from_arg_matches_mut(&mut matches)
            .map_err(|e| e.format(&mut Self::command_in_width()))
    }
}

/// The long options of subcommand `name`, as typed ("--runs").
fn long_options(name: &str) -> Vec<String> {
    let cli = <Cli as clap::CommandFactory>::command();
    cli.find_subcommand(name)
        .into_iter()
        .flat_map(|c| c.get_arguments())
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .collect()
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one workload under several allocators and variants and compare them.
    Compare(CompareArgs),
    /// Run experiment files into results folders (summary, histograms, plots, REPORT.md).
    Run(RunArgs),
    /// Rebuild summary.csv, histograms, plots and REPORT.md of a results folder from its runs.
    Report(ReportArgs),
    /// Measure what observing costs: clock, histogram, counters, and their effect on the median.
    Calibrate(CalibrateArgs),
    /// Find by bisection the exact size where faults or syscalls per iteration change
    /// (of the built-in workload, or per call of your command after `--`).
    Cliff(CliffArgs),
    /// Try curated knob sets per allocator: which remove the faults and syscalls, at what
    /// cost (on the built-in workload, or on your command after `--`).
    Tune(TuneArgs),
    /// Run your command at a range of sizes ({size}) under each allocator: time, faults,
    /// syscalls and RSS per call, and the exact sizes where they change.
    Sweep(SweepArgs),
    /// Run any command under each allocator (preloaded) and compare time, faults and syscalls.
    Exec(ExecArgs),
    /// Start your server (redis, valkey, KeyDB, dragonfly: anything that speaks RESP) under
    /// each allocator and drive it at fixed request rates, open loop: tail latency from
    /// each request's intended start, memory per byte it holds, faults per request.
    Serve(ServeArgs),
    /// Why and when: one cell under each allocator, every iteration's latency, faults,
    /// memory syscalls, RSS and heap top, and the call stacks of the faults and syscalls
    /// (perf), as a timeline, flame graphs and one mechanism line per allocator.
    Trace(TraceArgs),
    /// Compare two results cell by cell (run folders, or compare's JSON/CSV): change,
    /// interval, verdict; exit 1 when a cell got significantly slower.
    Diff(DiffArgs),
    /// List the allocators (with versions and knobs, and the allocator libraries installed here), workloads and variants.
    #[command(after_help = "Examples:\n  alloclab list")]
    List,
    /// Write the man pages (one per command) or the shell completions, generated from
    /// these very definitions, into a folder (`make man` does both).
    Generate(GenerateArgs),
    /// (internal) Make `calls` memory syscalls (one-page mmap and munmap pairs) and exit:
    /// what `exec --counters ptrace` times to measure the cost of one trapped call.
    #[command(hide = true, name = "trap-loop")]
    TrapLoop {
        #[arg(long)]
        calls: u64,
    },
    /// (internal) Report where malloc resolves and the preloaded allocator's knobs, as JSON.
    #[command(hide = true, name = "probe-preload")]
    ProbePreload {
        #[arg(long)]
        kind: String,
        #[arg(long)]
        knob: Vec<String>,
    },
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  alloclab exec --runs 10 -- python3 my_script.py\n  alloclab exec --allocators \\\n    'system;jemalloc:dirty_decay_ms=-1;gperftools=libtcmalloc_minimal.so.4' \\\n    -- ./server --bench\n\nsystem runs the command as it is (glibc malloc; a program that links an allocator library itself, as Debian's redis-server links libjemalloc.so.2, gets alloclab's glibc shim preloaded so that glibc's malloc serves it); jemalloc, mimalloc, tcmalloc, snmalloc and rpmalloc preload the project's libraries (liballoclab_preload_*.so beside alloclab, or in $ALLOCLAB_PRELOAD_DIR); name=/path/lib.so preloads any other allocator."
)]
pub struct ExecArgs {
    /// Allocators, comma-separated (system,jemalloc,mimalloc,tcmalloc,snmalloc,rpmalloc,
    /// name=/path/to/lib.so); with knobs, separated by ';':
    /// "system:top_pad=64M;jemalloc:dirty_decay_ms=-1".
    #[arg(
        long,
        alias = "allocator",
        default_value = "system,jemalloc,mimalloc,tcmalloc,snmalloc,rpmalloc"
    )]
    pub allocators: String,
    /// Measured runs per allocator, in rounds: every allocator once per round, in an
    /// order shuffled in every round (6, the default, is the fewest whose paired
    /// intervals reach 95 %; 4 or 5 decide unpaired, fewer decide nothing), as many as
    /// fit into --max-time. After them, adaptive rounds while an allocator's comparison
    /// with the first is still open, until --max-time (not after fewer than 4 runs: a
    /// quick look keeps to its runs).
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub runs: u32,
    /// Only the --runs rounds, no adaptive rounds after them: a fixed budget (an open
    /// comparison stays undecided).
    #[arg(long)]
    pub no_adaptive: bool,
    /// Start no round that would end, with the evidence runs after the rounds, after
    /// this many seconds of the session (warm-ups included; the warm-ups and the first
    /// round always run); at most 60 rounds in all. The progress lines give the ETA.
    #[arg(long, default_value_t = 40.0, value_parser = crate::model::budget::parse_timeout)]
    pub max_time: f64,
    /// Runs per allocator before the measured ones, not counted.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub warmup: u32,
    /// Let the command's stdout and stderr through (discarded by default).
    #[arg(long)]
    pub show_output: bool,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// The full screen instead of the answer first: every column (user and system time,
    /// context switches, each syscall) and each line at its full length (table format).
    #[arg(long, visible_alias = "wide")]
    pub verbose: bool,
    /// Also write the results into this folder (exec.json with every run, summary.csv,
    /// histograms of the run times, env.json, REPORT.md), updated after every run.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write into a non-empty folder that alloclab did not make (no folder.json). Without
    /// it such a folder is refused; with it nothing in the folder is removed, and files
    /// alloclab writes replace any of the same name.
    #[arg(long)]
    pub force_out: bool,
    /// Syscall counts of the process tree: perf (tracepoints on every run; root or
    /// CAP_PERFMON), ptrace (memory syscalls, from one extra traced run per allocator; no
    /// privileges), auto (perf where it works, else ptrace), off.
    #[arg(long, value_enum, default_value = "auto")]
    pub counters: CounterMode,
    /// never: the command runs with transparent huge pages disabled (prctl, inherited).
    #[arg(long, default_value = "system", value_parser = spec::parse_choice::<crate::model::spec::Thp>)]
    pub thp: crate::model::spec::Thp,
    /// Kill a run (and its process group) after this many seconds; that row fails.
    #[arg(long, value_parser = crate::model::budget::parse_timeout)]
    pub timeout: Option<f64>,
    /// An allocator is called faster or slower than the first only when the whole --confidence
    /// interval of its per-round ratio lies beyond this band around 1 (percent).
    #[arg(long, default_value = "2", value_parser = parse_percent)]
    pub noise_threshold: f64,
    /// Seed of the order within rounds [default: from the clock; recorded, to repeat it].
    #[arg(long)]
    pub order_seed: Option<u64>,
    /// Two or more versions of a command in one session, each given as one shell-quoted
    /// string (as in hyperfine): `-c 'old/prog --n 100' -c 'new/prog --n 100'`. Each
    /// runs under each allocator in the shuffled rounds; each is compared with the first
    /// under every allocator (wall time per round, counts, RSS), and exec exits 1 when
    /// one is slower beyond --noise-threshold.
    #[arg(
        short = 'c',
        long = "cmd",
        value_name = "COMMAND",
        conflicts_with = "command"
    )]
    pub cmds: Vec<String>,
    /// A name for each -c command, in their order (default: 1, 2, …).
    #[arg(short = 'n', long = "name", value_name = "NAME", requires = "cmds")]
    pub names: Vec<String>,
    /// The command and its arguments (put them after `--`).
    #[arg(
        required_unless_present = "cmds",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  alloclab serve --rates 10k,50k -- \\\n    redis-server --port {port} --save '' --appendonly no\n  alloclab serve --allocators 'libjemalloc.so.2,system,mimalloc' \\\n    --out results/redis -- redis-server --port {port} --save ''\n\n{port} in the server's arguments is replaced by a free port for every process (or give --port). Each process is stopped with SHUTDOWN NOSAVE, then SIGTERM, then SIGKILL."
)]
pub struct ServeArgs {
    /// Allocators, as for exec: comma-separated, with knobs separated by ';'.
    #[arg(
        long,
        alias = "allocator",
        default_value = "system,jemalloc,mimalloc,tcmalloc"
    )]
    pub allocators: String,
    /// Request rates, requests per second, comma-separated (10k, 5e4 and 50000 all work);
    /// every server process runs each, lowest first.
    #[arg(long, default_value = "10k,50k")]
    pub rates: String,
    /// How long each rate's requests are sent, seconds.
    #[arg(long, default_value_t = 5.0, value_parser = crate::model::budget::parse_timeout)]
    pub seconds: f64,
    /// Server processes per allocator, one per round in a shuffled order (4 or more give
    /// an interval on each allocator's p99 against the first's).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub processes: u32,
    /// Connections the requests are spread over, round robin.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=256))]
    pub connections: u32,
    /// The p99 a rate must keep (from the intended start) to count as held: 500us, 1ms, 2.5ms.
    #[arg(long, default_value = "1ms")]
    pub p99_target: String,
    /// How long a server may take to answer PING after it starts, seconds.
    #[arg(long, default_value_t = 10.0, value_parser = crate::model::budget::parse_timeout)]
    pub ready_timeout: f64,
    /// The port the server listens on, when its arguments have no {port}.
    #[arg(long)]
    pub port: Option<u16>,
    /// Seed of the request stream (the same stream for every allocator).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Seed of the order within rounds [default: from the clock; recorded, to repeat it].
    #[arg(long)]
    pub order_seed: Option<u64>,
    /// An allocator is called faster or slower than the first only when the whole
    /// --confidence interval of its per-round p99 ratio lies beyond this band (percent).
    #[arg(long, default_value = "5", value_parser = parse_percent)]
    pub noise_threshold: f64,
    /// Syscall counts of the server: perf (root or CAP_PERFMON), auto, off.
    #[arg(long, value_enum, default_value = "auto")]
    pub counters: CounterMode,
    /// Let the server's stdout and stderr through (discarded by default).
    #[arg(long)]
    pub show_output: bool,
    /// Also write the results into this folder (serve.json, summary.csv, histograms,
    /// memory, REPORT.md), updated after every server process.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write into a non-empty folder that alloclab did not make (no folder.json).
    #[arg(long)]
    pub force_out: bool,
    /// The server and its arguments (put them after `--`), with {port} where it takes its port.
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<std::ffi::OsString>,
}

/// Options of tune, sweep and cliff when they run a command of your own.
#[derive(Debug, Clone, clap::Args)]
pub struct ProgramArgs {
    /// How many calls one run of your command makes, where the command says so with
    /// {calls} in its arguments (e.g. `--calls {calls}`): every allocator then runs it
    /// at N and at 2N calls, and each round's difference over N is one call without the
    /// program's start-up. Without {calls}, a run's figures are divided by N.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub calls: Option<u64>,
    /// Runs per allocator (or knob set) before the measured ones, not counted.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub warmup: u32,
    /// Kill a run of your command (and its process group) after this many seconds;
    /// its row fails.
    #[arg(long, value_parser = crate::model::budget::parse_timeout)]
    pub timeout: Option<f64>,
    /// Let your command's stdout and stderr through (discarded by default).
    #[arg(long)]
    pub show_output: bool,
    /// Seed of the order within rounds [default: from the clock; recorded, to repeat it].
    #[arg(long)]
    pub order_seed: Option<u64>,
    /// Your command and its arguments, after `--` ({size} and {calls} are replaced).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  alloclab sweep --sizes 1000..100000 --bytes-per-element 8 --buffers 2 -- \\\n    target/release/examples/temporaries --elements {size}\n\nWith --bytes-per-element 8 --buffers 2 (two f64 buffers of {size} elements at once), each cliff is named with the allocator's threshold behind it, beside the time per run either side of it.\n\nYour own program: put it after `--` with {size} where it takes its input size, and {calls} where it takes how many calls to make:\n  alloclab sweep --sizes 10000..1000000 --calls 50 -- \\\n    python3 experiments/numpy_temporaries.py \\\n    --size {size} --calls {calls} --only func2"
)]
pub struct SweepArgs {
    /// Sizes: a geometric range FROM..TO (1e4..1e6, 2^10..2^20) with --per-octave sizes
    /// per doubling, or a comma-separated list (10000,50000,1e5).
    #[arg(long)]
    pub sizes: String,
    /// Sizes per doubling of a FROM..TO range.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub per_octave: u32,
    /// Allocators, as for exec: comma-separated, with knobs separated by ';'.
    #[arg(long, alias = "allocator", default_value = "system,jemalloc,mimalloc")]
    pub allocators: String,
    /// Measured rounds per size: every allocator once per round, in a shuffled order.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// The results folder (summary.csv, sweep.json, points/, histograms/, plots/,
    /// cliffs.json, REPORT.md), rewritten after every size.
    #[arg(long, default_value = "results/sweep")]
    pub out: PathBuf,
    /// Write into a non-empty folder that alloclab did not make (no folder.json). Without
    /// it such a folder is refused; with it nothing in the folder is removed, and files
    /// alloclab writes replace any of the same name.
    #[arg(long)]
    pub force_out: bool,
    /// Do not bisect the changes the sweep finds.
    #[arg(long)]
    pub no_cliffs: bool,
    /// Start no size, and no bisection, that would end after this many seconds of the
    /// sweep, each size expected to cost what the last one did (the first size always
    /// runs); what was left is named on the screen and in REPORT.md. The progress lines
    /// give the ETA.
    #[arg(long, default_value_t = 600.0, value_parser = crate::model::budget::parse_timeout)]
    pub max_time: f64,
    /// Bisect each change until the two sides are this many elements apart.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub resolution: u64,
    /// Bytes per element of {size} of the buffers your command allocates (8 for arrays
    /// of {size} f64): with it, each cliff is matched against the allocator's known
    /// thresholds (glibc's mmap and trim thresholds and M_TOP_PAD, jemalloc's
    /// oversize_threshold), as the size sweep's are.
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub bytes_per_element: Option<u64>,
    /// How many of those buffers one call holds at once (2 for a temporary and its
    /// result), for the rules that count them (glibc's M_TOP_PAD).
    #[arg(long, value_name = "N", requires = "bytes_per_element", value_parser = clap::value_parser!(u64).range(1..=64))]
    pub buffers: Option<u64>,
    /// Bisect each cliff at or near a known threshold again with that threshold moved by
    /// its knob, and say whether the cliff moved to where the threshold's rule puts it.
    #[arg(long, requires = "bytes_per_element")]
    pub confirm: bool,
    /// Syscall counts: perf, ptrace (no privileges), auto, off (as for exec).
    #[arg(long, value_enum, default_value = "auto")]
    pub counters: CounterMode,
    /// never: the command runs with transparent huge pages disabled.
    #[arg(long, default_value = "system", value_parser = spec::parse_choice::<crate::model::spec::Thp>)]
    pub thp: crate::model::spec::Thp,
    #[command(flatten)]
    pub program: ProgramArgs,
}

#[derive(Debug, clap::Args)]
#[command(
    // Clap does not wrap a usage line: this one in two, each within 80 columns.
    override_usage = "alloclab cliff [OPTIONS] --allocator <ALLOCATOR> --from <FROM> --to <TO>\n       [COMMAND]...",
    after_help = "Examples:\n  alloclab cliff --allocator system --variant out-of-place \\\n    --from 1000 --to 100000\n\nYour own program: put it after `--` with {size} where it takes its input size:\n  alloclab cliff --allocator system --from 30000 --to 60000 --calls 50 -- \\\n    python3 experiments/numpy_temporaries.py \\\n    --size {size} --calls {calls} --only func2"
)]
pub struct CliffArgs {
    /// The allocator, with knobs if wanted: system, "jemalloc:dirty_decay_ms=-1", or an
    /// installed library: "gperftools=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"
    /// (a bare file name is looked up in the standard library directories).
    #[arg(long, alias = "allocators")]
    pub allocator: String,
    /// The workload (`alloclab list` shows them).
    #[arg(long, default_value = "scale", value_parser = spec::parse_choice::<Workload>)]
    pub workload: Workload,
    /// The variant of the built-in workload: in-place, out-of-place, reuse or fused
    /// (required without a command of your own).
    #[arg(long, alias = "variants", value_parser = spec::parse_choice::<Variant>)]
    pub variant: Option<Variant>,
    /// Smallest size of the range, in elements.
    #[arg(long, value_parser = spec::parse_size)]
    pub from: u64,
    /// Largest size of the range, in elements.
    #[arg(long, value_parser = spec::parse_size)]
    pub to: u64,
    /// What must change: faults (≥ 1 per iteration) or syscalls (≥ 0.5 memory syscalls).
    #[arg(long, value_enum, default_value = "faults")]
    pub metric: crate::analysis::cliff::Metric,
    /// never: every probe runs with transparent huge pages disabled (prctl); advise: the
    /// workload asks for huge pages on every buffer of 4 MiB or more (madvise), as NumPy does.
    #[arg(long, default_value = "system", value_parser = spec::parse_choice::<crate::model::spec::Thp>)]
    pub thp: crate::model::spec::Thp,
    /// Minimum measuring time per probe, in seconds.
    #[arg(long, default_value_t = 0.05, value_parser = crate::model::budget::parse_seconds)]
    pub min_time: f64,
    /// After the bisection, both sizes beside the cliff are measured again in this many
    /// worker processes each, in interleaved rounds, for their latency with a --confidence
    /// interval and the ratio across the cliff with a verdict (1: no interval).
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub processes: u32,
    /// Your command only: rounds per probe; the spread of a size's rounds is the noise
    /// its onset must exceed (with one round, only the metric's threshold counts).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// The ratio across the cliff is called faster or slower only when its whole
    /// interval lies beyond this band around 1 (percent).
    #[arg(long, default_value = "2", value_parser = parse_percent)]
    pub noise_threshold: f64,
    /// How to count memory syscalls: perf tracepoints, ptrace (no privileges), auto
    /// (perf where it works, else ptrace) or off.
    #[arg(long, value_enum, default_value = "auto")]
    pub counters: CounterMode,
    /// table (two lines, either side of the cliff) or json.
    #[arg(long, default_value = "table", value_parser = formats(&["table", "json"]))]
    pub format: Format,
    /// With your command: bytes per element of {size} of the buffers it allocates (8 for
    /// arrays of f64), to name the allocator threshold behind the cliff (as sweep does;
    /// the built-in workload's are known).
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub bytes_per_element: Option<u64>,
    /// With your command: how many of those buffers one call holds at once.
    #[arg(long, value_name = "N", requires = "bytes_per_element", value_parser = clap::value_parser!(u64).range(1..=64))]
    pub buffers: Option<u64>,
    /// Start no probe that would end after this many seconds, each expected to cost what
    /// the last one did; a bisection cut short says between which sizes the change lies.
    /// The sides' processes fit in what is left (at least one each).
    #[arg(long, default_value_t = 60.0, value_parser = crate::model::budget::parse_timeout)]
    pub max_time: f64,
    #[command(flatten)]
    pub program: ProgramArgs,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  alloclab tune\n\nYour own program: put it after `--`; every knob set runs it in interleaved rounds (--processes), through the same preloads and environment as exec:\n  alloclab tune --allocators system,jemalloc -- \\\n    python3 experiments/numpy_temporaries.py --calls 200 --only func2"
)]
pub struct TuneArgs {
    /// Elements in the input array (1000000, 1e6, 2^20).
    #[arg(long, default_value = "1000000", value_parser = spec::parse_size)]
    pub size: u64,
    /// The workload (`alloclab list` shows them).
    #[arg(long, default_value = "scale", value_parser = spec::parse_choice::<Workload>)]
    pub workload: Workload,
    /// The variant whose faults and syscalls the knobs should remove.
    #[arg(long, alias = "variants", default_value = "out-of-place", value_parser = spec::parse_choice::<Variant>)]
    pub variant: Variant,
    /// Comma-separated allocators to tune [default: all six]; installed libraries as
    /// name=/path/lib.so run with their defaults only (the lab knows no knobs for them).
    #[arg(long, alias = "allocator")]
    pub allocators: Option<String>,
    /// Measuring time of each process, in seconds.
    #[arg(long, default_value_t = 0.15, value_parser = crate::model::budget::parse_seconds)]
    pub min_time: f64,
    /// How to count memory syscalls: perf tracepoints, ptrace (no privileges), auto
    /// (perf where it works, else ptrace) or off.
    #[arg(long, value_enum, default_value = "auto")]
    pub counters: CounterMode,
    /// Output format on stdout (not a CI service's: tune's rows are a search).
    #[arg(long, default_value = "table", value_parser = formats(&["table", "markdown", "csv", "json"]))]
    pub format: Format,
    /// Worker processes per knob set, one per interleaved round.
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub processes: u32,
    /// Start no round that would end after this many seconds of measuring, each round
    /// expected to cost what the last one did (the first always runs; with a command,
    /// as exec's --max-time: warm-ups and evidence runs counted); the screen says how
    /// many rounds ran. The progress gives the ETA.
    #[arg(long, default_value_t = 120.0, value_parser = crate::model::budget::parse_timeout)]
    pub max_time: f64,
    /// A set helps (or costs time) only when its whole --confidence interval against the
    /// defaults lies beyond this band around 1 (percent).
    #[arg(long, default_value = "2", value_parser = parse_percent)]
    pub noise_threshold: f64,
    /// The full table (p99, iterations, each syscall, allocations) instead of the one
    /// that fits the screen (table format).
    #[arg(long, visible_alias = "wide")]
    pub verbose: bool,
    #[command(flatten)]
    pub program: ProgramArgs,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  alloclab generate man --out target/man\n  alloclab generate completions --out target/completions"
)]
pub struct GenerateArgs {
    /// man: roff man pages (alloclab.1, alloclab-compare.1, …); completions: bash, zsh,
    /// fish, elvish and PowerShell completion scripts.
    #[arg(value_enum)]
    pub what: Generated,
    /// The folder to write into (created if absent).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Write into a non-empty folder that alloclab did not make (no folder.json). Without
    /// it such a folder is refused; with it nothing in the folder is removed, and files
    /// alloclab writes replace any of the same name.
    #[arg(long)]
    pub force_out: bool,
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Generated {
    Man,
    Completions,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  alloclab calibrate\n  alloclab calibrate --noise --variant out-of-place"
)]
pub struct CalibrateArgs {
    /// The allocator the founding case runs under: system, "jemalloc:dirty_decay_ms=-1",
    /// or an installed library, name=/path/lib.so.
    #[arg(long, alias = "allocators", default_value = "system")]
    pub allocator: String,
    /// Size of the founding case used to measure the observer's effect.
    #[arg(long, default_value = "1000000", value_parser = spec::parse_size)]
    pub size: u64,
    /// Minimum measuring time of each run, in seconds.
    #[arg(long, default_value_t = 0.2, value_parser = crate::model::budget::parse_seconds)]
    pub min_time: f64,
    /// Alternating rounds (off, perf, ptrace) per variant; the per-round ratios give the
    /// effect and its --confidence interval (6 rounds reach 95 %).
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=50))]
    pub rounds: u32,
    /// Print JSON instead of lines.
    #[arg(long)]
    pub json: bool,
    /// Instead of the observer: measure where one cell's noise comes from — within a
    /// process over time, between processes, over the session — and which per-process
    /// budget gives the narrowest ratio interval in a given time. Its processes measure
    /// --process-time each, so --rounds and --min-time do not apply.
    #[arg(long, conflicts_with_all = ["rounds", "min_time"])]
    pub noise: bool,
    /// With --noise: keep every worker on this CPU (sched_setaffinity), e.g. 0: whether
    /// that narrows the spread between processes.
    #[arg(long, requires = "noise")]
    pub cpu: Option<u32>,
    /// With --noise: the variant of the cell.
    #[arg(long, alias = "variants", default_value = "in-place", requires = "noise", value_parser = spec::parse_choice::<Variant>)]
    pub variant: Variant,
    /// With --noise: worker processes (4 to 100), each keeping every iteration (up to
    /// 1,000,000: 16 MB each in the driver).
    #[arg(long, default_value_t = 12, requires = "noise", value_parser = clap::value_parser!(u32).range(4..=100))]
    pub processes: u32,
    /// With --noise: seconds each process measures, up to 60 (budgets of which two
    /// windows fit after the --warmup are judged; at least the warm-up + 0.01 s).
    #[arg(long, default_value_t = 1.0, requires = "noise", value_parser = crate::analysis::noise::parse_process_time)]
    pub process_time: f64,
    /// With --noise: the warm-up the budgets start after, in seconds (compare's
    /// --warmup-time).
    #[arg(long = "warmup", default_value_t = 0.01, requires = "noise", value_parser = crate::model::budget::parse_seconds)]
    pub budget_warmup: f64,
    /// With --noise: the seconds of processes the ratio figures assume (compare's time),
    /// from 1 to 3600.
    #[arg(long, default_value_t = 10.0, requires = "noise", value_parser = crate::analysis::noise::parse_per_seconds)]
    pub per_seconds: f64,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  alloclab run experiments/numpy-temporaries.toml\n  alloclab run --quick --out /tmp/ra experiments/*.toml"
)]
pub struct RunArgs {
    /// Experiment files (experiments/*.toml).
    #[arg(required = true)]
    pub experiments: Vec<PathBuf>,
    /// Folder that receives one results folder per experiment.
    #[arg(long, default_value = "results")]
    pub out: PathBuf,
    /// Write into a non-empty folder that alloclab did not make (no folder.json). Without
    /// it such a folder is refused; with it nothing in the folder is removed, and files
    /// alloclab writes replace any of the same name.
    #[arg(long)]
    pub force_out: bool,
    /// Use each experiment's [quick] settings: a reduced matrix for a smoke test.
    #[arg(long)]
    pub quick: bool,
    /// Skip runs whose results (same spec and budget) are already in the folder.
    #[arg(long)]
    pub resume: bool,
    /// Do not measure what the observer costs before the runs (about 7 s; 1 s with
    /// --quick): the reports then say that it was not measured (`alloclab calibrate`
    /// measures it on its own).
    #[arg(long)]
    pub no_calibration: bool,
    /// Confirm each bisected cliff that sits at a known threshold of its allocator: move
    /// the threshold with its knob (e.g. jemalloc:oversize_threshold=16M) and bisect again
    /// where the threshold's rule then puts the cliff (experiments with find_cliffs;
    /// `confirm_cliffs = true` in an experiment file does the same).
    #[arg(long)]
    pub confirm: bool,
    /// How to count memory syscalls: perf tracepoints (root / CAP_PERFMON), ptrace (no
    /// privileges; a second, traced pass per run), auto (perf where it works, else ptrace).
    #[arg(long, value_enum, default_value = "auto")]
    pub counters: CounterMode,
    /// Kill a worker that runs longer than this many seconds.
    #[arg(long, default_value_t = 300.0, value_parser = crate::model::budget::parse_timeout)]
    pub timeout: f64,
    /// Refuse a run set larger than this many runs (its size and estimated time are
    /// shown); raise it to run a larger one on purpose.
    /// Layout: random draws, for every worker process, a heap shift (0–4 KiB) and an
    /// environment padding, and gives every cell's request and environment one length,
    /// so that where the heap puts a buffer is noise the intervals hold, not a cell's
    /// fixed bias; fixed holds them alike in every process (docs/method.md measures
    /// both).
    #[arg(long, value_enum, default_value = "random")]
    pub layout: crate::model::layout::LayoutMode,
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_runs: u64,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  alloclab report results/size-sweep\n  alloclab report results"
)]
pub struct ReportArgs {
    /// A results folder written by `alloclab run`, e.g. results/numpy-temporaries (its
    /// REPORT.md, report.html, summary and plots are rebuilt); or a folder that holds
    /// results folders, e.g. results/ after `make run-all` (its index.html is written:
    /// the founding answer, what removes it, where it starts, a link to every page).
    pub dir: PathBuf,
}

/// Why `alloclab run` refuses to start.
#[derive(Debug, thiserror::Error)]
pub enum RunPlanError {
    #[error(transparent)]
    Experiment(#[from] crate::model::experiment::ExperimentError),
    #[error("{first} and {second} are both named '{name}' and would share the results folder {name}/; rename one of them")]
    DuplicateName {
        name: String,
        first: String,
        second: String,
    },
}

impl RunArgs {
    /// Loads and validates every experiment file.
    pub fn experiments(&self) -> Result<Vec<Experiment>, RunPlanError> {
        let mut experiments: Vec<Experiment> = Vec::new();
        for path in &self.experiments {
            let mut e = Experiment::load(path, self.quick)?;
            if self.confirm {
                e.confirm_cliffs = e.find_cliffs;
            }
            if let Some(x) = experiments.iter().find(|x| x.name == e.name) {
                return Err(RunPlanError::DuplicateName {
                    name: e.name,
                    first: x.path.display().to_string(),
                    second: path.display().to_string(),
                });
            }
            experiments.push(e);
        }
        Ok(experiments)
    }
}

/// `--order`: how a round of compare orders its cells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RoundOrder {
    Blocked,
    Shuffled,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  alloclab compare --size 1000000\n  alloclab compare --allocators system,mimalloc \\\n    --variants in-place,out-of-place --size 1M\n  alloclab compare --allocators 'system;system:top_pad=64M' \\\n    --variants out-of-place --format json\n\nEvery option in full, with what each default was measured against: docs/compare.md"
)]
pub struct CompareArgs {
    /// Elements in the input array (1000000, 1_000_000, 1,000,000, 1e6, 1.5e6, 1M, 2^20).
    #[arg(long, default_value = "1000000", value_parser = spec::parse_size)]
    pub size: u64,
    /// The workload to run.
    #[arg(long, default_value = "scale", value_parser = spec::parse_choice::<Workload>)]
    pub workload: Workload,
    /// Comma-separated variants [default: all four: in-place,out-of-place,reuse,fused].
    #[arg(long, alias = "variant")]
    pub variants: Option<String>,
    /// Allocators [default: all six], comma-separated; with knobs ';'-separated:
    /// "system:top_pad=64M;mimalloc"; a library: "gperftools=libtcmalloc_minimal.so.4".
    #[arg(long, alias = "allocator")]
    pub allocators: Option<String>,
    /// Transparent huge pages: system, never (disabled), advise (madvise, as NumPy does).
    #[arg(long, default_value = "system", value_parser = spec::parse_choice::<crate::model::spec::Thp>)]
    pub thp: crate::model::spec::Thp,
    /// Seed of the input data.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// How to count memory syscalls: auto, perf (root or CAP_PERFMON), ptrace (no
    /// privileges), off.
    #[arg(long, value_enum, default_value = "auto", hide_possible_values = true)]
    pub counters: CounterMode,
    /// Output format on stdout: table, markdown, csv, json, bmf, github-action-benchmark.
    #[arg(long, value_enum, default_value = "table", hide_possible_values = true)]
    pub format: Format,
    /// Kill a worker that runs longer than this many seconds.
    #[arg(long, default_value_t = 300.0, value_parser = crate::model::budget::parse_timeout)]
    pub timeout: f64,
    /// The full screen: every column, the machine, allocator statistics and knobs.
    #[arg(long, visible_alias = "wide")]
    pub verbose: bool,
    /// Worker processes per cell, one per interleaved round (adaptive rounds follow).
    #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub processes: u32,
    /// A verdict needs the whole interval beyond ± this percent.
    #[arg(long, default_value = "2", value_parser = parse_percent)]
    pub noise_threshold: f64,
    /// Seed of the order within rounds [default: from the clock, printed].
    #[arg(long)]
    pub order_seed: Option<u64>,
    /// How a round orders its cells (blocked: each allocator's cells together).
    #[arg(long, value_enum, default_value = "shuffled")]
    pub order: RoundOrder,
    /// Adaptive rounds until every comparison is decided and within ± this percent
    /// [default: 5].
    #[arg(long, value_parser = parse_percent)]
    pub precision: Option<f64>,
    /// Only the --processes rounds: no adaptive rounds, a fixed budget.
    #[arg(long, conflicts_with = "precision")]
    pub no_adaptive: bool,
    /// Keep every worker on this CPU (sched_setaffinity).
    #[arg(long)]
    pub cpu: Option<u32>,
    /// Run N workers at once, each on its own CPU: more rounds, but ratios can move.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: u32,
    /// random (a heap shift and an environment padding drawn per process) or fixed.
    #[arg(
        long,
        value_enum,
        default_value = "random",
        hide_possible_values = true
    )]
    pub layout: crate::model::layout::LayoutMode,
    /// Start no round that would end after this many seconds [default: 18; 60 with
    /// --precision].
    #[arg(long, value_parser = crate::model::budget::parse_timeout)]
    pub max_time: Option<f64>,
    /// Refuse a plan of more than this many runs (cells × --processes).
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_runs: u64,
    /// Also write a self-contained HTML report to this file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  alloclab trace --variant out-of-place --size 1000000\n  alloclab trace -- python3 experiments/numpy_temporaries.py \\\n    --calls 50 --only func2\n\nThe call stacks need the perf tool (Debian: linux-perf) and perf events (root, CAP_PERFMON or perf_event_paranoid <= -1); without them the timeline is still measured (a command's from its exec to its exit), the memory syscalls are timed by the ptrace tracer (x86_64, no privileges) without stacks, and the attribution says what it needs; a command is refused only where neither perf nor the tracer works. perf's build-id cache (~/.debug) is not written."
)]
pub struct TraceArgs {
    /// Elements in the input array (1000000, 1e6, 2^20).
    #[arg(conflicts_with = "command", long, default_value = "1000000", value_parser = spec::parse_size)]
    pub size: u64,
    /// The workload to run.
    #[arg(conflicts_with = "command", long, default_value = "scale", value_parser = spec::parse_choice::<Workload>)]
    pub workload: Workload,
    /// The variant to trace.
    #[arg(conflicts_with = "command", long, alias = "variants", default_value = "out-of-place", value_parser = spec::parse_choice::<Variant>)]
    pub variant: Variant,
    /// Allocators, comma-separated (with knobs separated by ';', as for compare); the
    /// first two also get a differential flame graph.
    #[arg(long, alias = "allocator", default_value = "system,jemalloc,mimalloc")]
    pub allocators: String,
    /// Measured iterations of the traced run (each timed and kept alone).
    #[arg(conflicts_with = "command", long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub iterations: u64,
    /// Iterations before the measured ones.
    #[arg(conflicts_with = "command", long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(0..=100_000))]
    pub warmup_iters: u64,
    /// Untraced worker processes per allocator (compare's budget), in interleaved rounds:
    /// the traced run's median is stated against theirs, so that what tracing costs is
    /// said, not assumed. 0: none.
    #[arg(conflicts_with = "command", long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub processes: u32,
    /// One fault sample (with its call stack) per this many user page faults.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub fault_period: u64,
    /// Bytes of user stack copied with each sample for DWARF unwinding.
    #[arg(long, default_value_t = 16384, value_parser = clap::value_parser!(u32).range(1024..=65528))]
    pub stack_bytes: u32,
    /// never: every worker runs with transparent huge pages disabled (prctl); advise: the
    /// workload asks for huge pages on every buffer of 4 MiB or more (madvise), as NumPy does.
    #[arg(long, default_value = "system", value_parser = spec::parse_choice::<crate::model::spec::Thp>)]
    pub thp: crate::model::spec::Thp,
    /// Seed of the input data.
    #[arg(conflicts_with = "command", long, default_value_t = 42)]
    pub seed: u64,
    /// The results folder.
    #[arg(long, default_value = "results/trace")]
    pub out: PathBuf,
    /// Write into a non-empty folder that alloclab did not make (no folder.json). Without
    /// it such a folder is refused; with it nothing in the folder is removed, and files
    /// alloclab writes replace any of the same name.
    #[arg(long)]
    pub force_out: bool,
    /// Kill a worker that runs longer than this many seconds.
    #[arg(long, default_value_t = 300.0, value_parser = crate::model::budget::parse_timeout)]
    pub timeout: f64,
    /// Seed of the order within the untraced rounds [default: from the clock; recorded].
    #[arg(long)]
    pub order_seed: Option<u64>,
    /// Start no untraced round (--processes, or a command's --runs) that would end after
    /// this many seconds, each expected to cost what the last one did (the first always
    /// runs; with a command, as exec's --max-time). The traced runs, one per allocator,
    /// always run.
    #[arg(long, default_value_t = 60.0, value_parser = crate::model::budget::parse_timeout)]
    pub max_time: f64,
    /// With a command: its untraced runs per allocator (exec's, shuffled rounds), which
    /// the traced run's time and counts are stated against. 0: none.
    #[arg(long, requires = "command", default_value_t = 6, value_parser = clap::value_parser!(u32).range(0..=1000))]
    pub runs: u32,
    /// With a command: let its stdout and stderr through (discarded by default).
    #[arg(long, requires = "command")]
    pub show_output: bool,
    /// Keep perf's own files (perf/<allocator>.data, ~70 MB each at the defaults) in the
    /// results folder, for `perf report -i`; by default they are removed once read.
    #[arg(long)]
    pub keep_perf_data: bool,
    /// Do not record a CPython command's Python lines. By default a command run by
    /// CPython 3.12 or newer (`python3 script.py`, `env python3 …`, or a script whose #!
    /// line names python) is traced with the lab's line recorder, and each fault and
    /// memory syscall is also given the Python function and line behind it.
    #[arg(long, requires = "command")]
    pub no_python: bool,
    /// Also run a CPython command with its perf support (PYTHONPERFSUPPORT=1), so that
    /// perf names each Python frame in the native stacks and the join of lines is
    /// checked against perf's own innermost Python frame. Off by default: CPython's
    /// trampolines can crash a program whose daemon threads still run at exit.
    #[arg(long, requires = "command", conflicts_with = "no_python")]
    pub python_perf_frames: bool,
    /// A command of your own to trace instead of a built-in cell (put it after `--`): one
    /// run of it per allocator, preloaded as `alloclab exec` does, with its timeline from
    /// the exec to the exit.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<std::ffi::OsString>,
}

impl TraceArgs {
    /// One spec per allocator.
    pub fn specs(&self) -> Result<Vec<RunSpec>, Error> {
        let allocators =
            crate::model::knobs::parse_spec_list(&self.allocators).map_err(Error::bad)?;
        Ok(allocators
            .into_iter()
            .map(|alloc| RunSpec {
                allocator: alloc.allocator,
                workload: self.workload,
                variant: self.variant,
                size: self.size,
                threads: 1,
                seed: self.seed,
                knobs: alloc.knobs,
                thp: self.thp,
                library: alloc.library,
            })
            .collect())
    }
}

#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  alloclab diff results/numpy-temporaries /tmp/ra/numpy-temporaries\n  alloclab diff --pair system=system:top_pad=64M base.json new.json"
)]
pub struct DiffArgs {
    /// The baseline: a results folder of `alloclab run` (results/<experiment>) or a file
    /// from `alloclab compare --format json` (or csv).
    pub base: PathBuf,
    /// The results to compare with it, of the same kind.
    pub new: PathBuf,
    /// A change is called faster or slower only when its whole interval lies beyond this
    /// band around 1 (percent).
    #[arg(long, default_value = "2", value_parser = parse_percent)]
    pub noise_threshold: f64,
    /// table, markdown (for a pull-request comment) or json.
    #[arg(long, default_value = "table", value_parser = formats(&["table", "markdown", "json"]))]
    pub format: Format,
    /// Compare cells of differently named allocators: BASE_SPEC=NEW_SPEC matches BASE's
    /// cells of BASE_SPEC with NEW's cells of NEW_SPEC (same workload, variant, size and
    /// threads), e.g. --pair system=system:top_pad=64M. Repeatable.
    #[arg(long = "pair", value_name = "BASE_SPEC=NEW_SPEC", value_parser = parse_pair)]
    pub pairs: Vec<(String, String)>,
    /// Compare a side whose plan did not finish (an interrupted compare, a results folder
    /// whose folder.json says "complete": false) instead of refusing it; the output says
    /// which side is incomplete and what ran.
    #[arg(long)]
    pub allow_incomplete: bool,
    /// Leave the intervals as each run's own noise makes them: do not widen them by the
    /// drift between the two runs that the cells' shifts show (see docs/diff.md).
    #[arg(long)]
    pub no_drift_allowance: bool,
    /// Leave every ratio as measured: do not read it against the host's shift between
    /// the runs, which the cells whose loop calls no allocator show (compare's reuse
    /// cells; see docs/diff.md).
    #[arg(long)]
    pub no_host_reference: bool,
    /// Leave the faulting cells' ratios as measured: do not read each against the other
    /// allocators' change in the cost of a page fault between the runs (see docs/diff.md).
    /// --no-host-reference leaves both.
    #[arg(long)]
    pub no_fault_reference: bool,
    /// The full screen instead of the answer first: every note and environment change
    /// first, the table with each cell's whole name and every column (table format).
    #[arg(long, visible_alias = "wide")]
    pub verbose: bool,
}

/// `--pair BASE_SPEC=NEW_SPEC`: split at the `=` that leaves a valid allocator spec on
/// each side (specs hold `=` themselves: `system:top_pad=64M=system`).
fn parse_pair(s: &str) -> Result<(String, String), String> {
    let valid = |t: &str| {
        !t.is_empty() && crate::model::knobs::parse_spec_list(t).is_ok_and(|l| l.len() == 1)
    };
    s.match_indices('=')
        .map(|(i, _)| (&s[..i], &s[i + 1..]))
        .find(|(b, n)| valid(b) && valid(n))
        .map(|(b, n)| (b.to_string(), n.to_string()))
        .ok_or_else(|| {
            format!("'{s}': expected BASE_SPEC=NEW_SPEC, two allocator specs as the cells name them, e.g. system=system:top_pad=64M")
        })
}

/// A `--format` of a command that prints only some of the formats: `--help` lists
/// those, and clap refuses the others with them; a CI service's format (bmf,
/// github-action-benchmark) is refused saying which commands give it.
fn formats(names: &'static [&'static str]) -> impl clap::builder::TypedValueParser<Value = Format> {
    OnlyFormats(names)
}

#[derive(Clone)]
struct OnlyFormats(&'static [&'static str]);

impl clap::builder::TypedValueParser for OnlyFormats {
    type Value = Format;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Format, clap::Error> {
        let text = value.to_string_lossy();
        if let Ok(f) = <Format as clap::ValueEnum>::from_str(&text, false) {
            if f.rows().is_none() && !self.0.contains(&f.name()) {
                let message = format!(
                    "--format {}: a format for continuous-benchmarking services (one figure per benchmark and measure), given by `alloclab compare` and `alloclab exec`; `alloclab {}` prints {}",
                    f.name(),
                    cmd.get_name(),
                    self.0.join(", ")
                );
                return Err(
                    clap::Error::raw(clap::error::ErrorKind::InvalidValue, message)
                        .format(&mut cmd.clone()),
                );
            }
        }
        clap::builder::TypedValueParser::parse_ref(
            &clap::builder::TypedValueParser::try_map(
                clap::builder::PossibleValuesParser::new(self.0),
                |s| <Format as clap::ValueEnum>::from_str(&s, false),
            ),
            cmd,
            arg,
            value,
        )
    }

    fn possible_values(
        &self,
    ) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(
            self.0.iter().map(|n| clap::builder::PossibleValue::new(*n)),
        ))
    }
}

/// A percentage from 0 to 100, with or without '%': "2", "2%", "0.5 %"; as a fraction.
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let t = s.trim().trim_end_matches('%').trim();
    match t.parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=100.0).contains(&v) => Ok(v / 100.0),
        _ => Err(format!(
            "'{s}' is not a percentage: expected a number from 0 to 100, e.g. 2 or 2%"
        )),
    }
}

impl CompareArgs {
    /// The matrix to run: every allocator spec with every variant, in that order.
    pub fn specs(&self) -> Result<Vec<RunSpec>, Error> {
        let variants = match &self.variants {
            Some(list) => spec::parse_choice_list::<Variant>(list).map_err(Error::bad)?,
            None => Variant::ALL.to_vec(),
        };
        let allocators = match &self.allocators {
            Some(list) => crate::model::knobs::parse_spec_list(list).map_err(Error::bad)?,
            None => Allocator::ALL
                .iter()
                .map(|&a| crate::model::knobs::AllocatorSpec::plain(a))
                .collect(),
        };
        let mut specs = Vec::new();
        for alloc in &allocators {
            for &variant in &variants {
                specs.push(RunSpec {
                    allocator: alloc.allocator,
                    workload: self.workload,
                    variant,
                    size: self.size,
                    threads: 1,
                    seed: self.seed,
                    knobs: alloc.knobs.clone(),
                    thp: self.thp,
                    library: alloc.library.clone(),
                });
            }
        }
        Ok(specs)
    }
}
