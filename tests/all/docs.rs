//! The README stays short and every link of the README and docs/ leads somewhere; the
//! man pages and completions generate from the command-line definitions.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    crate::common::repo_root()
}

/// GitHub's anchor of a heading: lower case, punctuation but '-' and '_' dropped,
/// spaces to '-'.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(md: &str) -> Vec<String> {
    let mut inside = false;
    md.lines()
        .filter(|l| {
            if l.starts_with("```") {
                inside = !inside;
            }
            !inside && l.starts_with('#')
        })
        .map(|l| slug(l.trim_start_matches('#')))
        .collect()
}

/// Every `[text](target)` outside code blocks.
fn links(md: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut inside = false;
    for line in md.lines() {
        if line.starts_with("```") {
            inside = !inside;
        }
        if inside {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let tail = &rest[i + 2..];
            let Some(end) = tail.find(')') else { break };
            out.push(tail[..end].to_string());
            rest = &tail[end..];
        }
    }
    out
}

fn check_links(file: &Path, broken: &mut Vec<String>) {
    let md = std::fs::read_to_string(file).unwrap();
    for target in links(&md) {
        if target.contains("://") {
            continue;
        }
        let (path, anchor) = match target.split_once('#') {
            Some((p, a)) => (p, Some(a)),
            None => (target.as_str(), None),
        };
        let dest = if path.is_empty() {
            file.to_path_buf()
        } else {
            file.parent().unwrap().join(path)
        };
        if !dest.exists() {
            broken.push(format!("{}: {target} (no such file)", file.display()));
            continue;
        }
        if let Some(a) = anchor {
            let text = std::fs::read_to_string(&dest).unwrap_or_default();
            if !anchors(&text).iter().any(|x| x == a) {
                broken.push(format!("{}: {target} (no such heading)", file.display()));
            }
        }
    }
}

#[test]
fn the_readme_is_short_and_every_link_of_it_and_of_the_manual_resolves() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(
        lines <= 300,
        "README.md has {lines} lines; the manual belongs in docs/"
    );
    // The README's two commands, as .ci/run calls them.
    assert!(readme.contains("make run-all") && readme.contains("make test"));
    let mut broken = Vec::new();
    check_links(&repo().join("README.md"), &mut broken);
    check_links(&repo().join("results/README.md"), &mut broken);
    let mut pages = 0;
    for e in std::fs::read_dir(repo().join("docs")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "md") {
            check_links(&e.path(), &mut broken);
            pages += 1;
        }
    }
    assert!(pages >= 10, "docs/ has {pages} pages");
    assert_eq!(broken, Vec::<String>::new());
}

