//! A small key-value server that speaks RESP (the redis protocol): PING, GET, SET, DEL,
//! INFO memory and SHUTDOWN, one thread per connection, one store behind a lock. It
//! allocates through malloc (Rust's System allocator), so `alloclab serve` can run it
//! under every allocator; its `used_memory` is what a counting wrapper says is live.
//!
//!   resp_kv --port 6400 [--stall-every N --stall-ms M]
//!
//! With `--stall-every N`, every Nth request holds the store's lock for M ms before it is
//! answered: a server stall, as a long purge or a fork would make, that every request due
//! meanwhile waits behind (what the tests of the corrected latency inject).

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The live bytes the program holds, as a counting wrapper over malloc sees them.
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to System, counting sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        LIVE.fetch_add(l.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is System's.
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        LIVE.fetch_add(new, Ordering::Relaxed);
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
        // SAFETY: as above.
        unsafe { System.realloc(p, l, new) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

struct Stall {
    every: u64,
    ms: u64,
    count: AtomicU64,
}

/// Reads one command (an array of bulk strings); None at the end of the connection.
fn read_command(r: &mut impl BufRead) -> std::io::Result<Option<Vec<Vec<u8>>>> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "bad command");
    let n: usize = line
        .trim_end()
        .strip_prefix('*')
        .and_then(|n| n.parse().ok())
        .ok_or_else(bad)?;
    let mut args = Vec::with_capacity(n);
    for _ in 0..n {
        line.clear();
        r.read_line(&mut line)?;
        let len: usize = line
            .trim_end()
            .strip_prefix('$')
            .and_then(|n| n.parse().ok())
            .ok_or_else(bad)?;
        let mut arg = vec![0u8; len + 2];
        r.read_exact(&mut arg)?;
        arg.truncate(len);
        args.push(arg);
    }
    Ok(Some(args))
}

fn serve(stream: TcpStream, store: Arc<Mutex<HashMap<Vec<u8>, Vec<u8>>>>, stall: Arc<Stall>) {
    let _ = stream.set_nodelay(true);
    let Ok(read_half) = stream.try_clone() else {
        return;
    };
    let mut r = BufReader::new(read_half);
    let mut w = BufWriter::new(stream);
    while let Ok(Some(args)) = read_command(&mut r) {
        let name = args
            .first()
            .map(|a| a.to_ascii_uppercase())
            .unwrap_or_default();
        {
            let mut map = store.lock().unwrap_or_else(|e| e.into_inner());
            if stall.every > 0
                && stall.count.fetch_add(1, Ordering::Relaxed) % stall.every == stall.every - 1
            {
                std::thread::sleep(Duration::from_millis(stall.ms));
            }
            let reply: Vec<u8> = match (&name[..], args.len()) {
                (b"PING", _) => b"+PONG\r\n".to_vec(),
                (b"GET", 2) => match map.get(&args[1]) {
                    Some(v) => {
                        let mut out = format!("${}\r\n", v.len()).into_bytes();
                        out.extend_from_slice(v);
                        out.extend_from_slice(b"\r\n");
                        out
                    }
                    None => b"$-1\r\n".to_vec(),
                },
                (b"SET", 3) => {
                    map.insert(args[1].clone(), args[2].clone());
                    b"+OK\r\n".to_vec()
                }
                (b"DEL", 2) => {
                    format!(":{}\r\n", u8::from(map.remove(&args[1]).is_some())).into_bytes()
                }
                (b"INFO", _) => {
                    let text = format!(
                        "# Memory\r\nused_memory:{}\r\n",
                        LIVE.load(Ordering::Relaxed)
                    );
                    format!("${}\r\n{text}\r\n", text.len()).into_bytes()
                }
                (b"SHUTDOWN", _) => {
                    let _ = w.flush();
                    std::process::exit(0);
                }
                _ => b"-ERR unknown command\r\n".to_vec(),
            };
            drop(map);
            if w.write_all(&reply).is_err() {
                return;
            }
        }
        // Answers go out when no further request is already in.
        if r.buffer().is_empty() && w.flush().is_err() {
            return;
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .map(|v| {
                v.parse::<u64>().unwrap_or_else(|_| {
                    eprintln!("resp_kv: {name} {v}: not a whole number");
                    std::process::exit(2)
                })
            })
    };
    let Some(port) = value("--port") else {
        eprintln!("usage: resp_kv --port N [--stall-every N --stall-ms M]");
        std::process::exit(2);
    };
    let stall = Arc::new(Stall {
        every: value("--stall-every").unwrap_or(0),
        ms: value("--stall-ms").unwrap_or(50),
        count: AtomicU64::new(0),
    });
    let listener = TcpListener::bind(("127.0.0.1", port as u16)).unwrap_or_else(|e| {
        eprintln!("resp_kv: cannot listen on 127.0.0.1:{port}: {e}");
        std::process::exit(1)
    });
    let store = Arc::new(Mutex::new(HashMap::new()));
    for stream in listener.incoming().flatten() {
        let (store, stall) = (store.clone(), stall.clone());
        std::thread::spawn(move || serve(stream, store, stall));
    }
}
