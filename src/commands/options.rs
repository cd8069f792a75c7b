//! The options of the commands that run a program of the user's, validated with what
//! only the machine can say: the program found on PATH, the preload libraries' folder,
//! a seed from the clock. The command line's definition (`crate::cli`) stays free of
//! such look-ups.

use crate::cli::ExecArgs;
use crate::engine::clock_seed;
use crate::engine::command::{preload_dir, ExecSettings, Version};
use crate::engine::spawn::resolve_program;
use crate::model::counts::CounterMode;
use std::time::Duration;

/// `-c` commands as named versions: each split as a shell would (quotes, backslashes),
/// its program found, its name given or its position.
pub fn versions(cmds: &[String], names: &[String]) -> Result<Vec<Version>, String> {
    if cmds.len() < 2 {
        return Err(format!(
            "-c takes two or more commands to compare (got {}); one command goes after `--`",
            cmds.len()
        ));
    }
    if !names.is_empty() && names.len() != cmds.len() {
        return Err(format!(
            "{} --name for {} commands: give one name per -c command, in their order",
            names.len(),
            cmds.len()
        ));
    }
    let path_var = std::env::var_os("PATH");
    let mut out: Vec<Version> = Vec::new();
    for (i, c) in cmds.iter().enumerate() {
        let words = shlex::split(c)
            .filter(|w| !w.is_empty())
            .ok_or_else(|| format!("-c {c:?}: not a command (an unclosed quote, or empty)"))?;
        let name = names.get(i).cloned().unwrap_or_else(|| (i + 1).to_string());
        if name.is_empty() || name.contains(['[', ']', '\n']) {
            return Err(format!(
                "--name {name:?}: a name must be non-empty, without brackets or line breaks"
            ));
        }
        if out.iter().any(|v| v.name == name) {
            return Err(format!(
                "--name {name:?} is given twice: each command needs its own name"
            ));
        }
        let program = resolve_program(words[0].as_ref(), path_var.as_deref())
            .map_err(|why| format!("-c {c:?}: cannot run the command: {why}"))?;
        out.push(Version {
            name,
            command: words.into_iter().map(Into::into).collect(),
            program,
        });
    }
    Ok(out)
}

impl ExecArgs {
    /// Validates everything that can be checked before any run; intervals and verdicts
    /// at `level`.
    pub fn settings(&self, level: f64) -> Result<ExecSettings, String> {
        let versions = if self.cmds.is_empty() {
            Vec::new()
        } else {
            versions(&self.cmds, &self.names)?
        };
        let command = match versions.first() {
            Some(v) => v.command.clone(),
            None => self.command.clone(),
        };
        let mut settings = command_settings(
            crate::model::knobs::parse_spec_list(&self.allocators).map_err(|e| e.to_string())?,
            &command,
            CommandOptions {
                runs: self.runs,
                warmup: self.warmup,
                show_output: self.show_output,
                thp: self.thp,
                timeout: self.timeout,
                counters: self.counters,
                noise_threshold: self.noise_threshold,
                level,
                order_seed: self.order_seed,
            },
        )?;
        // Every allocator's run of every version is a row whose label becomes a file
        // name (its histograms): one too long for a file name, or two that would share
        // one, are refused now, not when the session is saved.
        let max = crate::model::spec::MAX_STEM_BYTES;
        for a in &settings.allocators {
            for v in &versions {
                let label = format!("{a} [{}]", v.name);
                let bytes = crate::model::spec::file_stem(&label).len();
                if bytes > max {
                    // One byte of the file name per character of the name.
                    let room = max.saturating_sub(bytes - v.name.chars().count());
                    let start: String = v.name.chars().take(30).collect();
                    let fix = if room == 0 {
                        format!("give the allocator {a} a shorter name")
                    } else {
                        format!("give a --name of at most {room} characters")
                    };
                    return Err(format!(
                        "--name '{start}…' is too long: its runs under {a} are saved in files named after '{a} [NAME]', {bytes} bytes as a file name, and at most {max} leave room for what the lab adds within the {} bytes a file name may have; {fix}",
                        crate::model::spec::NAME_MAX
                    ));
                }
            }
        }
        let labels: Vec<String> = settings
            .allocators
            .iter()
            .flat_map(|a| versions.iter().map(move |v| format!("{a} [{}]", v.name)))
            .collect();
        crate::model::spec::distinct_stems_or(
            labels.iter().map(String::as_str),
            "give the -c commands --name values that stay apart as file names (letters a-z and A-Z, digits, '-', '_', '.' and '=' are kept; anything else becomes '_')",
        )?;
        settings.versions = versions;
        // Adaptive rounds follow a budget that can decide (--runs at least the rounds an
        // interval at the confidence level needs); fewer runs are a quick look, kept to.
        let can_decide = self.runs >= crate::analysis::stats::rounds_to_decide(level) as u32;
        settings.adaptive_until =
            (!self.no_adaptive && can_decide).then(|| Duration::from_secs_f64(self.max_time));
        settings.max_time = Some(Duration::from_secs_f64(self.max_time));
        Ok(settings)
    }
}

