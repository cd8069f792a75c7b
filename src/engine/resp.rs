//! The lab's RESP client (the redis protocol, spoken by redis, valkey, KeyDB and
//! dragonfly): commands written as RESP arrays of bulk strings, replies read and
//! discarded, and the open-loop load of `alloclab serve` ([`drive`]).
//!
//! Open loop: request i of a phase is due at i / rate after the phase began, whatever
//! the server has answered. Each connection has a writer, which writes every request
//! that is due (all of them at once when it fell behind) and never waits for a reply,
//! and a reader, which reads the replies in order. A reply's latency is taken from its
//! request's intended start (a server stall delays every request due during it, as wrk2
//! counts) and, beside it, from the moment the request was written (what a closed-loop
//! client reports).

use crate::worker::service::{Wire, WireOp};
use hdrhistogram::Histogram;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Appends one command (a RESP array of bulk strings) to `out`.
pub fn encode(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// One reply, as far as the lab needs it.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    /// A simple string (`+OK`), an integer, a bulk string or an array, or nil.
    Ok,
    /// An error reply (`-ERR …`), with its text.
    Error(String),
    /// A bulk string whose bytes were kept ([`read_reply`] with `keep`).
    Text(String),
}

/// Reads one reply from `r`: its bytes are consumed whole (nested arrays included); a
/// bulk string's bytes are kept only with `keep`.
pub fn read_reply(r: &mut impl BufRead, keep: bool) -> std::io::Result<Reply> {
    let mut line = Vec::with_capacity(64);
    r.read_until(b'\n', &mut line)?;
    if line.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the server closed the connection",
        ));
    }
    if !line.ends_with(b"\r\n") || line.len() < 3 {
        return Err(bad(&line));
    }
    let body = &line[1..line.len() - 2];
    let number = || -> std::io::Result<i64> {
        std::str::from_utf8(body)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad(&line))
    };
    match line[0] {
        b'+' | b':' => Ok(Reply::Ok),
        b'-' => Ok(Reply::Error(String::from_utf8_lossy(body).into_owned())),
        b'$' => {
            let n = number()?;
            if n < 0 {
                return Ok(Reply::Ok);
            }
            let mut bytes = vec![0u8; n as usize + 2];
            r.read_exact(&mut bytes)?;
            if keep {
                bytes.truncate(n as usize);
                return Ok(Reply::Text(String::from_utf8_lossy(&bytes).into_owned()));
            }
            Ok(Reply::Ok)
        }
        b'*' => {
            let n = number()?;
            let mut first_error = None;
            for _ in 0..n.max(0) {
                if let Reply::Error(e) = read_reply(r, false)? {
                    first_error.get_or_insert(e);
                }
            }
            Ok(first_error.map_or(Reply::Ok, Reply::Error))
        }
        _ => Err(bad(&line)),
    }
}

fn bad(line: &[u8]) -> std::io::Error {
    let shown: String = String::from_utf8_lossy(line).chars().take(60).collect();
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("not a RESP reply: {shown:?}"),
    )
}

/// A connection for single commands (ready check, fill, INFO, SHUTDOWN).
pub struct Control {
    stream: BufReader<TcpStream>,
}

impl Control {
    /// Connects to `addr`, every read and write bounded by `timeout`.
    pub fn connect(addr: SocketAddr, timeout: Duration) -> std::io::Result<Self> {
        let s = TcpStream::connect_timeout(&addr, timeout)?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(timeout))?;
        s.set_write_timeout(Some(timeout))?;
        Ok(Control {
            stream: BufReader::new(s),
        })
    }

    /// Sends one command and reads its reply (bulk text kept).
    pub fn call(&mut self, args: &[&[u8]]) -> std::io::Result<Reply> {
        let mut out = Vec::new();
        encode(&mut out, args);
        self.stream.get_mut().write_all(&out)?;
        read_reply(&mut self.stream, true)
    }

    /// Sends one command without reading a reply (SHUTDOWN closes the connection).
    pub fn send(&mut self, args: &[&[u8]]) -> std::io::Result<()> {
        let mut out = Vec::new();
        encode(&mut out, args);
        self.stream.get_mut().write_all(&out)
    }

    /// Sets every filled key of `wire` to a value of its length, in pipelined batches;
    /// the keys set, or the first error.
    pub fn fill(&mut self, wire: &Wire, value: &[u8]) -> std::io::Result<u64> {
        let mut key = Vec::new();
        let mut out = Vec::new();
        let mut n = 0u64;
        for chunk in wire.filled().chunks(512) {
            out.clear();
            for &(k, len) in chunk {
                key.clear();
                wire.key(k, &mut key);
                encode(&mut out, &[b"SET", &key, &value[..len.min(value.len())]]);
            }
            self.stream.get_mut().write_all(&out)?;
            for _ in chunk {
                if let Reply::Error(e) = read_reply(&mut self.stream, false)? {
                    return Err(std::io::Error::other(format!("SET during the fill: {e}")));
                }
                n += 1;
            }
        }
        Ok(n)
    }

    /// `used_memory` of `INFO memory`, where the server gives it.
    pub fn used_memory(&mut self) -> Option<u64> {
        match self.call(&[b"INFO", b"memory"]).ok()? {
            Reply::Text(t) => t
                .lines()
                .find_map(|l| l.strip_prefix("used_memory:"))
                .and_then(|v| v.trim().parse().ok()),
            _ => None,
        }
    }
}

