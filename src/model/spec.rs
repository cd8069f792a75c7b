//! What a run is: allocator, workload, variant, size, threads, seed — the names users type,
//! parsed strictly, with errors that list what is valid.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A closed set of named choices (allocators, workloads, variants).
pub trait Choice: Copy + Eq + 'static {
    /// What the choice is called in messages ("allocator", "variant", …).
    const KIND: &'static str;
    /// Every valid value, in display order.
    const ALL: &'static [Self];
    /// The name users type.
    fn name(self) -> &'static str;
    /// Other names people type for it (glibc's malloc is "system"), accepted as it.
    fn aliases(self) -> &'static [&'static str] {
        &[]
    }
}

/// A name that is not one of the valid choices.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {kind} '{given}'{suggestion}: valid {kind}s are {valid}")]
pub struct UnknownChoice {
    /// What kind of name was expected ("allocator", "variant", …).
    pub kind: &'static str,
    /// The name (or list of names) as given.
    pub given: String,
    /// The valid names, comma-separated.
    pub valid: String,
    /// " (did you mean 'jemalloc'?)" where a valid name is close to the given one.
    pub suggestion: String,
}

/// Parses one name of a [`Choice`] (or one of its aliases), in any case; an unknown
/// name is refused with the valid ones and, where one is close, the one meant.
pub fn parse_choice<T: Choice>(given: &str) -> Result<T, UnknownChoice> {
    let wanted = given.trim();
    let names = |c: T| std::iter::once(c.name()).chain(c.aliases().iter().copied());
    T::ALL
        .iter()
        .copied()
        .find(|c| names(*c).any(|n| n.eq_ignore_ascii_case(wanted)))
        .ok_or_else(|| UnknownChoice {
            kind: T::KIND,
            given: wanted.to_string(),
            valid: valid_names::<T>(),
            suggestion: closest::<T>(wanted)
                .map(|c| format!(" (did you mean '{}'?)", c.name()))
                .or_else(|| numpy_name(T::KIND, wanted))
                .unwrap_or_default(),
        })
}

/// The founding case's NumPy functions by the variants they are (func1 divides its one
/// temporary in place, func2 makes a second buffer), for a variant given by their name.
fn numpy_name(kind: &str, given: &str) -> Option<String> {
    let variant = match (kind, given.to_ascii_lowercase().as_str()) {
        ("variant", "func1") => "in-place",
        ("variant", "func2") => "out-of-place",
        _ => return None,
    };
    Some(format!(
        " (NumPy's {given} of the founding case is the lab's {variant}: --variants {variant})"
    ))
}

