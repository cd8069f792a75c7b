//! The lab's own Markdown (REPORT.md) as HTML for a folder's page: headings, paragraphs,
//! block quotes, bullet lists, tables, fenced code, and inline code and bold. A link or
//! an image is named with its file, "plots/faults.svg" in brackets, not linked: the page
//! stays self-contained and draws its charts itself ([`super::html::plain_links`]).
//! Only what the lab writes; anything else is kept as text, escaped.

use super::escape_markup as esc;

/// `md` as HTML: every block in order, every text escaped once.
pub fn to_html(md: &str) -> String {
    let mut out = String::new();
    let lines: Vec<&str> = md.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        if trimmed.is_empty() {
            i += 1;
        } else if trimmed.starts_with("```") {
            let mut code = Vec::new();
            i += 1;
            while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                code.push(lines[i]);
                i += 1;
            }
            i += 1;
            out.push_str("<pre>");
            out.push_str(&esc(&code.join("\n")));
            out.push_str("</pre>\n");
        } else if let Some((level, text)) = heading(trimmed) {
            out.push_str(&format!("<h{level}>{}</h{level}>\n", inline(text)));
            i += 1;
        } else if trimmed.starts_with('|') {
            let mut rows = Vec::new();
            while i < lines.len() && lines[i].trim_start().starts_with('|') {
                rows.push(lines[i].trim());
                i += 1;
            }
            out.push_str(&table(&rows));
        } else if bullet(trimmed).is_some() {
            out.push_str("<ul>\n");
            while i < lines.len() {
                let Some(item) = bullet(lines[i].trim_start()) else {
                    break;
                };
                // A bullet's continuation lines (indented, not a new bullet) join it.
                let mut text = item.to_string();
                i += 1;
                while i < lines.len()
                    && lines[i].starts_with(' ')
                    && !lines[i].trim().is_empty()
                    && bullet(lines[i].trim_start()).is_none()
                {
                    text.push(' ');
                    text.push_str(lines[i].trim());
                    i += 1;
                }
                out.push_str(&format!("<li>{}</li>\n", inline(&text)));
            }
            out.push_str("</ul>\n");
        } else if trimmed.starts_with('>') {
            let mut text = Vec::new();
            while i < lines.len() && lines[i].trim_start().starts_with('>') {
                text.push(lines[i].trim_start()[1..].trim());
                i += 1;
            }
            out.push_str(&format!(
                "<blockquote><p>{}</p></blockquote>\n",
                inline(&text.join(" "))
            ));
        } else if line.starts_with("    ") {
            let mut code = Vec::new();
            while i < lines.len() && (lines[i].starts_with("    ") || lines[i].is_empty()) {
                code.push(lines[i].get(4..).unwrap_or(""));
                i += 1;
            }
            while code.last().is_some_and(|l| l.is_empty()) {
                code.pop();
            }
            out.push_str(&format!("<pre>{}</pre>\n", esc(&code.join("\n"))));
        } else {
            let mut text = Vec::new();
            while i < lines.len() {
                let t = lines[i].trim_start();
                if t.is_empty()
                    || t.starts_with("```")
                    || t.starts_with('|')
                    || t.starts_with('>')
                    || heading(t).is_some()
                    || bullet(t).is_some()
                {
                    break;
                }
                text.push(lines[i].trim());
                i += 1;
            }
            out.push_str(&format!("<p>{}</p>\n", inline(&text.join(" "))));
        }
    }
    out
}

/// A heading line's level and text.
fn heading(line: &str) -> Option<(usize, &str)> {
    let level = line.chars().take_while(|c| *c == '#').count();
    let text = line[level..].strip_prefix(' ')?;
    (1..=6).contains(&level).then_some((level, text.trim()))
}

/// A bullet line's text ("- x" or "* x").
fn bullet(line: &str) -> Option<&str> {
    line.strip_prefix("- ").or_else(|| line.strip_prefix("* "))
}