/// What one rate's phase gave.
pub struct Phase {
    /// Requests written.
    pub sent: u64,
    /// Replies read.
    pub answered: u64,
    /// Replies that were RESP errors.
    pub errors: u64,
    /// The first error reply's text, where there was one.
    pub first_error: Option<String>,
    /// Latency from each request's intended start, ns.
    pub from_intended: Histogram<u64>,
    /// Latency from each request's write, ns.
    pub from_sent: Histogram<u64>,
    /// The latest a request was written after it was due, ns.
    pub send_lag_max_ns: u64,
    /// The longest one write of requests took, ns: long when the server stopped reading
    /// and the socket's buffer filled (its stall holding the load back), short when a
    /// late send was the load generator's own lateness (its thread woke late).
    pub write_wait_max_ns: u64,
    /// How long requests were sent, ns.
    pub sent_for_ns: u64,
    /// Why the phase ended early or replies are missing (a connection failed).
    pub broken: Option<String>,
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds")
}

/// Sends `requests` (drawn in order from `wire`) at `rate_per_s` over `connections`
/// connections to `addr`, request i to connection i mod `connections`, and reads every
/// reply. Waits at most `drain` after the last request for the remaining replies.
pub fn drive(
    addr: SocketAddr,
    wire: &mut Wire,
    rate_per_s: u64,
    seconds: f64,
    connections: u32,
    drain: Duration,
) -> std::io::Result<Phase> {
    let n = ((rate_per_s as f64) * seconds).round().max(1.0) as usize;
    let requests: Vec<(WireOp, usize)> = (0..n).map(|_| wire.next_request()).collect();
    let keys: Vec<Vec<u8>> = (0..crate::worker::service::KEYS)
        .map(|k| {
            let mut v = Vec::new();
            wire.key(k, &mut v);
            v
        })
        .collect();
    let value = vec![b'v'; crate::worker::service::MAX_VALUE];
    let period_ns = 1e9 / rate_per_s.max(1) as f64;
    let c = connections.max(1) as usize;
    let mut streams = Vec::with_capacity(c);
    for _ in 0..c {
        let s = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(drain))?;
        streams.push(s);
    }
    let t0 = Instant::now() + Duration::from_millis(5);
    let ns_since = |t: Instant| t.saturating_duration_since(t0).as_nanos() as u64;
    let results = std::thread::scope(|scope| {
        let mut handles = Vec::new();
        for (ci, stream) in streams.into_iter().enumerate() {
            let reader_stream = stream.try_clone();
            let (tx, rx) = mpsc::channel::<Vec<(u64, u64)>>();
            let (requests, keys, value) = (&requests, &keys, &value);
            let writer = scope.spawn(move || -> (u64, u64, u64, Option<String>) {
                let mut stream = stream;
                let mut out = Vec::with_capacity(64 << 10);
                let mut lag_max = 0u64;
                let mut wait_max = 0u64;
                let mut sent = 0u64;
                let mut i = ci;
                while i < n {
                    if crate::ui::interrupt::interrupted() {
                        return (sent, lag_max, wait_max, Some("interrupted".into()));
                    }
                    let due = (i as f64 * period_ns) as u64;
                    let now = ns_since(Instant::now());
                    if now < due {
                        std::thread::sleep(Duration::from_nanos(due - now));
                        continue;
                    }
                    // Every request due by now, in one write (a thread cannot sleep more
                    // finely than the timer's slack, ~60 µs here; the lateness is in every
                    // latency from the intended start).
                    out.clear();
                    let mut batch = Vec::new();
                    while i < n && ((i as f64 * period_ns) as u64) <= now {
                        let (op, k) = requests[i];
                        let key = &keys[k][..];
                        match op {
                            WireOp::Get => encode(&mut out, &[b"GET", key]),
                            WireOp::Set(len) => encode(&mut out, &[b"SET", key, &value[..len]]),
                            WireOp::Delete => encode(&mut out, &[b"DEL", key]),
                        }
                        batch.push((i as f64 * period_ns) as u64);
                        i += c;
                    }
                    let before = ns_since(Instant::now());
                    if let Err(e) = stream.write_all(&out) {
                        let why = Some(format!("writing a request: {e}"));
                        return (sent, lag_max, wait_max, why);
                    }
                    let written = ns_since(Instant::now());
                    wait_max = wait_max.max(written - before);
                    sent += batch.len() as u64;
                    lag_max = lag_max.max(written.saturating_sub(batch[0]));
                    if tx
                        .send(batch.into_iter().map(|d| (d, written)).collect())
                        .is_err()
                    {
                        return (sent, lag_max, wait_max, Some("its reader stopped".into()));
                    }
                }
                (sent, lag_max, wait_max, None)
            });
            let reader = scope.spawn(move || {
                let mut intended = histogram();
                let mut from_sent = histogram();
                let (mut answered, mut errors) = (0u64, 0u64);
                let mut first_error = None;
                let mut broken = None;
                let stream = match reader_stream {
                    Ok(s) => s,
                    Err(e) => {
                        return (
                            intended,
                            from_sent,
                            answered,
                            errors,
                            first_error,
                            Some(e.to_string()),
                        )
                    }
                };
                let mut r = BufReader::with_capacity(256 << 10, stream);
                'batches: for batch in rx {
                    for (due, written) in batch {
                        match read_reply(&mut r, false) {
                            Ok(reply) => {
                                let now = ns_since(Instant::now());
                                intended.saturating_record(now.saturating_sub(due).max(1));
                                from_sent.saturating_record(now.saturating_sub(written).max(1));
                                answered += 1;
                                if let Reply::Error(e) = reply {
                                    errors += 1;
                                    first_error.get_or_insert(e);
                                }
                            }
                            Err(e) => {
                                broken = Some(format!("reading a reply: {e}"));
                                break 'batches;
                            }
                        }
                    }
                }
                (intended, from_sent, answered, errors, first_error, broken)
            });
            handles.push((writer, reader));
        }
        handles
            .into_iter()
            .map(|(w, r)| (w.join(), r.join()))
            .collect::<Vec<_>>()
    });
    let mut phase = Phase {
        sent: 0,
        answered: 0,
        errors: 0,
        first_error: None,
        from_intended: histogram(),
        from_sent: histogram(),
        send_lag_max_ns: 0,
        write_wait_max_ns: 0,
        sent_for_ns: ns_since(Instant::now()).min((n as f64 * period_ns) as u64),
        broken: None,
    };
    for (w, r) in results {
        let (Ok((sent, lag, wait, wbroken)), Ok((hi, hs, answered, errors, fe, rbroken))) = (w, r)
        else {
            phase.broken = Some("a load thread panicked".into());
            continue;
        };
        phase.sent += sent;
        phase.send_lag_max_ns = phase.send_lag_max_ns.max(lag);
        phase.write_wait_max_ns = phase.write_wait_max_ns.max(wait);
        phase.answered += answered;
        phase.errors += errors;
        if phase.first_error.is_none() {
            phase.first_error = fe;
        }
        let _ = phase.from_intended.add(&hi);
        let _ = phase.from_sent.add(&hs);
        if phase.broken.is_none() {
            phase.broken = wbroken.or(rbroken);
        }
    }
    Ok(phase)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        let mut out = Vec::new();
        encode(&mut out, &[b"SET", b"k", b"va"]);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$2\r\nva\r\n");
    }

    #[test]
    fn replies_of_every_kind_are_consumed_whole() {
        let wire = b"+OK\r\n$-1\r\n$3\r\nabc\r\n:5\r\n*2\r\n$1\r\nx\r\n-ERR no\r\n-WRONGTYPE x\r\n$2\r\nhi\r\n";
        let mut r = std::io::Cursor::new(&wire[..]);
        assert_eq!(read_reply(&mut r, false).unwrap(), Reply::Ok);
        assert_eq!(read_reply(&mut r, false).unwrap(), Reply::Ok);
        assert_eq!(read_reply(&mut r, false).unwrap(), Reply::Ok);
        assert_eq!(read_reply(&mut r, false).unwrap(), Reply::Ok);
        assert_eq!(
            read_reply(&mut r, false).unwrap(),
            Reply::Error("ERR no".into())
        );
        assert_eq!(
            read_reply(&mut r, false).unwrap(),
            Reply::Error("WRONGTYPE x".into())
        );
        assert_eq!(read_reply(&mut r, true).unwrap(), Reply::Text("hi".into()));
        assert!(read_reply(&mut r, false).is_err(), "the end is an error");
        let mut junk = std::io::Cursor::new(&b"HTTP/1.1 400\r\n"[..]);
        let e = read_reply(&mut junk, false).unwrap_err().to_string();
        assert!(e.contains("not a RESP reply"), "{e}");
    }
}
