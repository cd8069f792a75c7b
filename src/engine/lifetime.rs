//! No child outlives the driver: workers and exec'd commands get a parent-death signal
//! (checked against the driver having died before it was set), and `alloclab exec`
//! becomes a child subreaper, so that descendants that leave the command's process group
//! or session come back to it and are killed after the run.

/// Makes the calling child receive SIGKILL when `parent` (the pid of the process that
/// forked it) dies; if `parent` has already died, exits at once.
///
/// # Safety
/// Meant for a child between fork and exec: only async-signal-safe calls (prctl,
/// getppid, _exit).
pub unsafe fn die_with_parent(parent: libc::pid_t) {
    // SAFETY: as this function's.
    unsafe { die_with_parent_by(parent, libc::SIGKILL) }
}

/// As [`die_with_parent`], with `signal` as the parent-death signal: SIGTERM for perf
/// record, which on SIGTERM ends the program it records (SIGTERM to it, then waits for it
/// and writes its file) — killed outright, perf would leave that program running
/// orphaned, since a parent-death signal is not inherited across fork.
///
/// # Safety
/// As [`die_with_parent`].
pub unsafe fn die_with_parent_by(parent: libc::pid_t, signal: libc::c_int) {
    // SAFETY: prctl and getppid take and return plain integers; _exit never returns.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, signal, 0, 0, 0);
        // The parent may have died between fork and the prctl: then it is not ours.
        if libc::getppid() != parent {
            libc::_exit(127);
        }
    }
}

/// Set once this process is a subreaper: only then can orphaned descendants become its
/// children, and only then does [`kill_leftovers`] sweep.
static SUBREAPER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Makes this process the reaper of its orphaned descendants (PR_SET_CHILD_SUBREAPER).
pub fn become_subreaper() -> std::io::Result<()> {
    // SAFETY: prctl with integer arguments.
    if unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    SUBREAPER.store(true, std::sync::atomic::Ordering::SeqCst);
    Ok(())
}

/// This process's children, from /proc (every process whose parent is this one).
fn children() -> Vec<libc::pid_t> {
    let me = std::process::id() as libc::pid_t;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|pid| {
            let Ok(stat) = crate::files::read_to_string(format!("/proc/{pid}/stat")) else {
                return false;
            };
            // pid (comm) state ppid …: comm may hold spaces and parentheses.
            let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
            after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) == Some(me)
        })
        .collect()
}

/// The children the one spawn path is running now (several at once with `--jobs`): a
/// sweep after one run spares the others'.
static LIVE: std::sync::Mutex<Vec<libc::pid_t>> = std::sync::Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<libc::pid_t>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A running child of the spawn path: registered while it lives, so that
/// [`kill_leftovers`] after another run does not take it; unregistered when dropped
/// (after it has been reaped).
pub struct LiveChild(libc::pid_t);

/// Forks through `fork` with the registry held, so that no sweep in another thread sees
/// the new child before it is registered; `fork` returns the child's pid (0 in the child,
/// which must not return from it). A failed fork (a negative pid) registers nothing.
pub fn fork_registered(fork: impl FnOnce() -> libc::pid_t) -> (libc::pid_t, Option<LiveChild>) {
    let mut live = live();
    let pid = fork();
    if pid <= 0 {
        return (pid, None);
    }
    live.push(pid);
    (pid, Some(LiveChild(pid)))
}

impl Drop for LiveChild {
    fn drop(&mut self) {
        let mut live = live();
        if let Some(i) = live.iter().position(|&p| p == self.0) {
            live.swap_remove(i);
        }
    }
}

/// Kills and reaps every child of this process but those the spawn path is still running
/// ([`LiveChild`]), and the children they leave behind in turn (a subreaper inherits
/// them), until none is left. Returns how many were killed. Call it when a run has ended
/// and been reaped. Does nothing unless this process is a subreaper (the lab's commands
/// are, through [`crate::engine::begin`]): a library user — a test harness running
/// several runs at once — keeps its own children.
pub fn kill_leftovers() -> usize {
    if !SUBREAPER.load(std::sync::atomic::Ordering::SeqCst) {
        return 0;
    }
    // Held throughout: no run starts or ends while its siblings' leftovers are swept.
    let live = live();
    let mut killed = 0;
    // Each round kills one generation; a bound guards against a fork bomb racing us.
    for _ in 0..64 {
        let left: Vec<libc::pid_t> = children()
            .into_iter()
            .filter(|p| !live.contains(p))
            .collect();
        if left.is_empty() {
            break;
        }
        for pid in left {
            // SAFETY: kill and waitpid take plain integers; `pid` is our child, so it
            // cannot be reused before we reap it.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, std::ptr::null_mut(), 0);
            }
            killed += 1;
        }
    }
    killed
}
