//! CSV for tools: a header of field names, one row per record, empty cells where JSON has
//! null. Written with the `csv` crate, which quotes what needs quoting (commas, quotes,
//! line breaks).

use crate::model::summary::SummaryRow;
use serde::Serialize;

/// summary.csv: the summary rows under the summary field names.
pub fn to_csv(rows: &[SummaryRow]) -> String {
    csv_of(rows, &SummaryRow::empty())
}

/// One CSV field of a row written by hand: quoted when it holds a comma, a quote or a
/// line break (quotes doubled), as the `csv` crate writes it.
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A value as one CSV cell: a list of numbers as the numbers separated by spaces (no
/// JSON in a cell); anything else as its text.
fn cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(items) if items.iter().all(|i| i.is_number()) => items
            .iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

/// The behaviours of a row's figures in words ("2 behaviours of minor faults: 0 in 3
/// processes, 3,874 in 3"), of runs (exec) or processes.
fn behaviours(v: &serde_json::Value, of_runs: bool) -> String {
    let Ok(list) = serde_json::from_value::<Vec<crate::model::behaviours::Behaviours>>(v.clone())
    else {
        return cell(v);
    };
    let of = if of_runs { "runs" } else { "processes" };
    list.iter()
        .map(|b| crate::analysis::modes::describe(b, of))
        .collect::<Vec<_>>()
        .join("; ")
}

/// exec's `traced_differs` in words: "user_ms: traced 52, untraced 41 to 42; …".
fn deviations(v: &serde_json::Value) -> String {
    let Ok(list) =
        serde_json::from_value::<Vec<crate::analysis::command::TracedDeviation>>(v.clone())
    else {
        return cell(v);
    };
    list.iter()
        .map(|d| {
            format!(
                "{}: traced {}, untraced {} to {}",
                d.figure, d.traced, d.untraced_min, d.untraced_max
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// CSV of serializable rows: the header is `empty`'s field names (so that it is the same
/// whatever the rows hold), the cells the rows' values, empty where JSON has null. No
/// JSON in a cell: a list of numbers (`process_p50_ns`) is its numbers separated by
/// spaces, `behaviours` (and exec's `traced_differs`) each item in words separated by
/// `; ` (as data they are in the JSON forms).
pub fn csv_of<T: Serialize>(rows: &[T], empty: &T) -> String {
    let header: Vec<String> = match serde_json::to_value(empty) {
        Ok(serde_json::Value::Object(m)) => m.keys().cloned().collect(),
        _ => Vec::new(),
    };
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    // Writing into a Vec cannot fail for I/O; a record of the header's length always fits.
    let _ = w.write_record(&header);
    for r in rows {
        let Ok(serde_json::Value::Object(obj)) = serde_json::to_value(r) else {
            continue;
        };
        let cells: Vec<String> = header
            .iter()
            .map(|k| match (k.as_str(), obj.get(k)) {
                ("behaviours", Some(v)) => behaviours(v, obj.contains_key("runs")),
                ("traced_differs", Some(v)) => deviations(v),
                (_, v) => v.map_or(String::new(), cell),
            })
            .collect();
        let _ = w.write_record(&cells);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Row {
        name: Option<String>,
        value: Option<f64>,
    }

    #[test]
    fn quotes_separators_and_line_breaks_and_parses_back() {
        let rows = [
            Row {
                name: Some("a,b".into()),
                value: Some(1.5),
            },
            Row {
                name: Some("line\r\nbreak \"q\"".into()),
                value: None,
            },
        ];
        let text = csv_of(
            &rows,
            &Row {
                name: None,
                value: None,
            },
        );
        let mut r = csv::Reader::from_reader(text.as_bytes());
        assert_eq!(r.headers().unwrap(), vec!["name", "value"]);
        let back: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
        assert_eq!(back.len(), 2);
        assert_eq!(&back[0][0], "a,b");
        assert_eq!(&back[0][1], "1.5");
        assert_eq!(&back[1][0], "line\r\nbreak \"q\"");
        assert_eq!(&back[1][1], "");
    }
}