#[test]
fn man_pages_and_completions_generate_for_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let man = dir.path().join("man");
    let o = lab(&["generate", "man", "--out", man.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    for page in [
        "alloclab.1",
        "alloclab-compare.1",
        "alloclab-exec.1",
        "alloclab-trace.1",
    ] {
        let text = std::fs::read_to_string(man.join(page)).unwrap();
        assert!(text.contains(".TH"), "{page} is not roff");
    }
    let compare = std::fs::read_to_string(man.join("alloclab-compare.1")).unwrap();
    assert!(compare.contains("precision") && compare.contains("max\\-time"));

    let comp = dir.path().join("completions");
    let o = lab(&["generate", "completions", "--out", comp.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let bash = comp.join("alloclab.bash");
    let text = std::fs::read_to_string(&bash).unwrap();
    assert!(text.contains("compare") && text.contains("--precision"));
    // The bash script parses.
    let check = std::process::Command::new("bash")
        .arg("-n")
        .arg(&bash)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", stderr(&check));
    for f in [
        "_alloclab",
        "alloclab.fish",
        "alloclab.elv",
        "_alloclab.ps1",
    ] {
        assert!(comp.join(f).is_file(), "{f} missing");
    }
}

/// Every command's help (-h and --help) ends with an example of it, and every option's
/// text ends as a sentence does, never cut off mid-way.
#[test]
fn every_commands_help_has_an_example_and_no_text_cut_off() {
    let top = stdout(&lab(&["--help"]));
    let commands: Vec<&str> = top
        .split("Commands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| l.starts_with("  "))
        // A command's own line (its text wrapped to the width goes on further in).
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 12, "{commands:?}");
    for c in commands {
        for flag in ["-h", "--help"] {
            let help = stdout(&lab(&[c, flag]));
            assert!(
                help.contains(&format!("Examples:\n  alloclab {c}")),
                "alloclab {c} {flag} has no example:\n{help}"
            );
            // Each example is a command line the lab takes: its options parse (required
            // ones given, values of the right kind). A long one goes on over lines ending
            // in ` \`, as a shell reads it, each within the width.
            let joined = help.replace(" \\\n", " ");
            for l in help
                .lines()
                .filter(|l| l.trim_start().starts_with("alloclab "))
            {
                assert!(l.chars().count() <= 100, "alloclab {c} {flag}: {l}");
            }
            for example in joined
                .lines()
                .filter_map(|l| l.trim_start().strip_prefix("alloclab "))
                .filter(|l| !l.contains('\''))
            {
                let words = std::iter::once("alloclab").chain(example.split_whitespace());
                if let Err(e) = <alloclab::cli::Cli as clap::Parser>::try_parse_from(words) {
                    panic!(
                        "alloclab {c} {flag}: the example `alloclab {example}` does not parse: {e}"
                    );
                }
            }
            // Clap's "[default: …]" and "[possible values: …]" follow a sentence; a
            // text that stops on a word of its own was cut. A text wrapped to the width
            // goes on over the lines below its option, indented.
            let lines: Vec<&str> = help.lines().collect();
            for (i, l) in lines.iter().enumerate() {
                if !l.trim_start().starts_with("--") {
                    continue;
                }
                let mut whole = l.to_string();
                for next in &lines[i + 1..] {
                    let t = next.trim_start();
                    if t.is_empty() || t.starts_with('-') || !next.starts_with("  ") {
                        break;
                    }
                    whole.push(' ');
                    whole.push_str(t);
                }
                let l = whole.as_str();
                let text = l.split("  ").filter(|p| !p.is_empty()).nth(1);
                if let Some(t) = text.filter(|_| flag == "-h") {
                    let t = t.split(" [").next().unwrap().trim_end();
                    assert!(
                        !t.ends_with(',')
                            && !t.ends_with(" a")
                            && !t.ends_with(" the")
                            && !t.ends_with(" of")
                            && !t.ends_with(" cell's"),
                        "alloclab {c} -h cuts a text: {l}"
                    );
                }
            }
        }
    }
}

/// At COLUMNS=80 every command's help fits 80 columns, and its examples are whole
/// command lines: one that goes on does so over lines ending in ` \`, never cut by the
/// wrapping.
#[test]
fn every_commands_help_fits_80_columns_with_its_examples_whole() {
    let top = stdout(&lab(&["--help"]));
    let commands: Vec<&str> = top
        .split("Commands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|l| l.starts_with("  "))
        // A command's own line (its text wrapped to the width goes on further in).
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() >= 12, "{commands:?}");
    for c in commands {
        for flag in ["-h", "--help"] {
            let o = std::process::Command::new(driver_path())
                .args([c, flag])
                .env("COLUMNS", "80")
                .output()
                .unwrap();
            let help = stdout(&o);
            let lines: Vec<&str> = help.lines().collect();
            for l in &lines {
                assert!(l.chars().count() <= 80, "alloclab {c} {flag}: {l}");
            }
            for (i, l) in lines.iter().enumerate() {
                if !l.starts_with("  alloclab ") {
                    continue;
                }
                let mut at = i;
                while lines[at].ends_with(" \\") {
                    at += 1;
                    assert!(
                        lines.get(at).is_some_and(|n| n.starts_with("    ")),
                        "alloclab {c} {flag}: an example goes on unindented:\n{help}"
                    );
                }
                let next = lines.get(at + 1).copied().unwrap_or("");
                assert!(
                    next.is_empty() || next.starts_with("  alloclab "),
                    "alloclab {c} {flag}: an example was cut by the wrapping ({next}):\n{help}"
                );
            }
        }
    }
}

/// compare's help fits one or two screens at COLUMNS=100 (it was 214 lines): an option
/// a line or two, and the long explanations in docs/compare.md, which it names.
#[test]
fn compare_help_fits_two_screens_and_points_to_its_manual() {
    let o = std::process::Command::new(driver_path())
        .args(["compare", "--help"])
        .env("COLUMNS", "100")
        .output()
        .unwrap();
    let help = stdout(&o);
    assert!(
        help.lines().count() <= 100,
        "{} lines:\n{help}",
        help.lines().count()
    );
    assert!(help.contains("docs/compare.md"), "{help}");
    let manual = std::fs::read_to_string(repo().join("docs/compare.md")).unwrap();
    // Every option the help names is in the manual's table.
    for l in help.lines().map(str::trim_start) {
        if let Some(flag) = l
            .strip_prefix("--")
            .and_then(|f| f.split([' ', ',']).next())
        {
            if flag != "help" && flag != "confidence" {
                assert!(
                    manual.contains(&format!("`--{flag}`")),
                    "--{flag} not in docs/compare.md"
                );
            }
        }
    }
}

/// docs/why.md says, for every mechanism of the registry, its key and name, the evidence
/// it needs and what the lab says without it, word for word as the registry has them.
#[test]
fn every_mechanism_is_in_the_manual_with_its_evidence() {
    let why = std::fs::read_to_string(repo().join("docs/why.md")).unwrap();
    for m in alloclab::analysis::mechanism::MECHANISMS {
        for text in [m.key, m.name, m.needs, m.without] {
            assert!(
                why.contains(text),
                "docs/why.md lacks {text:?} (of {})",
                m.key
            );
        }
    }
}
