//! Numbers as people read them: durations, per-iteration counts, byte sizes, elapsed
//! time. The one place that formats numbers for tables, reports and progress.

/// A line on stderr (as `eprintln!` takes it) that a closed stderr does not turn into a
/// panic: `alloclab compare … 2>&1 | head -3` drops what nobody reads, as `ls | head`
/// does, and the run goes on to its end and its exit status.
macro_rules! say {
    ($($arg:tt)*) => {{
        use ::std::io::Write as _;
        let _ = ::std::writeln!(::std::io::stderr(), $($arg)*);
    }};
}
pub(crate) use say;

/// "1.92 ms" — three significant figures, unit chosen by magnitude.
pub fn fmt_ns(ns: f64) -> String {
    if ns == 0.0 {
        return "0".into();
    }
    if ns < 0.0 {
        // A difference of two noisy times can be negative.
        return format!("−{}", fmt_ns(-ns));
    }
    let (v, unit) = if ns >= 1e9 {
        (ns / 1e9, "s")
    } else if ns >= 1e6 {
        (ns / 1e6, "ms")
    } else if ns >= 1e3 {
        (ns / 1e3, "µs")
    } else {
        (ns, "ns")
    };
    let digits = if v >= 100.0 {
        0
    } else if v >= 10.0 {
        1
    } else {
        2
    };
    format!("{v:.digits$} {unit}")
}

/// A per-iteration count: "0", "0.02", "3.00", "41.5", "3,906".
pub fn fmt_count(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() < 0.01 {
        // Two significant digits: 0.0012, not a misleading 0.00.
        let decimals = (1 - v.abs().log10().floor() as i32).max(0) as usize;
        format!("{v:.decimals$}")
    } else if v.abs() < 10.0 {
        format!("{v:.2}")
    } else if v.abs() < 100.0 {
        format!("{v:.1}")
    } else {
        group_thousands(v.round() as i64)
    }
}

