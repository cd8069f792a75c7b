//! Allocator knobs: `system:top_pad=64M`, `jemalloc:dirty_decay_ms=-1,oversize_threshold=16M`,
//! `mimalloc:purge_delay=0,allow_thp=0`. Each allocator has a list of knobs with a type;
//! names and values are validated against it, and each knob is applied through the
//! allocator's own mechanism: glibc's `GLIBC_TUNABLES`, jemalloc's config string (read
//! from `_RJEM_MALLOC_CONF` by tikv-jemallocator's prefixed build, not `MALLOC_CONF`),
//! mimalloc's `MIMALLOC_<NAME>` options.

use crate::model::library::Library;
use crate::model::spec::{parse_choice, Allocator, Choice, UnknownChoice};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The type of a knob's value: what it accepts and how it is written canonically.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Bytes; accepts 65536, 64K, 64M, 1G.
    Size,
    /// A whole number at least `min`.
    Int {
        /// The smallest value accepted.
        min: i64,
    },
    /// true/false (also 1/0).
    Bool,
    /// One of the listed words.
    Word(&'static [&'static str]),
}

/// One knob an allocator has.
#[derive(Clone, Copy, Debug)]
pub struct KnobDef {
    /// The knob's name as users write it and the allocator knows it (`top_pad`).
    pub name: &'static str,
    /// The type of its value, which a given value is checked against.
    pub kind: Kind,
    /// What it does, in a phrase, with its unit and special values.
    pub doc: &'static str,
}

/// The lab's own knob, on every allocator with a call that gives free memory back: not a
/// setting of the allocator but a call the worker makes once every buffer is freed, at
/// the start of the idle phase (budget `idle_time`).
pub const RELEASE_AT_IDLE: &str = "release_at_idle";

const RELEASE: KnobDef = KnobDef {
    name: RELEASE_AT_IDLE,
    kind: Kind::Bool,
    doc: "the lab's own: at the start of the idle phase (budget idle_time), every buffer freed, the worker asks the allocator to give its free memory back (glibc malloc_trim(0), jemalloc arena.<all>.purge, mimalloc mi_collect(true), TCMalloc ReleaseMemoryToSystem)",
};

/// The lab's other knob, on every allocator: the burst (inputs, measured phase, helpers)
/// runs on a thread of its own, which frees its buffers and exits before the idle phase,
/// so that no thread that allocated is alive during it (by default the main thread runs
/// the burst and sleeps through the idle). The burst itself can change with it: glibc
/// serves a thread other than the first from an arena of its own.
pub const BURST_ON_THREAD: &str = "burst_on_thread";

const EXIT: KnobDef = KnobDef {
    name: BURST_ON_THREAD,
    kind: Kind::Bool,
    doc: "the lab's own: the burst runs on a thread of its own (not the main thread), which frees its buffers and exits before any idle phase: every thread that allocated is gone during it. The burst itself may change: glibc serves such a thread from an arena of its own, not the main arena",
};

/// Whether `knobs` run the burst on a thread of its own (`burst_on_thread=true`).
pub fn bursts_on_thread(knobs: &[Knob]) -> bool {
    knobs
        .iter()
        .any(|k| k.name == BURST_ON_THREAD && k.value == "true")
}

/// The lab's knob in `knobs` that acts at an idle phase, if set: a run without one must
/// refuse it.
pub fn needs_idle(knobs: &[Knob]) -> Option<&'static str> {
    releases_at_idle(knobs).then_some(RELEASE_AT_IDLE)
}

/// The first of the lab's own knobs set in `knobs`: acts of its built-in workload, which
/// a user's command cannot be given.
pub fn lab_knob_set(knobs: &[Knob]) -> Option<&str> {
    knobs
        .iter()
        .find(|k| is_lab_knob(&k.name) && k.value == "true")
        .map(|k| k.name.as_str())
}

/// Whether `knobs` ask the worker to have the allocator give its free memory back at the
/// idle's start (`release_at_idle=true`).
pub fn releases_at_idle(knobs: &[Knob]) -> bool {
    knobs
        .iter()
        .any(|k| k.name == RELEASE_AT_IDLE && k.value == "true")
}

