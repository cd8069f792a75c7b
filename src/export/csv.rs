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

fn cell(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// CSV of serializable rows: the header is `empty`'s field names (so that it is the same
/// whatever the rows hold), the cells the rows' values, empty where JSON has null.
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
            .map(|k| obj.get(k).map_or(String::new(), cell))
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
