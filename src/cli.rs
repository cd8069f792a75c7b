//! The driver's command line (clap definitions) and its validation into a plan. Parsing
//! and validating are two steps; everything after sees only valid options.

use crate::counters::CounterMode;
use crate::driver::{self, PlanError};
use crate::spec::{self, Allocator, Choice, RunSpec, Variant, Workload};
use crate::worker::BudgetArgs;
use clap::{Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, Parser)]
#[command(
    name = "alloclab",
    version,
    about = "Allocator-behaviour experiment lab: the same temporary-array workloads under glibc malloc, jemalloc and mimalloc, one process per run",
    after_help = "Each run is a separate worker process (alloclab-system, alloclab-jemalloc, alloclab-mimalloc) found beside this executable."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one workload under several allocators and variants and compare them.
    Compare(CompareArgs),
    /// List the allocators, workloads and variants.
    List,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned columns with units, plus the out-of-place/in-place lines.
    Table,
    Markdown,
    Csv,
    Json,
}

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Elements in the input array (1000000, 1_000_000, 1e6, 2^20).
    #[arg(long, default_value = "1000000", value_parser = spec::parse_size)]
    pub size: u64,
    /// The workload to run.
    #[arg(long, default_value = "scale", value_parser = spec::parse_choice::<Workload>)]
    pub workload: Workload,
    /// Comma-separated variants [default: all: in-place,out-of-place,reuse].
    #[arg(long)]
    pub variants: Option<String>,
    /// Comma-separated allocators [default: all: system,jemalloc,mimalloc].
    #[arg(long)]
    pub allocators: Option<String>,
    /// Seed of the input data.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// How to count memory syscalls.
    #[arg(long, value_enum, default_value = "perf")]
    pub counters: CounterMode,
    /// Output format on stdout.
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Kill a worker that runs longer than this many seconds.
    #[arg(long, default_value_t = 300.0, value_parser = crate::worker::parse_seconds)]
    pub timeout: f64,
}

/// A validated comparison, ready to run.
pub struct ComparePlan {
    pub specs: Vec<RunSpec>,
    pub executor: driver::ProcessExecutor,
    pub format: Format,
}

impl CompareArgs {
    /// Expands the matrix and checks it can run here before anything is spawned.
    pub fn plan(self) -> Result<ComparePlan, PlanError> {
        let variants = match &self.variants {
            Some(list) => spec::parse_choice_list::<Variant>(list)?,
            None => Variant::ALL.to_vec(),
        };
        let allocators = match &self.allocators {
            Some(list) => spec::parse_choice_list::<Allocator>(list)?,
            None => Allocator::ALL.to_vec(),
        };
        let mut specs = Vec::new();
        for &allocator in &allocators {
            for &variant in &variants {
                specs.push(RunSpec {
                    allocator,
                    workload: self.workload,
                    variant,
                    size: self.size,
                    threads: 1,
                    seed: self.seed,
                });
            }
        }
        driver::check_memory_here(&specs)?;
        let dir: PathBuf = driver::workers_dir()?;
        driver::check_workers(&dir, &allocators)?;
        Ok(ComparePlan {
            specs,
            executor: driver::ProcessExecutor {
                dir,
                budget: self.budget.budget(),
                counters: self.counters,
                timeout: Duration::from_secs_f64(self.timeout),
            },
            format: self.format,
        })
    }
}