/// Whether `name` is the lab's own knob (applied by the worker, not the allocator's
/// environment).
pub fn is_lab_knob(name: &str) -> bool {
    name == RELEASE_AT_IDLE || name == BURST_ON_THREAD
}

const SYSTEM: &[KnobDef] = &[
    KnobDef { name: "top_pad", kind: Kind::Size, doc: "extra bytes glibc asks for whenever it grows the heap and keeps when it trims" },
    KnobDef { name: "trim_threshold", kind: Kind::Size, doc: "free bytes at the heap top before glibc trims it with brk; setting it disables the dynamic mmap threshold" },
    KnobDef { name: "mmap_threshold", kind: Kind::Size, doc: "requests at least this large are served by mmap; setting it disables the dynamic threshold" },
    KnobDef { name: "mmap_max", kind: Kind::Int { min: 0 }, doc: "most mmap'd chunks at once (0: never mmap)" },
    KnobDef { name: "arena_max", kind: Kind::Int { min: 1 }, doc: "most arenas (threads share them beyond this)" },
    KnobDef { name: "tcache_count", kind: Kind::Int { min: 0 }, doc: "chunks per thread-cache bin" },
    RELEASE,
    EXIT,
];

const JEMALLOC: &[KnobDef] = &[
    KnobDef { name: "dirty_decay_ms", kind: Kind::Int { min: -1 }, doc: "ms before dirty pages are purged (-1: never, 0: at once)" },
    KnobDef { name: "muzzy_decay_ms", kind: Kind::Int { min: -1 }, doc: "ms before muzzy pages are purged (-1: never, 0: at once)" },
    KnobDef { name: "oversize_threshold", kind: Kind::Size, doc: "requests at least this large go to a dedicated (huge) arena, and a freed extent that reaches it with its free neighbours is purged at once instead of decaying (default 8M)" },
    KnobDef { name: "narenas", kind: Kind::Int { min: 1 }, doc: "number of arenas" },
    KnobDef { name: "background_thread", kind: Kind::Bool, doc: "purge from background threads instead of inline" },
    KnobDef { name: "retain", kind: Kind::Bool, doc: "keep virtual memory mapped instead of unmapping it" },
    KnobDef { name: "thp", kind: Kind::Word(&["default", "always", "never"]), doc: "transparent huge pages for jemalloc's memory" },
    RELEASE,
    EXIT,
];

const MIMALLOC: &[KnobDef] = &[
    KnobDef {
        name: "purge_delay",
        kind: Kind::Int { min: -1 },
        doc: "ms before freed memory is purged (-1: never, 0: at once)",
    },
    KnobDef {
        name: "allow_thp",
        kind: Kind::Bool,
        doc: "allow transparent huge pages (mimalloc asks for them by default)",
    },
    KnobDef {
        name: "purge_decommits",
        kind: Kind::Bool,
        doc: "purge by decommitting (else by resetting)",
    },
    KnobDef {
        name: "arena_eager_commit",
        kind: Kind::Int { min: 0 },
        doc: "commit arenas eagerly (0 no, 1 yes, 2 on overcommit systems)",
    },
    KnobDef {
        name: "allow_large_os_pages",
        kind: Kind::Bool,
        doc: "use large OS pages",
    },
    RELEASE,
    EXIT,
];

/// TCMalloc's release rate acts only through its background thread, which this build
/// does not run: the lab's own call is its one knob.
const TCMALLOC: &[KnobDef] = &[RELEASE, EXIT];

/// snmalloc and rpmalloc have no settings read at run time and no release call: only
/// the lab's thread knob.
const LAB_ONLY: &[KnobDef] = &[EXIT];

/// The knobs `allocator` has.
pub fn defs(allocator: Allocator) -> &'static [KnobDef] {
    match allocator {
        Allocator::System => SYSTEM,
        Allocator::Jemalloc => JEMALLOC,
        Allocator::Mimalloc => MIMALLOC,
        Allocator::Tcmalloc => TCMALLOC,
        Allocator::Snmalloc | Allocator::Rpmalloc => LAB_ONLY,
    }
}