/// The choice whose name or alias is within a typo of `given` (edit distance at most 2,
/// and under half its length), the closest first.
fn closest<T: Choice>(given: &str) -> Option<T> {
    let given = given.to_ascii_lowercase();
    let given = given.as_str();
    T::ALL
        .iter()
        .copied()
        .flat_map(|c| {
            std::iter::once(c.name())
                .chain(c.aliases().iter().copied())
                .map(move |n| (edit_distance(given, n), c))
        })
        .filter(|(d, _)| *d <= 2 && 2 * *d < given.chars().count().max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Levenshtein distance between two short names.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (prev + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            prev = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Parses a comma-separated list of names; duplicates are dropped, order is kept.
pub fn parse_choice_list<T: Choice>(given: &str) -> Result<Vec<T>, UnknownChoice> {
    let mut out: Vec<T> = Vec::new();
    for part in given.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let c = parse_choice::<T>(part)?;
        if !out.contains(&c) {
            out.push(c);
        }
    }
    if out.is_empty() {
        return Err(UnknownChoice {
            kind: T::KIND,
            given: given.to_string(),
            valid: valid_names::<T>(),
            suggestion: String::new(),
        });
    }
    Ok(out)
}

/// "a, b, c" for messages.
pub fn valid_names<T: Choice>() -> String {
    T::ALL
        .iter()
        .map(|c| c.name())
        .collect::<Vec<_>>()
        .join(", ")
}

macro_rules! choice_enum {
    ($(#[$meta:meta])* $name:ident, $kind:literal, { $($(#[$vmeta:meta])* $variant:ident => $text:literal $(| $alias:literal)*),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name { $($(#[$vmeta])* #[serde(rename = $text)] $variant),+ }

        impl Choice for $name {
            const KIND: &'static str = $kind;
            const ALL: &'static [Self] = &[$($name::$variant),+];
            fn name(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
            fn aliases(self) -> &'static [&'static str] {
                match self { $($name::$variant => &[$($alias),*]),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(self.name())
            }
        }

        impl FromStr for $name {
            type Err = UnknownChoice;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                parse_choice(s)
            }
        }
    };
}

choice_enum!(
    /// The allocator a worker binary is linked with.
    Allocator, "allocator", {
        /// The C library's malloc (glibc's ptmalloc on Linux/glibc); "glibc" and "ptmalloc"
        /// name it too.
        System => "system" | "glibc" | "ptmalloc" | "ptmalloc2",
        /// jemalloc through `tikv-jemallocator`.
        Jemalloc => "jemalloc",
        /// mimalloc through the `mimalloc` crate.
        Mimalloc => "mimalloc",
        /// Google's TCMalloc through `tcmalloc-better` (built with the default cargo
        /// feature `tcmalloc`).
        Tcmalloc => "tcmalloc",
        /// Microsoft's snmalloc through `snmalloc-rs`.
        Snmalloc => "snmalloc",
        /// rpmalloc through the `rpmalloc` crate.
        Rpmalloc => "rpmalloc",
    }
);

impl Allocator {
    /// File name of the worker binary that runs under this allocator.
    pub fn worker_binary(self) -> &'static str {
        match self {
            Allocator::System => "alloclab-system",
            Allocator::Jemalloc => "alloclab-jemalloc",
            Allocator::Mimalloc => "alloclab-mimalloc",
            Allocator::Tcmalloc => "alloclab-tcmalloc",
            Allocator::Snmalloc => "alloclab-snmalloc",
            Allocator::Rpmalloc => "alloclab-rpmalloc",
        }
    }
}

choice_enum!(
    /// A temporary-array workload.
    Workload, "workload", {
        /// NumPy's `a.astype(np.float64) / 255.0`: u8 input converted to f64 and divided.
        Scale => "scale",
        /// `((a + b) * c - d) / e` on five f64 arrays, one operator at a time.
        Chain => "chain",
        /// A key-value service answering gets, sets and deletes at a fixed rate (its
        /// size: requests per second), latency from each request's intended start.
        Service => "service",
    }
);

impl Workload {
    /// The f64 buffers of the size one iteration holds at once, where the lab knows them
    /// (the scale workload's: the temporary, and out-of-place's second buffer); None for
    /// a chain, whose temporaries come and go between operators.
    pub fn live_buffers(self, variant: Variant) -> Option<u64> {
        match self {
            Workload::Scale => Some(match variant {
                Variant::InPlace | Variant::Reuse | Variant::Fused => 1,
                Variant::OutOfPlace => 2,
            }),
            Workload::Chain | Workload::Service => None,
        }
    }

    /// What the workload's size counts: elements of its input, or for the service the
    /// requests per second it is offered.
    pub fn size_unit(self) -> &'static str {
        match self {
            Workload::Scale | Workload::Chain => "elements",
            Workload::Service => "requests/s",
        }
    }

    /// `size` in the workload's words: "1,000,000 elements", or for the service
    /// "50,000 requests/s".
    pub fn size_words(self, size: u64) -> String {
        format!(
            "{} {}",
            crate::fmt::group_thousands(size as i64),
            self.size_unit()
        )
    }

    /// `size` as the heading of its plots and groups: "1M elements (7.6 MiB per f64
    /// buffer)", or "50k requests/s".
    pub fn size_heading(self, size: u64) -> String {
        match self {
            Workload::Service => format!("{} requests/s", crate::fmt::fmt_elems(size as f64)),
            _ => format!(
                "{} elements ({} per f64 buffer)",
                crate::fmt::fmt_elems(size as f64),
                crate::fmt::human_bytes(size.saturating_mul(8))
            ),
        }
    }

    /// Whether the size is a count of array elements (whose bytes the allocator's
    /// thresholds act on); false for the service, whose size is a rate.
    pub fn sized_by_elements(self) -> bool {
        self != Workload::Service
    }

    /// Why `variant` is not a variant of this workload, if it is not: the service's
    /// requests either allocate their buffers (`out-of-place`) or reuse them (`reuse`).
    pub fn refuses(self, variant: Variant) -> Option<String> {
        match (self, variant) {
            (Workload::Service, Variant::InPlace | Variant::Fused) => Some(format!(
                "the service workload has no {variant} variant: its requests either allocate their own buffers (out-of-place) or reuse buffers kept per thread (reuse)"
            )),
            _ => None,
        }
    }

    /// Bytes one thread of a run holds at its peak (inputs plus live buffers), for the
    /// memory check.
    pub fn peak_bytes(self, variant: Variant, size: u64) -> u64 {
        if self == Workload::Service {
            // A shard's items, about 30 MiB at the mean sizes, twice over; the size
            // (a rate) does not change it.
            return 64 << 20;
        }
        // Buffers of 8-byte elements alive at once, besides the inputs.
        let live = match variant {
            Variant::InPlace | Variant::Reuse | Variant::Fused => 1,
            Variant::OutOfPlace => 2,
        };
        let input_bytes_per_elem = match self {
            Workload::Scale => 1,
            Workload::Chain => 5 * 8,
            Workload::Service => 0,
        };
        size.saturating_mul(input_bytes_per_elem + 8 * live)
    }

    /// Bytes one iteration must read and write at the least — its inputs and its result —
    /// the same for every variant, so that throughput compares variants fairly.
    pub fn useful_bytes(self, size: u64) -> u64 {
        let per_elem = match self {
            Workload::Scale => 1 + 8,
            Workload::Chain => 5 * 8 + 8,
            Workload::Service => return 0,
        };
        size.saturating_mul(per_elem)
    }
}

choice_enum!(
    /// How a workload treats its temporaries.
    Variant, "variant", {
        /// One temporary, the second operation done in it (NumPy func1).
        InPlace => "in-place",
        /// A second buffer for the result of the second operation (NumPy func2).
        OutOfPlace => "out-of-place",
        /// A buffer allocated before the measured phase is reused (NumPy's `out=`).
        Reuse => "reuse",
        /// The whole expression in one pass into the result, no temporary (numexpr-style).
        Fused => "fused",
    }
);

choice_enum!(
    /// Transparent huge pages for a run.
    Thp, "THP mode", {
        /// Whatever the system's THP settings give the worker.
        System => "system",
        /// The worker disables THP for itself (prctl PR_SET_THP_DISABLE) before it starts.
        Never => "never",
        /// The workload asks for huge pages on every buffer of 4 MiB or more
        /// (madvise(MADV_HUGEPAGE) right after allocating it), as NumPy does for its arrays.
        Advise => "advise",
    }
);

// The enum comes from `choice_enum!`, which derives no Default.
#[allow(clippy::derivable_impls)]
impl Default for Thp {
    fn default() -> Self {
        Thp::System
    }
}

/// The one file name a spec's label becomes in a results folder (`timeline/<stem>.csv`,
/// `histograms/<stem>.us.csv`, `runs/<stem>.json`): letters, digits, `-`, `_`, `.` and
/// `=` stay, anything else (`:`, `,`, `+`, `/`, spaces, quotes) becomes `_`. Readable but
/// not injective by itself: every list of specs is checked with [`distinct_stems`], so
/// that two specs of one measurement never share a file.
pub fn file_stem(label: &str) -> String {
    let stem: String = label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.=".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    // Never a hidden file (the writer's temporary files start with a dot) nor empty.
    if stem.is_empty() {
        "_".into()
    } else if stem.starts_with('.') {
        format!("_{stem}")
    } else {
        stem
    }
}

/// The longest file name Linux's file systems take, in bytes (NAME_MAX).
pub const NAME_MAX: usize = 255;

/// What the lab adds to a label's stem in the longest file name it makes of one, in
/// bytes: 33 for the writer's temporary `.NAME.tmp.PID.N` (a PID of up to 10 digits, N
/// of up to 16 hex digits) and 70 around the stem in a run's cell files
/// (`scale-out-of-place-` before it, `-n<16 digits>-t256-thpadvise.p1000.failed.json`
/// after it). The other commands add less: exec's histograms 8 (`.us.hgrm`,
/// `.ns.hlog`), sweep's 26 (`-n<size>.us.hgrm`), trace's 27 (` thp=advise` and
/// `.syscalls.folded`; `.python.syscalls.folded`, 23).
const STEM_ROOM: usize = 33 + 70;

/// The longest stem ([`file_stem`]) a label may have, in bytes: every file named after
/// it then fits in [`NAME_MAX`].
pub const MAX_STEM_BYTES: usize = NAME_MAX - STEM_ROOM;

/// Why `label` cannot name the lab's files (its stem is longer than
/// [`MAX_STEM_BYTES`]), showing its start and its length; None when it can. Said before
/// anything runs: a write that failed for a name too long would lose the measurement.
pub fn too_long_for_a_file(label: &str) -> Option<String> {
    let bytes = file_stem(label).len();
    (bytes > MAX_STEM_BYTES).then(|| {
        let start: String = label.chars().take(40).collect();
        format!(
            "'{start}…' is too long to name the lab's files: {bytes} bytes as a file name, and at most {MAX_STEM_BYTES} leave room for what the lab adds to it within the {NAME_MAX} bytes a file name may have"
        )
    })
}

/// Refuses labels of one measurement that would share a file name (the first pair that
/// does, as "'a' and 'b' would both be written as 'stem'") or that are too long to name
/// a file ([`too_long_for_a_file`]).
pub fn distinct_stems<'a>(labels: impl IntoIterator<Item = &'a str>) -> Result<(), String> {
    let labels: Vec<&str> = labels.into_iter().collect();
    if let Some(why) = labels.iter().find_map(|l| too_long_for_a_file(l)) {
        return Err(format!(
            "{why}: give the library a shorter name (name=/path/to/lib.so), or the allocator fewer knobs"
        ));
    }
    distinct_stems_or(
        labels,
        "give one of them another name (name=/path/to/lib.so)",
    )
}