/// A pipe table: the first row is its header where the second is its rule.
fn table(rows: &[&str]) -> String {
    let cells = |row: &str| -> Vec<String> {
        let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
        inner.split('|').map(|c| c.trim().to_string()).collect()
    };
    let is_rule = |row: &str| {
        cells(row)
            .iter()
            .all(|c| !c.is_empty() && c.chars().all(|ch| matches!(ch, '-' | ':')))
    };
    let mut out = String::from("<div class=\"md-table\"><table>\n");
    let header = rows.len() > 1 && is_rule(rows[1]);
    for (k, row) in rows.iter().enumerate() {
        if header && k == 1 {
            continue;
        }
        let tag = if header && k == 0 { "th" } else { "td" };
        out.push_str("<tr>");
        for c in cells(row) {
            out.push_str(&format!("<{tag}>{}</{tag}>", inline(&c)));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</table></div>\n");
    out
}

/// A line's inline markup: `code`, **bold**, [text](link) and ![alt](file), the rest
/// escaped.
fn inline(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    let mut bold = false;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('`') {
            if let Some(end) = after.find('`') {
                out.push_str(&format!("<code>{}</code>", esc(&after[..end])));
                rest = &after[end + 1..];
                continue;
            }
        }
        if let Some(after) = rest.strip_prefix("**") {
            if bold || after.contains("**") {
                out.push_str(if bold { "</b>" } else { "<b>" });
                bold = !bold;
                rest = after;
                continue;
            }
        }
        let image = rest.starts_with("![");
        if image || rest.starts_with('[') {
            let from = if image { 2 } else { 1 };
            if let Some((label, link, used)) = link_at(&rest[from..]) {
                out.push_str(&format!(
                    "{} (<code>{}</code>)",
                    if image { esc(label) } else { inline(label) },
                    esc(link)
                ));
                rest = &rest[from + used..];
                continue;
            }
        }
        let ch = rest.chars().next().unwrap_or(' ');
        out.push_str(&esc(&ch.to_string()));
        rest = &rest[ch.len_utf8()..];
    }
    if bold {
        out.push_str("</b>");
    }
    out
}

/// After a link's "[": its label, its target and the bytes they take ("label](link)").
fn link_at(text: &str) -> Option<(&str, &str, usize)> {
    let mid = text.find("](")?;
    let close = text[mid + 2..].find(')')?;
    let (label, link) = (&text[..mid], &text[mid + 2..mid + 2 + close]);
    (!label.contains('[') && !link.contains(' ')).then_some((label, link, mid + 2 + close + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What REPORT.md holds, rendered: headings, lists, tables and code as elements, the
    /// text escaped once, an image as a link to its file, and no raw Markdown left.
    #[test]
    fn reports_markdown_renders_as_elements() {
        let md = "# size-sweep\n\nSizes from 32 to 2^24 <elements> & more.\n\n> **Quick:** a quick run\n> is a smoke test.\n\n## Answer\n\n- system changes at `8,211` elements\n- jemalloc: see [cliffs](cliffs.json)\n  and its plot\n\n| | |\n|:--|:--|\n| glibc | 2.36 |\n\n```\nalloclab sweep -- prog {size}\n```\n\n![faults](plots/faults.svg)\n";
        let html = to_html(md);
        assert!(html.contains("<h1>size-sweep</h1>"), "{html}");
        assert!(html.contains("<h2>Answer</h2>"), "{html}");
        assert!(
            html.contains("<p>Sizes from 32 to 2^24 &lt;elements&gt; &amp; more.</p>"),
            "{html}"
        );
        assert!(
            html.contains(
                "<blockquote><p><b>Quick:</b> a quick run is a smoke test.</p></blockquote>"
            ),
            "{html}"
        );
        assert!(
            html.contains("<li>system changes at <code>8,211</code> elements</li>"),
            "{html}"
        );
        assert!(
            html.contains("<li>jemalloc: see cliffs (<code>cliffs.json</code>) and its plot</li>"),
            "{html}"
        );
        assert!(
            html.contains("<tr><td>glibc</td><td>2.36</td></tr>"),
            "{html}"
        );
        assert!(!html.contains(":--"), "{html}");
        assert!(
            html.contains("<pre>alloclab sweep -- prog {size}</pre>"),
            "{html}"
        );
        assert!(
            html.contains("faults (<code>plots/faults.svg</code>)"),
            "{html}"
        );
        // Self-contained: nothing links or loads out of the page.
        assert!(!html.contains("href=") && !html.contains("src="), "{html}");
        for raw in ["## ", "**", "```", "- system", "![", "]("] {
            assert!(!html.contains(raw), "{raw} left in {html}");
        }
    }
}