/// Why an allocator has no knobs, for `alloclab list` and messages.
pub fn no_knobs_reason(allocator: Allocator) -> Option<&'static str> {
    match allocator {
        Allocator::Tcmalloc => Some("TCMalloc's release rate acts through its background thread (ProcessBackgroundActions), which the bundled build does not run (it returns at once)"),
        Allocator::Snmalloc => Some("snmalloc is configured when it is compiled; it reads no settings at run time"),
        Allocator::Rpmalloc => Some("rpmalloc's settings (rpmalloc_initialize_config) must be given before its first allocation, which the Rust runtime makes before main"),
        _ => None,
    }
}

/// What an unknown knob's error says after its name: the valid knobs, or why the
/// allocator has none of its own (and the lab's own it takes).
fn unknown_text(allocator: Allocator, valid: &str) -> String {
    let own = defs(allocator).iter().all(|d| is_lab_knob(d.name));
    match (own, no_knobs_reason(allocator)) {
        (true, Some(why)) if valid.is_empty() => why.to_string(),
        (true, Some(why)) => format!("{why}; the lab's own knobs are {valid}"),
        _ if valid.is_empty() => "it has no knobs".to_string(),
        _ => format!("valid knobs are {valid}"),
    }
}

/// A knob set to a value; the value is canonical (sizes in bytes, booleans true/false).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Knob {
    /// The knob's name, as in its [`KnobDef`].
    pub name: String,
    /// The value, canonical: sizes in bytes, booleans `true`/`false`.
    pub value: String,
}

/// An allocator with knobs, as users write it: `jemalloc:dirty_decay_ms=-1`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AllocatorSpec {
    /// The allocator (`system` for an installed library).
    pub allocator: Allocator,
    /// Its knobs, sorted by name, each at most once.
    #[serde(default)]
    pub knobs: Vec<Knob>,
    /// An installed library run by the system worker with the library preloaded
    /// (`allocator` is then `system` and there are no knobs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub library: Option<Library>,
}

/// Why an allocator spec or a list of them is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KnobError {
    /// Not a built-in allocator's name nor a library spec.
    #[error("{0}, or an installed library as name=/path/to/lib.so (e.g. gperftools=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4; `alloclab list` shows those found here)")]
    Allocator(#[from] UnknownChoice),
    /// The same allocator spec twice in one list.
    #[error("allocator '{0}' is given twice")]
    Duplicate(String),
    /// Two specs whose file names in a results folder would be the same, or one whose
    /// name is too long for a file name.
    #[error("{0}")]
    FileName(String),
    /// A list without a single spec.
    #[error("no allocator in '{0}': expected e.g. system,jemalloc,mimalloc")]
    Empty(String),
    /// A `name=/path/lib.so` spec that is not well formed.
    #[error("{0}")]
    Library(String),
    /// A knob name the allocator does not have.
    #[error("unknown knob '{name}' for {allocator}: {}", unknown_text(*.allocator, .valid))]
    UnknownKnob {
        /// The allocator the knob was given for.
        allocator: Allocator,
        /// The knob as given.
        name: String,
        /// Its valid knobs, comma-separated; empty when it has none.
        valid: String,
    },
    /// A knob without `=value`.
    #[error("knob '{item}' for {allocator}: expected name=value, e.g. {example}")]
    NoValue {
        /// The allocator the knob was given for.
        allocator: Allocator,
        /// The item as given.
        item: String,
        /// A `name=…` example with one of its knobs.
        example: String,
    },
    /// A value the knob's type does not accept.
    #[error("{allocator}:{name}={value}: {why}")]
    BadValue {
        /// The allocator the knob was given for.
        allocator: Allocator,
        /// The knob's name.
        name: String,
        /// The value as given.
        value: String,
        /// What the knob expects instead.
        why: String,
    },
    /// The same knob twice in one spec.
    #[error("{allocator}:{name} is given twice")]
    Twice {
        /// The allocator the knob was given for.
        allocator: Allocator,
        /// The knob's name.
        name: String,
    },
}

/// Bytes from 65536, 64K, 64M, 1G (binary multiples; a trailing B or iB is allowed).
pub fn parse_bytes(s: &str) -> Option<u64> {
    let t = s.trim().trim_end_matches(['B', 'b']).trim_end_matches('i');
    let (num, mult) = match t.chars().last()? {
        'k' | 'K' => (&t[..t.len() - 1], 1u64 << 10),
        'm' | 'M' => (&t[..t.len() - 1], 1 << 20),
        'g' | 'G' => (&t[..t.len() - 1], 1 << 30),
        't' | 'T' => (&t[..t.len() - 1], 1 << 40),
        _ => (t, 1),
    };
    num.trim().parse::<u64>().ok()?.checked_mul(mult)
}