/// The stem of trace's differential flame graphs from `a` to `b`: `A-vs-B`.
pub fn pair_stem(a: &str, b: &str) -> String {
    format!("{}-vs-{}", file_stem(a), file_stem(b))
}

/// [`distinct_stems`] with what to do about a clash in the words of the option that
/// names the labels (`fix`).
pub fn distinct_stems_or<'a>(
    labels: impl IntoIterator<Item = &'a str>,
    fix: &str,
) -> Result<(), String> {
    let mut seen: std::collections::HashMap<String, &str> = std::collections::HashMap::new();
    for l in labels {
        if let Some(other) = seen.insert(file_stem(l), l) {
            if other != l {
                return Err(format!(
                    "'{other}' and '{l}' would both be written as '{}' in the results folder; {fix}",
                    file_stem(l)
                ));
            }
        }
    }
    Ok(())
}

/// Largest accepted size, in elements: far above any machine's memory, but keeps byte
/// arithmetic (`size * 8 * buffers`) well inside `u64`.
pub const MAX_SIZE_ELEMS: u64 = 1 << 50;

/// A size in elements as users type it: `1000000`, `1_000_000`, `1e6`, `2^20`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SizeError {
    /// Not a size in any accepted form (the text as given).
    #[error("invalid size '{0}': expected a whole number of elements of at least 1, e.g. 1000000, 1_000_000, 1,000,000, 1e6, 1.5e6, 1M, 1.5M or 2^20")]
    NotANumber(String),
    /// A size of 0 (the text as given).
    #[error("invalid size '{0}': the size is a number of elements and must be at least 1")]
    Zero(String),
    /// A size above [`MAX_SIZE_ELEMS`].
    #[error("invalid size '{given}': at most {max} elements are accepted")]
    TooLarge {
        /// The text as given.
        given: String,
        /// The largest size accepted, [`MAX_SIZE_ELEMS`].
        max: u64,
    },
}