/// How a user's command is run, besides its allocators.
pub struct CommandOptions {
    pub runs: u32,
    pub warmup: u32,
    pub show_output: bool,
    pub thp: crate::model::spec::Thp,
    pub timeout: Option<f64>,
    pub counters: CounterMode,
    pub noise_threshold: f64,
    /// The confidence level of the intervals and verdicts (`--confidence`).
    pub level: f64,
    /// None: from the clock.
    pub order_seed: Option<u64>,
}

impl CommandOptions {
    /// The options tune, sweep and cliff take for a command of your own
    /// ([`crate::cli::ProgramArgs`]), with the command's own runs, THP mode, counters
    /// and noise band.
    pub fn of_program(
        p: &crate::cli::ProgramArgs,
        runs: u32,
        thp: crate::model::spec::Thp,
        counters: CounterMode,
        noise_threshold: f64,
        level: f64,
    ) -> Self {
        CommandOptions {
            runs,
            warmup: p.warmup,
            show_output: p.show_output,
            thp,
            timeout: p.timeout,
            counters,
            noise_threshold,
            level,
            order_seed: p.order_seed,
        }
    }
}

/// Validates a user's command (exec, tune, sweep, cliff): its program must be there.
pub fn command_settings(
    allocators: Vec<crate::model::knobs::AllocatorSpec>,
    command: &[std::ffi::OsString],
    o: CommandOptions,
) -> Result<ExecSettings, String> {
    if o.thp == crate::model::spec::Thp::Advise {
        return Err("--thp advise makes the lab's own workload madvise its buffers as NumPy does; a command of your own gives its own advice: use --thp system or --thp never".into());
    }
    if let Some((a, knob)) = allocators.iter().find_map(|a| Some((a, a.lab_knob_set()?))) {
        return Err(format!(
            "{a}: {knob} is the lab's own act on its built-in workload; a command of your own does it itself (it can run its work on a thread, call malloc_trim or its allocator's release call, and tell the lab when its burst is over through ALLOCLAB_MARK_FD)"
        ));
    }
    // A command that is not there fails the same under every allocator: bad input.
    let first = command
        .first()
        .ok_or("no command given: put it after `--`")?;
    let path_var = std::env::var_os("PATH");
    let program = resolve_program(first, path_var.as_deref())
        .map_err(|why| format!("cannot run the command: {why}"))?;
    Ok(ExecSettings {
        allocators,
        command: command.to_vec(),
        program,
        runs: o.runs,
        warmup: o.warmup,
        show_output: o.show_output,
        thp: o.thp,
        timeout: o.timeout.filter(|t| *t > 0.0).map(Duration::from_secs_f64),
        counters: o.counters,
        preload_dir: preload_dir(),
        noise_threshold: o.noise_threshold,
        level: o.level,
        order_seed: o.order_seed.unwrap_or_else(clock_seed),
        second: None,
        versions: Vec::new(),
        adaptive_until: None,
        max_time: None,
    })
}