/// "64M" for 67108864; plain bytes when not a whole multiple.
pub fn fmt_bytes(b: u64) -> String {
    for (suffix, shift) in [("T", 40), ("G", 30), ("M", 20), ("K", 10)] {
        if b != 0 && b.is_multiple_of(1u64 << shift) {
            return format!("{}{suffix}", b >> shift);
        }
    }
    b.to_string()
}

fn canonical(def: &KnobDef, value: &str) -> Result<String, String> {
    let v = value.trim();
    match def.kind {
        Kind::Size => parse_bytes(v)
            .map(|b| b.to_string())
            .ok_or_else(|| "expected a size in bytes such as 65536, 64K, 64M or 1G".to_string()),
        Kind::Int { min } => match v.parse::<i64>() {
            Ok(n) if n >= min => Ok(n.to_string()),
            _ => Err(format!("expected a whole number of at least {min}")),
        },
        Kind::Bool => match v.to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok("true".into()),
            "0" | "false" | "no" | "off" => Ok("false".into()),
            _ => Err("expected true or false (or 1 or 0)".into()),
        },
        Kind::Word(words) => words
            .iter()
            .find(|w| w.eq_ignore_ascii_case(v))
            .map(|w| w.to_string())
            .ok_or_else(|| format!("expected one of {}", words.join(", "))),
    }
}

impl AllocatorSpec {
    /// The allocator alone: no knobs, no library.
    pub fn plain(allocator: Allocator) -> Self {
        AllocatorSpec {
            allocator,
            knobs: Vec::new(),
            library: None,
        }
    }

    /// An installed library, run by the system worker with it preloaded.
    pub fn library(library: Library) -> Self {
        AllocatorSpec {
            allocator: Allocator::System,
            knobs: Vec::new(),
            library: Some(library),
        }
    }

    /// The spec as users write it, which parses back to this spec: the label, except
    /// that a library is `name=/path/lib.so` rather than its name alone.
    pub fn spec_text(&self) -> String {
        match &self.library {
            Some(l) => l.to_string(),
            None => self.to_string(),
        }
    }

    /// How the knob's value is written in labels ("64M" rather than 67108864).
    fn display_value(&self, k: &Knob) -> String {
        let size = defs(self.allocator)
            .iter()
            .any(|d| d.name == k.name && d.kind == Kind::Size);
        match k.value.parse::<u64>() {
            Ok(b) if size => fmt_bytes(b),
            _ => k.value.clone(),
        }
    }

    /// Whether the worker asks the allocator to give its free memory back at the idle's
    /// start (the lab's own `release_at_idle=true`).
    pub fn releases_at_idle(&self) -> bool {
        releases_at_idle(&self.knobs)
    }

    /// The lab's own knob that asks for an idle phase, if one is set.
    pub fn needs_idle(&self) -> Option<&'static str> {
        needs_idle(&self.knobs)
    }

    /// The first of the lab's own knobs set, if any.
    pub fn lab_knob_set(&self) -> Option<&str> {
        lab_knob_set(&self.knobs)
    }

    /// The environment that applies the knobs (and only them) to a process.
    pub fn env(&self) -> Vec<(String, String)> {
        // The lab's own knob is a call the worker makes, not the allocator's setting.
        let knobs: Vec<&Knob> = self
            .knobs
            .iter()
            .filter(|k| !is_lab_knob(&k.name))
            .collect();
        if knobs.is_empty() {
            return Vec::new();
        }
        match self.allocator {
            Allocator::System => {
                let items: Vec<String> = knobs
                    .iter()
                    .map(|k| format!("glibc.malloc.{}={}", k.name, k.value))
                    .collect();
                vec![("GLIBC_TUNABLES".into(), items.join(":"))]
            }
            Allocator::Jemalloc => {
                let items: Vec<String> = knobs
                    .iter()
                    .map(|k| format!("{}:{}", k.name, k.value))
                    .collect();
                vec![(JEMALLOC_CONF_ENV.into(), items.join(","))]
            }
            Allocator::Tcmalloc | Allocator::Snmalloc | Allocator::Rpmalloc => Vec::new(),
            Allocator::Mimalloc => knobs
                .iter()
                .map(|k| {
                    let v = match k.value.as_str() {
                        "true" => "1".to_string(),
                        "false" => "0".to_string(),
                        other => other.to_string(),
                    };
                    (format!("MIMALLOC_{}", k.name.to_ascii_uppercase()), v)
                })
                .collect(),
        }
    }
}