/// `number` (digits, with at most one decimal point: "1.5") times `factor`, where that
/// is a whole number ("1.5" × 1,000,000); None for anything else ("1.5" × 1, "1.2.3").
fn whole_times(number: &str, factor: u128) -> Option<u128> {
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty() || !digits(int) || !digits(frac) || frac.len() > 30 {
        return None;
    }
    let scale = 10u128.pow(frac.len() as u32);
    let mantissa: u128 = format!("{int}{frac}").parse().ok()?;
    let product = mantissa.checked_mul(factor)?;
    (product % scale == 0).then_some(product / scale)
}

/// Parses a size in elements: `1000000`, `1_000_000`, `1,000,000` (commas between
/// groups of three, as the lab prints counts), `1e6`, `2^20`, and `1k`/`1M`/`1G`
/// (thousand, million, billion elements: decimal, as element counts are said) or
/// `1Ki`/`1Mi`/`1Gi` (powers of 1,024).
pub fn parse_size(given: &str) -> Result<u64, SizeError> {
    let bad = || SizeError::NotANumber(given.to_string());
    let mut text = given.trim().replace('_', "");
    if text.contains(',') {
        // Only as thousands separators: 1,000,000, never 1,5 or 10,00.
        let groups: Vec<&str> = text.split(',').collect();
        let ok = !groups[0].is_empty()
            && groups[0].len() <= 3
            && groups[1..].iter().all(|g| g.len() == 3)
            && groups.iter().all(|g| g.bytes().all(|b| b.is_ascii_digit()));
        if !ok {
            return Err(bad());
        }
        text = groups.concat();
    }
    let multipliers: [(&str, u128); 6] = [
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("k", 1_000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
    ];
    for (suffix, factor) in multipliers {
        let number = text
            .strip_suffix(suffix)
            .or_else(|| (suffix == "k").then(|| text.strip_suffix('K')).flatten());
        if let Some(n) = number.filter(|n| !n.is_empty()) {
            let v = whole_times(n, factor).ok_or_else(bad)?;
            return checked_size(given, v);
        }
    }
    let value: u128 = if let Some((m, e)) = text.split_once(['e', 'E']) {
        let e: u32 = e.parse().map_err(|_| bad())?;
        if e > 30 {
            return Err(SizeError::TooLarge {
                given: given.to_string(),
                max: MAX_SIZE_ELEMS,
            });
        }
        whole_times(m, 10u128.pow(e)).ok_or_else(bad)?
    } else if let Some((b, e)) = text.split_once('^') {
        let b: u128 = b.parse().map_err(|_| bad())?;
        let e: u32 = e.parse().map_err(|_| bad())?;
        b.checked_pow(e).ok_or_else(|| SizeError::TooLarge {
            given: given.to_string(),
            max: MAX_SIZE_ELEMS,
        })?
    } else {
        text.parse().map_err(|_| bad())?
    };
    checked_size(given, value)
}

/// A parsed size, refused where it is 0 or beyond [`MAX_SIZE_ELEMS`].
fn checked_size(given: &str, value: u128) -> Result<u64, SizeError> {
    if value == 0 {
        return Err(SizeError::Zero(given.to_string()));
    }
    if value > u128::from(MAX_SIZE_ELEMS) {
        return Err(SizeError::TooLarge {
            given: given.to_string(),
            max: MAX_SIZE_ELEMS,
        });
    }
    Ok(value as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numpys_function_names_point_to_the_variants_they_are() {
        let e = parse_choice::<Variant>("func2").unwrap_err().to_string();
        assert!(
            e.contains("(NumPy's func2 of the founding case is the lab's out-of-place: --variants out-of-place)"),
            "{e}"
        );
        let e = parse_choice::<Variant>("func1").unwrap_err().to_string();
        assert!(e.contains("is the lab's in-place"), "{e}");
        assert!(parse_choice::<Allocator>("func2")
            .unwrap_err()
            .to_string()
            .find("NumPy")
            .is_none());
    }

    #[test]
    fn names_round_trip_and_unknown_lists_valid() {
        for a in Allocator::ALL {
            assert_eq!(a.name().parse::<Allocator>(), Ok(*a));
        }
        let err = "hoard".parse::<Allocator>().unwrap_err().to_string();
        assert!(err.contains("unknown allocator 'hoard'"), "{err}");
        assert!(!err.contains("did you mean"), "{err}");
        // The names every header prints for glibc's malloc, and a typo's meaning.
        for glibc in ["glibc", "GLIBC", "ptmalloc", "ptmalloc2"] {
            assert_eq!(glibc.parse::<Allocator>(), Ok(Allocator::System), "{glibc}");
        }
        let err = "jemaloc".parse::<Allocator>().unwrap_err().to_string();
        assert!(err.contains("(did you mean 'jemalloc'?)"), "{err}");
        let err = "in-plce".parse::<Variant>().unwrap_err().to_string();
        assert!(err.contains("(did you mean 'in-place'?)"), "{err}");
        let err = "glibcc".parse::<Allocator>().unwrap_err().to_string();
        assert!(err.contains("(did you mean 'system'?)"), "{err}");
        assert!(
            err.contains("system, jemalloc, mimalloc, tcmalloc, snmalloc, rpmalloc"),
            "{err}"
        );
        let err = "inplace".parse::<Variant>().unwrap_err().to_string();
        assert!(
            err.contains("in-place, out-of-place, reuse, fused"),
            "{err}"
        );
    }

    #[test]
    fn lists_dedupe_and_reject_empty() {
        let v: Vec<Variant> = parse_choice_list("reuse, in-place,reuse").unwrap();
        assert_eq!(v, vec![Variant::Reuse, Variant::InPlace]);
        assert!(parse_choice_list::<Variant>(" , ").is_err());
        // glibc is system's other name: one allocator, not two.
        assert_eq!(
            parse_choice_list::<Allocator>("system,glibc"),
            Ok(vec![Allocator::System])
        );
        assert!(parse_choice_list::<Allocator>("system,hoard").is_err());
    }

    #[test]
    fn sizes_parse_in_every_accepted_form() {
        assert_eq!(parse_size("1000000"), Ok(1_000_000));
        assert_eq!(parse_size("1_000_000"), Ok(1_000_000));
        assert_eq!(parse_size("1e6"), Ok(1_000_000));
        assert_eq!(parse_size("2^20"), Ok(1 << 20));
        // As the lab prints counts, and as people say them.
        assert_eq!(parse_size("1,000,000"), Ok(1_000_000));
        assert_eq!(parse_size("16,384"), Ok(16_384));
        assert_eq!(parse_size("1M"), Ok(1_000_000));
        assert_eq!(parse_size("64k"), Ok(64_000));
        assert_eq!(parse_size("64K"), Ok(64_000));
        assert_eq!(parse_size("1Mi"), Ok(1 << 20));
        assert_eq!(parse_size("2G"), Ok(2_000_000_000));
        // A decimal mantissa where the size comes out whole.
        assert_eq!(parse_size("1.5M"), Ok(1_500_000));
        assert_eq!(parse_size("1.6e5"), Ok(160_000));
        assert_eq!(parse_size("2.5k"), Ok(2_500));
        for bad in [
            "1,5",
            "10,00",
            ",000",
            "1,000,00",
            "M",
            "1.0000001M",
            "1.5e0",
            ".5M",
            "1.2.3e4",
            "1m",
            "1Mb",
        ] {
            assert!(
                matches!(parse_size(bad), Err(SizeError::NotANumber(_))),
                "{bad}"
            );
        }
        assert!(matches!(parse_size("0"), Err(SizeError::Zero(_))));
        assert!(matches!(parse_size("abc"), Err(SizeError::NotANumber(_))));
        assert!(matches!(parse_size("-5"), Err(SizeError::NotANumber(_))));
        assert!(matches!(parse_size("1.5"), Err(SizeError::NotANumber(_))));
        assert!(matches!(
            parse_size("1e40"),
            Err(SizeError::TooLarge { .. })
        ));
        assert!(matches!(
            parse_size("2^64"),
            Err(SizeError::TooLarge { .. })
        ));
    }

    #[test]
    fn file_stems_are_plain_names_and_lists_that_would_share_one_are_refused() {
        assert_eq!(
            file_stem("jemalloc:dirty_decay_ms=-1"),
            "jemalloc_dirty_decay_ms=-1"
        );
        assert_eq!(file_stem("../x"), "_.._x");
        assert_eq!(file_stem(""), "_");
        assert_eq!(file_stem("lib\"x.so"), "lib_x.so");
        assert!(distinct_stems(["system", "jemalloc:narenas=1"]).is_ok());
        let e = distinct_stems(["lib+a.so", "system", "lib_a.so"]).unwrap_err();
        assert!(
            e.contains("'lib+a.so' and 'lib_a.so'") && e.contains("'lib_a.so'"),
            "{e}"
        );
    }

    /// A label is refused when a file named after it would pass 255 bytes (issue 71:
    /// exec and trace ran a whole session, then lost it to "File name too long").
    #[test]
    fn labels_too_long_for_a_file_name_are_refused() {
        // The longest file a label names fits, with the writer's temporary.
        let stem = "x".repeat(MAX_STEM_BYTES);
        let longest = format!(
            ".scale-out-of-place-{stem}-n1125899906842624-t256-thpadvise.p1000.failed.json.tmp.2147483647.ffffffffffffffff"
        );
        assert_eq!(longest.len(), NAME_MAX);
        assert!(distinct_stems(["system", stem.as_str()]).is_ok());
        let long = format!("{stem}y");
        let e = distinct_stems(["system", long.as_str()]).unwrap_err();
        assert!(
            e.contains(&format!("{} bytes as a file name", MAX_STEM_BYTES + 1))
                && e.contains(&format!("at most {MAX_STEM_BYTES}"))
                && e.contains("shorter name"),
            "{e}"
        );
        // Counted as the file name has it: a character outside ASCII is one '_'.
        assert!(too_long_for_a_file(&"é".repeat(MAX_STEM_BYTES)).is_none());
    }
}
