//! Folded stacks as a flame graph, and as lines of a file: what a trace's pages and its
//! Python view by line both write.

/// A flame graph of folded stacks (inferno), or None without stacks.
pub fn flamegraph(lines: &[String], title: &str, count_name: &str) -> Option<String> {
    if lines.is_empty() {
        return None;
    }
    let mut opt = inferno::flamegraph::Options::default();
    opt.title = title.to_string();
    opt.count_name = count_name.to_string();
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opt, lines.iter().map(String::as_str), &mut out).ok()?;
    String::from_utf8(out).ok()
}

/// Lines joined, each ending in a newline (nothing for none).
pub fn lines(v: &[String]) -> String {
    let mut s = v.join("\n");
    if !s.is_empty() {
        s.push('\n');
    }
    s
}