/// The variable tikv-jemallocator's (prefixed) jemalloc reads its configuration from.
pub const JEMALLOC_CONF_ENV: &str = "_RJEM_MALLOC_CONF";

/// Whether an environment variable configures one of the allocators (and so must not
/// leak from the user's environment into a run).
pub fn is_allocator_env(name: &str) -> bool {
    name == "GLIBC_TUNABLES"
        || name == JEMALLOC_CONF_ENV
        || name == "MALLOC_CONF"
        // glibc's older variables (MALLOC_ARENA_MAX, MALLOC_TOP_PAD_, MALLOC_CHECK_, …).
        || name.starts_with("MALLOC_")
        || name.starts_with("MIMALLOC_")
}

impl fmt::Display for AllocatorSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(l) = &self.library {
            return f.pad(&l.name);
        }
        let mut s = self.allocator.name().to_string();
        if !self.knobs.is_empty() {
            let items: Vec<String> = self
                .knobs
                .iter()
                .map(|k| format!("{}={}", k.name, self.display_value(k)))
                .collect();
            s.push(':');
            s.push_str(&items.join(","));
        }
        f.pad(&s)
    }
}

impl std::str::FromStr for AllocatorSpec {
    type Err = KnobError;

    fn from_str(text: &str) -> Result<Self, KnobError> {
        if let Some(l) = Library::parse(text, |n| parse_choice::<Allocator>(n).is_ok())
            .map_err(KnobError::Library)?
        {
            return Ok(AllocatorSpec::library(l));
        }
        let (name, rest) = match text.split_once(':') {
            Some((n, r)) => (n, Some(r)),
            None => (text, None),
        };
        let allocator: Allocator = parse_choice(name)?;
        let valid = || {
            defs(allocator)
                .iter()
                .map(|d| d.name)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut knobs: Vec<Knob> = Vec::new();
        for item in rest
            .unwrap_or("")
            .split(',')
            .map(str::trim)
            .filter(|i| !i.is_empty())
        {
            let Some((k, v)) = item.split_once('=') else {
                // An allocator with no knobs of its own says why, not how to give one.
                let known = defs(allocator)
                    .iter()
                    .any(|d| d.name.eq_ignore_ascii_case(item));
                if !known && defs(allocator).iter().all(|d| is_lab_knob(d.name)) {
                    return Err(KnobError::UnknownKnob {
                        allocator,
                        name: item.into(),
                        valid: valid(),
                    });
                }
                return Err(KnobError::NoValue {
                    allocator,
                    item: item.into(),
                    example: format!("{}={}", defs(allocator)[0].name, "…"),
                });
            };
            let k = k.trim();
            let def = defs(allocator)
                .iter()
                .find(|d| d.name.eq_ignore_ascii_case(k))
                .ok_or_else(|| KnobError::UnknownKnob {
                    allocator,
                    name: k.into(),
                    valid: valid(),
                })?;
            let value = canonical(def, v).map_err(|why| KnobError::BadValue {
                allocator,
                name: def.name.into(),
                value: v.trim().into(),
                why,
            })?;
            if knobs.iter().any(|x| x.name == def.name) {
                return Err(KnobError::Twice {
                    allocator,
                    name: def.name.into(),
                });
            }
            knobs.push(Knob {
                name: def.name.into(),
                value,
            });
        }
        knobs.sort();
        Ok(AllocatorSpec {
            allocator,
            knobs,
            library: None,
        })
    }
}

/// The items of a spec list. Specs are separated by ';' or spaces, and by commas too: a
/// comma starts a new spec when what follows is an allocator name, `allocator:knobs` or
/// `name=/path/lib.so`, and continues the knob list of the spec before it when what
/// follows is `knob=value` — so "system,jemalloc", "system;jemalloc",
/// "system:top_pad=64M;jemalloc" and "system:top_pad=64M,jemalloc:dirty_decay_ms=-1"
/// all read as two specs.
pub fn split_spec_list(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for part in text.split([';', ' ']) {
        for token in part.split(',').map(str::trim) {
            if token.is_empty() {
                continue;
            }
            let knob_of_previous = match token.split_once('=') {
                Some((name, value)) => {
                    !name.contains(':') && !value.contains('/') && !value.contains(".so")
                }
                None => false,
            };
            match out.last_mut() {
                // Only after a spec with knobs: "system,top_pad=64M" stays an error.
                Some(last) if knob_of_previous && last.contains(':') => {
                    last.push(',');
                    last.push_str(token);
                }
                _ => out.push(token.to_string()),
            }
        }
    }
    out
}

/// Parses a list of allocator specs — the one parser of every `--allocators`,
/// `--allocator` and experiment file: "system,jemalloc", "system:top_pad=64M;jemalloc:
/// dirty_decay_ms=-1", "system,gperftools=/usr/lib/…/libtcmalloc_minimal.so.4" or a bare
/// "libtcmalloc_minimal.so.4". An empty list and a spec given twice are refused.
pub fn parse_spec_list(text: &str) -> Result<Vec<AllocatorSpec>, KnobError> {
    let mut out: Vec<AllocatorSpec> = Vec::new();
    for i in split_spec_list(text) {
        let s: AllocatorSpec = i.parse()?;
        if out.iter().any(|x| x.to_string() == s.to_string()) {
            return Err(KnobError::Duplicate(s.to_string()));
        }
        out.push(s);
    }
    if out.is_empty() {
        return Err(KnobError::Empty(text.into()));
    }
    let labels: Vec<String> = out.iter().map(|s| s.to_string()).collect();
    crate::model::spec::distinct_stems(labels.iter().map(String::as_str))
        .map_err(KnobError::FileName)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_labs_release_knob_is_a_call_not_the_allocators_setting() {
        let s: AllocatorSpec = "system:release_at_idle=1,top_pad=64M".parse().unwrap();
        assert!(s.releases_at_idle());
        // Only glibc's own tunable goes to its environment.
        assert_eq!(
            s.env(),
            vec![(
                "GLIBC_TUNABLES".to_string(),
                "glibc.malloc.top_pad=67108864".to_string()
            )]
        );
        let alone: AllocatorSpec = "tcmalloc:release_at_idle=true".parse().unwrap();
        assert!(alone.releases_at_idle() && alone.env().is_empty());
        let off: AllocatorSpec = "jemalloc:release_at_idle=false".parse().unwrap();
        assert!(!off.releases_at_idle() && off.env().is_empty());
        // Not on an allocator without a release call.
        let e = "snmalloc:release_at_idle=true"
            .parse::<AllocatorSpec>()
            .unwrap_err();
        assert!(e.to_string().contains("snmalloc"), "{e}");
    }

    #[test]
    fn specs_parse_canonicalise_and_print_back() {
        let s: AllocatorSpec = "jemalloc:oversize_threshold=16M, dirty_decay_ms=-1"
            .parse()
            .unwrap();
        assert_eq!(
            s.to_string(),
            "jemalloc:dirty_decay_ms=-1,oversize_threshold=16M"
        );
        assert_eq!(
            s.env(),
            vec![(
                JEMALLOC_CONF_ENV.to_string(),
                "dirty_decay_ms:-1,oversize_threshold:16777216".to_string()
            )]
        );
        let g: AllocatorSpec = "system:trim_threshold=1G,mmap_threshold=1G"
            .parse()
            .unwrap();
        assert_eq!(
            g.env(),
            vec![(
                "GLIBC_TUNABLES".to_string(),
                "glibc.malloc.mmap_threshold=1073741824:glibc.malloc.trim_threshold=1073741824"
                    .to_string()
            )]
        );
        let m: AllocatorSpec = "mimalloc:purge_delay=0,allow_thp=0".parse().unwrap();
        assert_eq!(m.to_string(), "mimalloc:allow_thp=false,purge_delay=0");
        assert!(m
            .env()
            .contains(&("MIMALLOC_ALLOW_THP".to_string(), "0".to_string())));
        assert_eq!(
            "system".parse::<AllocatorSpec>().unwrap(),
            AllocatorSpec::plain(Allocator::System)
        );
        assert!(AllocatorSpec::plain(Allocator::System).env().is_empty());
    }

    #[test]
    fn typos_and_bad_values_say_what_is_valid() {
        let e = "jemalloc:dirty_decay=5"
            .parse::<AllocatorSpec>()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown knob 'dirty_decay' for jemalloc")
                && e.contains("dirty_decay_ms, muzzy_decay_ms"),
            "{e}"
        );
        let e = "system:top_pad=lots"
            .parse::<AllocatorSpec>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("64M"), "{e}");
        let e = "jemalloc:dirty_decay_ms=-2"
            .parse::<AllocatorSpec>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least -1"), "{e}");
        let e = "jemalloc:thp=sometimes"
            .parse::<AllocatorSpec>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("default, always, never"), "{e}");
        let e = "mimalloc:purge_delay"
            .parse::<AllocatorSpec>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected name=value"), "{e}");
        let e = "hoard:x=1"
            .parse::<AllocatorSpec>()
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("system, jemalloc, mimalloc, tcmalloc, snmalloc, rpmalloc"),
            "{e}"
        );
        // An allocator without knobs says why, with or without a value given.
        let e = "snmalloc:foo"
            .parse::<AllocatorSpec>()
            .unwrap_err()
            .to_string();
        assert!(e.contains("reads no settings at run time"), "{e}");
        assert!("system:top_pad=1M,top_pad=2M"
            .parse::<AllocatorSpec>()
            .is_err());
    }

    #[test]
    fn lists_take_commas_without_knobs_and_semicolons_with() {
        assert_eq!(parse_spec_list("system,jemalloc").unwrap().len(), 2);
        // ';' separates plain names too, and a comma between two specs with knobs is
        // understood; a knob list may carry spaces.
        let names = |text: &str| -> Vec<String> {
            parse_spec_list(text)
                .unwrap()
                .iter()
                .map(|s| s.spec_text())
                .collect()
        };
        assert_eq!(names("system;jemalloc"), ["system", "jemalloc"]);
        assert_eq!(
            names("system:top_pad=64M,jemalloc:dirty_decay_ms=-1"),
            ["system:top_pad=64M", "jemalloc:dirty_decay_ms=-1"]
        );
        assert_eq!(
            names("system:top_pad=64M,mmap_threshold=1G,jemalloc"),
            ["system:mmap_threshold=1G,top_pad=64M", "jemalloc"]
        );
        assert_eq!(
            names("jemalloc:oversize_threshold=16M, dirty_decay_ms=-1; mimalloc"),
            [
                "jemalloc:dirty_decay_ms=-1,oversize_threshold=16M",
                "mimalloc"
            ]
        );
        assert_eq!(
            split_spec_list("system;tc=/usr/lib/libtcmalloc.so,jemalloc:narenas=1"),
            ["system", "tc=/usr/lib/libtcmalloc.so", "jemalloc:narenas=1"]
        );
        // Installed libraries: a path, a bare file name after a knob list, or alone.
        assert_eq!(
            names("system:top_pad=64M,gperftools=libtcmalloc_minimal.so.4,libjemalloc.so.2"),
            [
                "system:top_pad=64M",
                "gperftools=libtcmalloc_minimal.so.4",
                "libjemalloc=libjemalloc.so.2"
            ]
        );
        let l: AllocatorSpec = "gperftools=/usr/lib/libtcmalloc_minimal.so.4"
            .parse()
            .unwrap();
        assert_eq!(
            (l.allocator, l.to_string(), l.knobs.len()),
            (Allocator::System, "gperftools".to_string(), 0)
        );
        let l = parse_spec_list(
            "system:top_pad=64M;system;jemalloc:dirty_decay_ms=-1,muzzy_decay_ms=0",
        )
        .unwrap();
        assert_eq!(l.len(), 3);
        assert_eq!(l[2].knobs.len(), 2);
        assert_eq!(parse_bytes("64M"), Some(64 << 20));
        assert_eq!(parse_bytes("1GiB"), Some(1 << 30));
        assert_eq!(fmt_bytes(3 << 20), "3M");
        assert_eq!(fmt_bytes(1000), "1000");
        assert!(is_allocator_env("MIMALLOC_PURGE_DELAY") && !is_allocator_env("PATH"));
    }
}