/// "1,234,567".
pub fn group_thousands(n: i64) -> String {
    let digits = n.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    if n < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// "8.0 MiB" — binary units, one decimal.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{b} B")
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// "1h02m", "3m05s", "42s".
pub fn fmt_duration(secs: f64) -> String {
    let s = secs.round() as u64;
    if s >= 3600 {
        format!("{}h{:02}m", s / 3600, s / 60 % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

/// An element count on a plot axis: "512", "64k", "1.5M".
pub fn fmt_elems(v: f64) -> String {
    let (d, unit) = if v >= 1e9 {
        (v / 1e9, "G")
    } else if v >= 1e6 {
        (v / 1e6, "M")
    } else if v >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    format!("{}{unit}", trim_float(d))
}

pub fn trim_float(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A plot tick value: plain, element-style from 10,000, exponent below 0.01.
pub fn fmt_plain(v: f64) -> String {
    if v >= 1e4 {
        fmt_elems(v)
    } else if v >= 0.01 || v == 0.0 {
        trim_float(v)
    } else {
        format!("{v:.0e}")
    }
}

/// A count with its sign: "+3,906", "-0.50".
pub fn signed(v: f64) -> String {
    if v > 0.0 {
        format!("+{}", fmt_count(v))
    } else {
        fmt_count(v)
    }
}

/// The command as one could type it again.
pub fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `text` as a terminal may show it: escape sequences (colours, cursor moves, titles)
/// removed and other control characters but newlines and tabs dropped, so that a
/// command's stderr quoted in a row cannot restyle or garble the lab's output.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.peek() {
                // CSI: ESC [ parameters… final byte in @..~
                Some('[') => {
                    chars.next();
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC: ESC ] … BEL or ESC \
                Some(']') => {
                    chars.next();
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                // Any other escape: the one character after it.
                _ => {
                    chars.next();
                }
            },
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// A thread count with its noun: "1 thread", "4 threads".
pub struct Threads(pub u32);

impl std::fmt::Display for Threads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            1 => write!(f, "1 thread"),
            n => write!(f, "{n} threads"),
        }
    }
}

/// `text` with its first letter upper-case: a label as a title ("Minor faults").
pub fn capitalized(text: &str) -> String {
    let mut c = text.chars();
    c.next()
        .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

/// A count with its noun, singular or plural: `counted(1, "plot", "plots")` is "1 plot".
pub fn counted(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// Every line of `text` wrapped to `width` ([`wrap`]), keeping its indentation and
/// indenting its continuations two spaces further; empty lines stay.
pub fn wrap_lines(text: &str, width: usize) -> String {
    text.lines()
        .map(|l| {
            if l.trim().is_empty() {
                return "\n".to_string();
            }
            let indent = &l[..l.len() - l.trim_start().len()];
            wrap(l.trim_start(), width, indent, &format!("{indent}  "))
        })
        .collect()
}

/// `text` wrapped at spaces into lines of at most `width` characters, the first line
/// starting with `first` and the others with `rest` (a word longer than a line stands
/// alone on its line). Every line ends with a newline.
pub fn wrap(text: &str, width: usize, first: &str, rest: &str) -> String {
    let mut out = String::new();
    let mut line = first.to_string();
    let mut len = first.chars().count();
    let mut empty = true;
    for word in text.split_whitespace() {
        let w = word.chars().count();
        if !empty && len + 1 + w > width {
            out.push_str(line.trim_end());
            out.push('\n');
            line = rest.to_string();
            len = rest.chars().count();
            empty = true;
        }
        if !empty {
            line.push(' ');
            len += 1;
        }
        line.push_str(word);
        len += w;
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
    out
}

/// The width the console's text is laid out in: `COLUMNS` when set (at least 40), else
/// the terminal's width when standard output is one, else 100.
pub fn screen_width() -> usize {
    if let Some(n) = std::env::var("COLUMNS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
    {
        return n.max(40);
    }
    // SAFETY: winsize is plain integers, for which all zeroes is a valid value.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: TIOCGWINSZ writes one winsize into `ws`, which lives through the call, for
    // a terminal, and fails without writing otherwise.
    let ok = unsafe { libc::ioctl(libc::STDOUT_FILENO, libc::TIOCGWINSZ, &mut ws) } == 0;
    if ok && ws.ws_col >= 40 {
        ws.ws_col as usize
    } else {
        100
    }
}

/// "2026-11-22T01:45:11Z" (UTC, whole seconds) of `unix` seconds since the epoch.
pub fn rfc3339(unix: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(unix);
    humantime::format_rfc3339_seconds(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_matches_known_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_795_311_911), "2026-11-22T01:45:11Z");
    }

    #[test]
    fn wrapped_text_keeps_every_word_within_the_width() {
        let text = "glibc gives the top of the heap back with brk after the frees (a trim) and grows it again for the next iteration";
        let w = wrap(text, 40, "why: ", "     ");
        assert!(w.lines().all(|l| l.chars().count() <= 40), "{w}");
        assert!(w.starts_with("why: glibc gives"), "{w}");
        assert!(
            w.lines()
                .skip(1)
                .all(|l| l.starts_with("     ") && !l.starts_with("      ")),
            "{w}"
        );
        let words: Vec<&str> = w.split_whitespace().collect();
        assert_eq!(words[1..].join(" "), text);
        // A word longer than the line stands alone and is not cut.
        let long = wrap("a verylongwordthatdoesnotfit b", 10, "", "");
        assert_eq!(long, "a\nverylongwordthatdoesnotfit\nb\n");
    }

    #[test]
    fn escape_sequences_and_controls_are_removed() {
        assert_eq!(
            printable("\u{1b}[1;31merror:\u{1b}[0m bad\r\n\u{1b}]0;title\u{7}x\ty\u{8}"),
            "error: bad\nx\ty"
        );
        assert_eq!(printable("plain ünïcode"), "plain ünïcode");
    }

    #[test]
    fn number_formats() {
        assert_eq!(fmt_ns(55.0), "55.0 ns");
        assert_eq!(fmt_ns(0.0), "0");
        assert_eq!(fmt_ns(1_920_000.0), "1.92 ms");
        assert_eq!(fmt_ns(123_456_789.0), "123 ms");
        assert_eq!(fmt_count(0.0), "0");
        assert_eq!(fmt_count(3.0), "3.00");
        assert_eq!(fmt_count(0.0012), "0.0012");
        assert_eq!(fmt_count(0.05), "0.05");
        assert_eq!(fmt_count(3906.4), "3,906");
        assert_eq!(fmt_count(-1234567.0), "-1,234,567");
    }

    #[test]
    fn human_bytes_scales() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(8 << 20), "8.0 MiB");
        assert_eq!(human_bytes(3 << 30), "3.0 GiB");
    }
}
