//! report.html: every results folder and `compare --html` write one self-contained page
//! (no network, no external script, font or stylesheet) whose charts render and whose
//! toggles work in a real browser (headless Chromium, where installed).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the page loads from elsewhere: any src=/href= attribute, <link>, @import or
/// url(…). The SVG namespace is an identifier, not a load.
fn external_loads(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    for needle in ["src=", "href=", "<link", "@import", "url("] {
        for (i, _) in html.match_indices(needle) {
            found.push(html[i..(i + 60).min(html.len())].to_string());
        }
    }
    found
}

#[track_caller]
fn assert_self_contained(path: &Path) -> String {
    let html = std::fs::read_to_string(path).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>"), "{}", path.display());
    assert!(html.trim_end().ends_with("</html>"));
    assert_eq!(external_loads(&html), Vec::<String>::new());
    // Every <svg> is closed, and points carry their hover values.
    assert_eq!(html.matches("<svg").count(), html.matches("</svg>").count());
    assert!(html.contains("<title>"), "no hover values");
    html
}

fn small_compare_html(dir: &Path) -> PathBuf {
    let path = dir.join("compare.html");
    let o = lab(&[
        "compare",
        "--size",
        "1000000",
        "--allocators",
        "system,mimalloc",
        "--variants",
        "in-place,out-of-place",
        "--min-time",
        "0.005",
        // Room for the six planned rounds (about 1.5 s alone) on a loaded machine: a
        // cut round would leave the storm undecided and the page without its verdict.
        "--max-time",
        "10",
        // The planned rounds decide the storm; no adaptive rounds fill the time after.
        "--no-adaptive",
        "--html",
        path.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    path
}

#[test]
fn compare_html_is_self_contained_and_shows_the_storm() {
    let dir = tempfile::tempdir().unwrap();
    let path = small_compare_html(dir.path());
    let html = assert_self_contained(&path);
    // Five charts (percentiles, p50, faults, syscalls, RSS), one series per cell in each.
    assert_eq!(html.matches("<figure>").count(), 5, "{html}");
    assert_eq!(html.matches(r#"<g class="series""#).count(), 5 * 4);
    // Toggles for both allocators and both variants.
    for v in ["system", "mimalloc", "in-place", "out-of-place"] {
        assert!(
            html.contains(&format!(r#"data-value="{v}" checked"#)),
            "toggle {v}"
        );
    }
    // The storm: glibc's out-of-place faults thousands of times per iteration, and the
    // findings say it is slower.
    let storm = html.split("<title>").any(|t| {
        let Some(value) = t.strip_prefix("system out-of-place: ") else {
            return false;
        };
        let number: String = value
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == ',')
            .collect();
        value[number.len()..].starts_with(' ')
            && number
                .replace(',', "")
                .parse::<u64>()
                .is_ok_and(|n| n >= 1000)
    });
    assert!(
        storm,
        "no hover text with thousands of faults for system out-of-place"
    );
    assert!(html.contains(r#"out-of-place "#) && html.contains(r#"<b class="slower">"#));
}

#[test]
fn compare_html_into_a_missing_folder_is_refused_before_anything_runs() {
    let o = lab(&["compare", "--html", "/nonexistent-folder/x.html"]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--html"), "{}", stderr(&o));
    assert!(o.stdout.is_empty());
}

#[test]
fn exec_and_run_folders_get_a_report_html() {
    let dir = tempfile::tempdir().unwrap();
    let exec_dir = dir.path().join("exec");
    let o = lab(&[
        "exec",
        "--runs",
        "2",
        "--allocators",
        "system,jemalloc",
        "--out",
        exec_dir.to_str().unwrap(),
        "--",
        temporaries().to_str().unwrap(),
        "--iterations",
        "5",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = assert_self_contained(&exec_dir.join("report.html"));
    assert!(html.contains("alloclab exec:"));
    assert_guided(&exec_dir);
    // exec's answer: the same items in findings.json, REPORT.md and the console.
    let findings = json(&std::fs::read(exec_dir.join("findings.json")).unwrap());
    let md = std::fs::read_to_string(exec_dir.join("REPORT.md")).unwrap();
    let console = unwrapped(&stdout(&o));
    let items = findings["answer"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{findings}");
    for i in items {
        let text = i["text"].as_str().unwrap();
        assert!(text.starts_with("jemalloc: "), "{text}");
        assert!(md.contains(&format!("- {text}\n")), "{md}");
        assert!(console.contains(text), "{console}");
        assert_eq!(i["figures"]["kind"], "command", "{i}");
        assert_eq!(i["figures"]["runs"], 2, "{i}");
    }
    // Four charts of figures per run and one of memory over a run, a line each per
    // allocator.
    assert_eq!(
        html.matches(r#"<g class="series""#).count(),
        5 * 2,
        "{html}"
    );
    assert!(html.contains("Resident memory over a run"), "{html}");

    let run_dir = dir.path().join("run");
    let o = lab(&[
        "run",
        "--no-calibration",
        "--quick",
        "--out",
        run_dir.to_str().unwrap(),
        &experiment_file("size-sweep.toml"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let folder = std::fs::read_dir(&run_dir)
        .unwrap()
        .flatten()
        .find(|e| e.path().is_dir())
        .unwrap()
        .path();
    let html = assert_self_contained(&folder.join("report.html"));
    // A sweep: charts against size — throughput (GB/s) first —, and REPORT.md's findings.
    assert!(html.contains("against size"), "{html}");
    assert!(html.contains("Throughput against size"), "{html}");
    // Four charts against size, and one of memory over time per variant at the largest
    // size.
    let memory = html.matches("Resident memory over time ·").count();
    assert!(memory >= 1, "{html}");
    assert_eq!(html.matches("<figure>").count(), 4 + memory, "{html}");
    // The page and REPORT.md lead with the same answer (one list, rendered by both),
    // before the findings, which fold; the method and the environment come after them.
    let md = std::fs::read_to_string(folder.join("REPORT.md")).unwrap();
    let answer: Vec<&str> = md
        .split("## Answer\n\n")
        .nth(1)
        .expect("REPORT.md leads with an answer")
        .lines()
        .take_while(|l| l.starts_with("- "))
        .map(|l| &l[2..])
        .collect();
    assert!((1..=5).contains(&answer.len()), "{md}");
    // Where more findings than five compete, the count of the rest follows the list as a
    // sentence of its own, not as a sixth headline (on the page as in REPORT.md).
    let after: Vec<&str> = md
        .split("## Answer\n\n")
        .nth(1)
        .unwrap()
        .lines()
        .skip(answer.len())
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| !l.is_empty())
        .collect();
    assert!(
        after.is_empty() || (after.len() == 1 && after[0].starts_with("… and ")),
        "{md}"
    );
    let listed = html
        .split("<ul class=\"findings answer\">")
        .nth(1)
        .and_then(|rest| rest.split("</ul>").next())
        .expect("the page lists its answer");
    assert_eq!(listed.matches("<li>").count(), answer.len(), "{html}");
    let at = |needle: &str, text: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle} missing"))
    };
    assert!(at("## Answer", &md) < at("## Findings", &md));
    assert!(at("## Findings", &md) < at("## Method", &md));
    assert!(at("## Method", &md) < at("## Environment", &md));
    // The first headline on the page, up to its verdict word (which the page marks).
    let head = answer[0].split(": ").next().unwrap();
    let first = alloclab::export::escape_markup(head);
    assert!(at("<h2 id=\"answer\">Answer</h2>", &html) < at(first.as_str(), &html));
    assert!(at(first.as_str(), &html) < at("All findings (", &html));
    assert!(at("All findings (", &html) < at("<h2>Charts</h2>", &html));
    // A quick sweep bisects no cliff: its answer is its changes between the sweep's
    // sizes that lie at a known threshold (jemalloc's oversize_threshold between 2^19
    // and 2^20 elements, as the full run's bisected cliff names it), then its largest
    // differences against in place, each with the counts behind it.
    assert!(
        answer.iter().all(
            |a| (a.contains(" vs in-place: ") && a.contains("page faults"))
                || (a.contains(" changes between the sweep's sizes ")
                    && a.contains("not bisected")
                    && a.contains("; at "))
        ),
        "{answer:?}"
    );
    assert!(
        answer.iter().any(|a| a.starts_with(
            "jemalloc changes between the sweep's sizes 524,288 and 1,048,576 elements"
        ) && a.contains("at jemalloc's oversize_threshold")),
        "{answer:?}"
    );
    // One answer, word for word wherever it is shown: findings.json's items, REPORT.md's
    // bullets, the page's list (its markup taken off) and the console's last lines.
    let findings = json(&std::fs::read(folder.join("findings.json")).unwrap());
    assert_eq!(findings["schema"], "alloclab-findings/1");
    let items = answer_texts(&findings);
    assert_eq!(items, answer, "findings.json against REPORT.md");
    // summary.csv carries the figures the answer states: each difference against in
    // place is the row's vs_in_place; the folder says what its files are.
    assert_guided(&folder);
    let text = std::fs::read_to_string(folder.join("summary.csv")).unwrap();
    let rows: Vec<BTreeMap<String, String>> = csv::Reader::from_reader(text.as_bytes())
        .deserialize()
        .map(|r| r.unwrap())
        .collect();
    let mut checked = 0;
    for item in findings["answer"].as_array().unwrap() {
        let f = &item["figures"];
        if f["kind"] != "difference" || f["against_variant"] != "in-place" {
            continue;
        }
        let row = rows
            .iter()
            .find(|r| {
                r["allocator"] == f["allocator"].as_str().unwrap()
                    && r["variant"] == f["variant"].as_str().unwrap()
                    && r["size"].parse::<u64>().ok() == f["size"].as_u64()
                    && r["threads"].parse::<u64>().ok() == f["threads"].as_u64()
            })
            .unwrap_or_else(|| panic!("no row for {f}"));
        // The same ratio (the findings may reach it by another order of operations:
        // equal to the last few bits).
        let ratio: f64 = row["vs_in_place"].parse().unwrap();
        let stated = f["comparison"]["ratio"].as_f64().unwrap();
        assert!((ratio / stated - 1.0).abs() < 1e-12, "{ratio} vs {f}");
        checked += 1;
    }
    assert!(checked > 0, "{findings}");
    let page_items: Vec<String> = listed
        .split("<li>")
        .skip(1)
        .map(|li| {
            let text = li.split("</li>").next().unwrap();
            let mut plain = String::new();
            let mut in_tag = false;
            for c in text.chars() {
                match c {
                    '<' => in_tag = true,
                    '>' => in_tag = false,
                    c if !in_tag => plain.push(c),
                    _ => {}
                }
            }
            plain
                .replace("&lt;", "<")
                .replace("&gt;", ">")
                .replace("&quot;", "\"")
                .replace("&#39;", "'")
                .replace("&amp;", "&")
        })
        .collect();
    assert_eq!(page_items, answer, "report.html against REPORT.md");
    let console = unwrapped(&stdout(&o));
    for a in &answer {
        assert!(console.contains(a), "the console lacks {a:?}:\n{console}");
    }
    // `report` rebuilds the folder and says the same answer on its console.
    let again = lab(&["report", folder.to_str().unwrap()]);
    assert!(again.status.success(), "{}", stderr(&again));
    let again = unwrapped(&stdout(&again));
    for a in &answer {
        assert!(again.contains(a), "report's console lacks {a:?}:\n{again}");
    }
    // Each item's figures are what its words say: a difference "slower" has a ratio above
    // 1 and "more page faults" more faults per iteration than its base.
    for item in findings["answer"].as_array().unwrap() {
        let text = item["text"].as_str().unwrap();
        let f = &item["figures"];
        // A change between the sweep's sizes (not bisected: a quick run) at a threshold:
        // its sizes and the threshold are the figures'.
        if f["kind"] == "cliff" {
            assert_eq!(f["bisected"], false, "{item}");
            assert_eq!(f["cause"], "at", "{item}");
            let size = |k: &str| {
                f[k].as_u64()
                    .map(|n| format!("{n}"))
                    .unwrap_or_default()
                    .as_bytes()
                    .rchunks(3)
                    .rev()
                    .map(|c| std::str::from_utf8(c).unwrap())
                    .collect::<Vec<_>>()
                    .join(",")
            };
            assert!(
                text.contains(&format!(
                    "between the sweep's sizes {} and {} elements",
                    size("below_size"),
                    size("above_size")
                )),
                "{item}"
            );
            assert!(
                text.contains(&format!("at {}", f["threshold"].as_str().unwrap())),
                "{item}"
            );
            continue;
        }
        assert_eq!(f["kind"], "difference", "{item}");
        let ratio = f["comparison"]["ratio"].as_f64().unwrap();
        assert_eq!(text.contains("slower"), ratio > 1.0, "{item}");
        let faults = |k: &str| f[k]["minflt_per_iter"].as_f64().unwrap();
        if text.contains(" more page faults") {
            assert!(faults("counts") > faults("against_counts"), "{item}");
        }
        if text.contains(" fewer page faults") {
            assert!(faults("counts") < faults("against_counts"), "{item}");
        }
        assert!(f["processes"].as_u64().unwrap() >= 1, "{item}");
    }
    // Every comparison of the findings, worded by the same composer: among them each
    // answer item, word for word and figure for figure.
    let comparisons = findings["comparisons"].as_array().unwrap();
    assert!(comparisons.len() >= items.len(), "{findings}");
    for item in findings["answer"].as_array().unwrap() {
        if item["figures"]["kind"] != "cliff" {
            assert!(comparisons.contains(item), "{item}");
        }
    }
}

pub(crate) fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .find_map(|name| {
            let out = Command::new("sh")
                .args(["-c", &format!("command -v {name}")])
                .output()
                .ok()?;
            let p = String::from_utf8_lossy(&out.stdout).trim().to_string();
            (!p.is_empty()).then(|| PathBuf::from(p))
        })
}

/// The page's `<body>` after Chromium ran its script, with the self-test asked for.
pub(crate) fn body_in_browser(browser: &Path, page: &Path) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--window-size=1280,900",
            &format!("--user-data-dir={}", profile.path().display()),
            "--dump-dom",
        ])
        .arg(format!("file://{}#selftest", page.display()))
        .output()
        .expect("chromium starts");
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let start = dom.find("<body").expect("a body in the DOM");
    dom[start..start + dom[start..].find('>').unwrap() + 1].to_string()
}

#[test]
#[ignore = "needs Chromium (Debian: apt-get install chromium); .ci/run installs it and runs this with --ignored"]
fn the_report_renders_in_chromium_without_errors_and_its_toggles_hide_series() {
    let browser = chromium().expect("chromium is installed");
    let dir = tempfile::tempdir().unwrap();
    let page = small_compare_html(dir.path());
    let body = body_in_browser(&browser, &page);
    // The script ran to its end (it sets these last), with no error on the page.
    assert!(body.contains(r#"data-errors="""#), "{body}");
    assert!(body.contains(r#"data-charts="5""#), "{body}");
    assert!(body.contains(r#"data-series="20""#), "{body}");
    // Switching the first toggle (an allocator) off hid its series and no other.
    assert!(body.contains(r#"data-selftest="ok""#), "{body}");
    assert!(body.contains(r#"data-past-right="0""#), "{body}");
}

#[test]
#[ignore = "needs Chromium (Debian: apt-get install chromium); .ci/run installs it and runs this with --ignored"]
fn a_page_of_many_knob_sets_fits_the_windows_width_toggles_and_all() {
    // Thirteen allocator specs, some of them long ("jemalloc:dirty_decay_ms=-1,
    // muzzy_decay_ms=-1"): their toggles wrap rather than run off the page's right edge.
    let browser = chromium().expect("chromium is installed");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = lab(&[
        "run",
        "--no-calibration",
        "--quick",
        "--out",
        out.to_str().unwrap(),
        &experiment_file("tunables.toml"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = out.join("tunables").join("report.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.matches(r#"data-key="alloc""#).count() >= 10, "{html}");
    let body = body_in_browser(&browser, &page);
    assert!(body.contains(r#"data-errors="""#), "{body}");
    assert!(body.contains(r#"data-past-right="0""#), "{body}");
}

/// A folder of results folders like `make run-all`'s, with the founding experiment only:
/// glibc and jemalloc, in-place and out-of-place at 1e6, six processes a cell.
fn founding_parent(parent: &Path) {
    let exp = parent.join("numpy-temporaries.toml");
    std::fs::write(
        &exp,
        "description = \"the founding case, small\"\nworkloads = [\"scale\"]\nvariants = [\"in-place\", \"out-of-place\"]\nallocators = [\"system\", \"jemalloc\"]\nsizes = [\"1e6\"]\nthreads = [1]\n\n[budget]\nmin_time = 0.005\nmin_iters = 3\nwarmup_time = 0\nwarmup_iters = 1\nprocesses = 6\n",
    )
    .unwrap();
    let out = parent.join("results");
    let o = lab(&[
        "run",
        "--no-calibration",
        "--out",
        out.to_str().unwrap(),
        exp.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn a_folder_of_results_gets_an_index_with_the_founding_answer_and_a_link_to_every_page() {
    let dir = tempfile::tempdir().unwrap();
    founding_parent(dir.path());
    let results = dir.path().join("results");
    let o = lab(&["report", results.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let index = results.join("index.html");
    let html = std::fs::read_to_string(&index).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    // Nothing loads from outside the results: every link and image is a folder's file
    // or a place on the page.
    assert_eq!(
        external_loads(&html)
            .iter()
            .filter(|l| !l.starts_with("href=\"numpy-temporaries/")
                && !l.starts_with("src=\"numpy-temporaries/")
                && !l.starts_with("href=\"#"))
            .count(),
        0,
        "{html}"
    );
    // The founding verdict, with its interval, and the mechanism from the counts: the
    // storm's faults and glibc's brk calls.
    let answer = &html[html.find(r#"<section id="answer">"#).unwrap()..];
    let answer = &answer[..answer.find("</section>").unwrap()];
    // It says what was measured: the lab's Rust workload, not NumPy (whose own runs,
    // `make exec-numpy`'s folders, are absent here and said to be).
    assert!(
        answer.contains("Measured by the lab's Rust stand-in for NumPy's temporaries")
            && answer.contains("not by NumPy"),
        "{answer}"
    );
    assert!(
        answer.contains("no exec-numpy-func1 or exec-numpy-func2 folder here"),
        "{answer}"
    );
    // The founding folder's chart is on the page, as an image of its file.
    assert!(
        answer.contains(r#"<img src="numpy-temporaries/plots/scale-n1000000-t1-latency.svg""#),
        "{answer}"
    );
    assert!(
        answer.contains(r#"<b class="slower">"#) && answer.contains("x slower ["),
        "{answer}"
    );
    assert!(
        answer.contains("more page faults") && answer.contains(" brk"),
        "{answer}"
    );
    // The parts whose folders are missing say so instead of a figure.
    assert!(html.contains("No tunables folder here"), "{html}");
    assert!(html.contains("No size-sweep folder here"), "{html}");
    // What removes it starts with glibc's own (its tunables folder is missing here, and
    // said to be), then what the founding finding says removes it without tuning glibc.
    let remedies = &html[html.find(r#"<section id="remedies">"#).unwrap()..];
    assert!(remedies.contains("No tunables folder here"), "{remedies}");
    // The heat table holds both allocators; every link resolves to a file or to a place
    // on the page, and the folders' pages are linked before the founding case.
    assert!(html.contains("<th>jemalloc</th>") && html.contains("<th>system</th>"));
    let links: Vec<&str> = html
        .split("href=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    assert!(
        links.contains(&"numpy-temporaries/report.html"),
        "{links:?}"
    );
    for l in &links {
        match l.strip_prefix('#') {
            Some(id) => assert!(html.contains(&format!("id=\"{id}\"")), "{l}"),
            None => assert!(results.join(l).is_file(), "{l}"),
        }
    }
    assert!(
        html.find("href=\"numpy-temporaries/report.html\"").unwrap()
            < html.find(r#"<section id="answer">"#).unwrap(),
        "{html}"
    );
    // Written again, the lab's own index is replaced.
    let o = lab(&["report", results.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));

    // A user's own index.html is never replaced: refused, and left as it was.
    let mine = tempfile::tempdir().unwrap();
    std::fs::rename(
        results.join("numpy-temporaries"),
        mine.path().join("numpy-temporaries"),
    )
    .unwrap();
    std::fs::write(mine.path().join("index.html"), "<p>my notes</p>").unwrap();
    let o = lab(&["report", mine.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("is not alloclab's"), "{}", stderr(&o));
    assert_eq!(
        std::fs::read_to_string(mine.path().join("index.html")).unwrap(),
        "<p>my notes</p>"
    );
    // A damaged results folder is said on the page and on stderr, not passed over.
    std::fs::remove_file(mine.path().join("index.html")).unwrap();
    let runs = mine.path().join("numpy-temporaries").join("runs");
    let first = std::fs::read_dir(&runs)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    std::fs::write(&first, "{\"broken\": ").unwrap();
    let o = lab(&["report", mine.path().to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning:") && stderr(&o).contains("could not read"),
        "{}",
        stderr(&o)
    );
    let html = std::fs::read_to_string(mine.path().join("index.html")).unwrap();
    assert!(html.contains("Could not read numpy-temporaries"), "{html}");
    assert!(html.contains("unreadable:"), "{html}");
    // Files that merely look like a results folder's (no folder.json) make none.
    let fake = tempfile::tempdir().unwrap();
    std::fs::create_dir(fake.path().join("sub")).unwrap();
    std::fs::write(fake.path().join("sub").join("trace.json"), "garbage").unwrap();
    let o = lab(&["report", fake.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(!fake.path().join("index.html").exists());
    // A folder that holds no results folder is refused, naming what would be right.
    let empty = tempfile::tempdir().unwrap();
    let o = lab(&["report", empty.path().to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("holds none"), "{}", stderr(&o));
    assert!(!empty.path().join("index.html").exists());
}

#[test]
#[ignore = "needs Chromium (Debian: apt-get install chromium); .ci/run installs it and runs this with --ignored"]
fn the_index_shows_the_founding_verdict_on_its_first_screen_in_chromium() {
    let browser = chromium().expect("chromium is installed");
    let dir = tempfile::tempdir().unwrap();
    founding_parent(dir.path());
    let results = dir.path().join("results");
    let o = lab(&["report", results.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(&browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--window-size=1280,800",
            &format!("--user-data-dir={}", profile.path().display()),
            "--dump-dom",
        ])
        .arg(format!("file://{}", results.join("index.html").display()))
        .output()
        .expect("chromium starts");
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let start = dom.find("<body").expect("a body in the DOM");
    let body = &dom[start..start + dom[start..].find('>').unwrap() + 1];
    // The script ran with no error; the verdict is within the first 1280×800 screen;
    // the page links the folder's page (above the answer, with it, and in the table),
    // its chart and the table of every folder.
    assert!(body.contains(r#"data-errors="""#), "{body}");
    assert!(body.contains(r#"data-answer-first-screen="yes""#), "{body}");
    assert!(body.contains(r#"data-links="5""#), "{body}");
}

/// An index built from folders whose runs did not finish (as a killed run-all leaves
/// them) states nothing that was not measured: its title says INCOMPLETE and what is
/// missing; a knob set without results is not "no knob set changed the faults"; no
/// change is placed between two sizes with an unmeasured one between them.
#[test]
fn an_index_of_unfinished_folders_states_nothing_unmeasured() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let experiment = |name: &str, text: &str| {
        let exp = dir.path().join(format!("{name}.toml"));
        std::fs::write(&exp, text).unwrap();
        let o = lab(&[
            "run",
            "--no-calibration",
            "--out",
            results.to_str().unwrap(),
            exp.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
    };
    let budget = "\n[budget]\nmin_time = 0\nmin_iters = 5\nmax_iters = 5\nwarmup_time = 0\nwarmup_iters = 2\n";
    experiment(
        "tunables",
        &format!("description = \"knobs\"\nworkloads = [\"scale\"]\nvariants = [\"out-of-place\"]\nallocators = [\"system\", \"system:top_pad=64M\"]\nsizes = [\"1e6\"]\n{budget}"),
    );
    experiment(
        "size-sweep",
        &format!("description = \"sizes\"\nworkloads = [\"scale\"]\nvariants = [\"out-of-place\"]\nallocators = [\"system\"]\nsizes = [4096, 8192, 12288, 16384]\n{budget}"),
    );
    // What a kill leaves: runs missing, folder.json saying complete false.
    let unfinish = |folder: &str, run: &str| {
        let f = results.join(folder);
        for e in std::fs::read_dir(f.join("runs")).unwrap().flatten() {
            if e.file_name().to_string_lossy().contains(run) {
                std::fs::remove_file(e.path()).unwrap();
            }
        }
        let path = f.join("folder.json");
        let mut status: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        status["complete"] = false.into();
        std::fs::write(&path, status.to_string()).unwrap();
    };
    // Complete, the storm's knob set is named and the storm's start is placed.
    let o = lab(&["report", results.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(results.join("index.html")).unwrap();
    assert!(!html.contains("INCOMPLETE"), "{html}");
    assert!(html.contains("<code>system:top_pad=64M</code>:"), "{html}");
    assert!(
        html.contains("at 8,192 elements") && html.contains("at 12,288 elements"),
        "{html}"
    );

    unfinish("tunables", "top_pad");
    unfinish("size-sweep", "-n12288-");
    let o = lab(&["report", results.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(results.join("index.html")).unwrap();
    assert!(html.contains("<title>INCOMPLETE: "), "{html}");
    assert!(
        html.contains("tunables (missing: 1 of the 2 planned worker processes"),
        "{html}"
    );
    assert!(!html.contains("No knob set changed"), "{html}");
    assert!(
        html.contains("No knob set has results yet (INCOMPLETE)"),
        "{html}"
    );
    assert!(
        html.contains("INCOMPLETE: the size sweep did not finish"),
        "{html}"
    );
    assert!(
        !html.contains("at 16,384 elements"),
        "a change across 12,288: {html}"
    );
    // Each folder's own report says so too, rebuilt from what is on disk.
    for folder in ["tunables", "size-sweep"] {
        let f = results.join(folder);
        let o = lab(&["report", f.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let md = std::fs::read_to_string(f.join("REPORT.md")).unwrap();
        assert!(
            md.contains("> **INCOMPLETE:** this run did not finish"),
            "{md}"
        );
        let page = std::fs::read_to_string(f.join("report.html")).unwrap();
        assert!(page.contains("<title>INCOMPLETE"), "{page}");
    }
    let md = std::fs::read_to_string(results.join("size-sweep/REPORT.md")).unwrap();
    assert!(
        !md.contains("at 16,384 elements"),
        "a change across 12,288: {md}"
    );

    // A folder.json cut short (a full disk) or far too large is said, not passed over.
    std::fs::write(results.join("tunables/folder.json"), "{\"schema\": \"alloc").unwrap();
    let o = lab(&["report", results.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("warning: ") && stderr(&o).contains("tunables"),
        "{}",
        stderr(&o)
    );
    let html = std::fs::read_to_string(results.join("index.html")).unwrap();
    assert!(html.contains("tunables (could not be read:"), "{html}");
    assert!(
        html.contains("The tunables folder could not be read"),
        "{html}"
    );
}

/// Killed early, a run-all leaves folders with some cells only: the founding verdict is
/// never taken from another workload (chain's `((a+b)*c-d)/e` is not the founding case),
/// the unfinished numpy-temporaries folder says it has no founding cells yet, and a knob
/// set whose allocator's defaults have no results is "not compared", not "changed
/// nothing".
#[test]
fn an_index_of_a_run_all_killed_early_takes_no_answer_from_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let budget = "\n[budget]\nmin_time = 0\nmin_iters = 5\nmax_iters = 5\nwarmup_time = 0\nwarmup_iters = 2\n";
    for (name, text) in [
        ("chain", "workloads = [\"chain\"]\nvariants = [\"in-place\", \"out-of-place\"]\nallocators = [\"system\"]\nsizes = [100000]\n"),
        ("numpy-temporaries", "workloads = [\"scale\"]\nvariants = [\"in-place\", \"out-of-place\"]\nallocators = [\"system\"]\nsizes = [\"1e6\"]\n"),
        ("tunables", "workloads = [\"scale\"]\nvariants = [\"out-of-place\"]\nallocators = [\"system\", \"system:top_pad=64M\"]\nsizes = [\"1e6\"]\n"),
    ] {
        let exp = dir.path().join(format!("{name}.toml"));
        std::fs::write(&exp, format!("description = \"{name}\"\n{text}{budget}")).unwrap();
        let o = lab(&["run", "--no-calibration", "--out", results.to_str().unwrap(), exp.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    // What a kill leaves: numpy-temporaries without its out-of-place cell, tunables
    // without the defaults' cell; folder.json says complete false.
    let remove = |folder: &str, keep: &dyn Fn(&str) -> bool| {
        let f = results.join(folder);
        for e in std::fs::read_dir(f.join("runs")).unwrap().flatten() {
            if !keep(&e.file_name().to_string_lossy()) {
                std::fs::remove_file(e.path()).unwrap();
            }
        }
        let path = f.join("folder.json");
        let mut status: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        status["complete"] = false.into();
        std::fs::write(&path, status.to_string()).unwrap();
    };
    remove("numpy-temporaries", &|n| !n.contains("out-of-place"));
    remove("tunables", &|n| n.contains("top_pad"));
    // Killed before it wrote its report: `report` of the parent rebuilds its page.
    for f in ["REPORT.md", "report.html"] {
        std::fs::remove_file(results.join("tunables").join(f)).unwrap();
    }
    // Killed before it wrote its plan: said as such, not as a folder that is not one.
    let early = results.join("size-sweep");
    std::fs::create_dir(&early).unwrap();
    std::fs::write(
        early.join("folder.json"),
        r#"{"schema": "alloclab.folder/2", "kind": "run", "complete": false, "started": "2026-11-27T00:00:00Z", "finished": null, "command_line": [], "files": []}"#,
    )
    .unwrap();
    let o = lab(&["report", results.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(results.join("index.html")).unwrap();
    let answer = &html[html.find(r#"<section id="answer">"#).unwrap()..];
    let answer = &answer[..answer.find("</section>").unwrap()];
    assert!(!answer.contains("folder chain"), "{answer}");
    assert!(!answer.contains("slower"), "{answer}");
    assert!(
        answer.contains("numpy-temporaries is INCOMPLETE: glibc&#39;s in-place and out-of-place cells do not both have results yet"),
        "{answer}"
    );
    assert!(html.contains("Not compared (INCOMPLETE"), "{html}");
    let page = std::fs::read_to_string(results.join("tunables/report.html")).unwrap();
    assert!(page.contains("<title>INCOMPLETE"), "{page}");
    assert!(
        html.contains(
            "its run was stopped before it wrote its plan (plan.json): nothing of it was measured"
        ),
        "{html}"
    );
    let o = lab(&["report", early.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("stopped before it wrote its plan"),
        "{}",
        stderr(&o)
    );
    assert!(!html.contains("No knob set changed"), "{html}");
    assert!(
        !html.contains("No knob set compared so far changed"),
        "{html}"
    );
}

/// What is not measured is not stated, with nothing killed either: a knob set whose
/// experiment has no cell of its allocator's defaults is "not compared" (never "changed
/// nothing"); the founding verdict is one thread's, never two threads'; a folder another
/// alloclab is writing now is said to be still going, not stopped.
#[test]
fn an_index_states_only_what_its_folders_measured() {
    use alloclab::export::folder::{Claim, Folder, Kind};
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results");
    let budget = "\n[budget]\nmin_time = 0\nmin_iters = 5\nmax_iters = 5\nwarmup_time = 0\nwarmup_iters = 2\n";
    let mut exps = Vec::new();
    for (name, text) in [
        ("numpy-temporaries", "workloads = [\"scale\"]\nvariants = [\"in-place\", \"out-of-place\"]\nallocators = [\"system\"]\nthreads = [2]\nsizes = [\"1e6\"]\n"),
        ("tunables", "workloads = [\"scale\"]\nvariants = [\"out-of-place\"]\nallocators = [\"system:top_pad=64M\"]\nsizes = [\"1e6\"]\n"),
    ] {
        let exp = dir.path().join(format!("{name}.toml"));
        std::fs::write(&exp, format!("description = \"{name}\"\n{text}{budget}")).unwrap();
        exps.push(exp);
    }
    let mut args = vec![
        "run",
        "--no-calibration",
        "--out",
        results.to_str().unwrap(),
    ];
    args.extend(exps.iter().map(|e| e.to_str().unwrap()));
    let o = lab(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    // A folder being written by another alloclab (this test holds its lock).
    let mut busy = Folder::open(&results.join("threads"), Kind::Run, Claim::Own).unwrap();
    busy.start(true).unwrap();
    let o = lab(&["report", results.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let html = std::fs::read_to_string(results.join("index.html")).unwrap();
    let answer = &html[html.find(r#"<section id="answer">"#).unwrap()..];
    let answer = &answer[..answer.find("</section>").unwrap()];
    assert!(
        !answer.contains("slower") && !answer.contains("faster"),
        "two threads' verdict: {answer}"
    );
    assert!(
        html.contains("Not compared (the experiment has no cell of their allocator's defaults)"),
        "{html}"
    );
    assert!(!html.contains("No knob set changed"), "{html}");
    assert!(
        html.contains(&format!(
            "its run is still going (alloclab pid {} is writing it)",
            std::process::id()
        )),
        "{html}"
    );
    assert!(!html.contains("stopped before it wrote its plan"), "{html}");
    drop(busy);
}
