//! What every workload is to the measured loop: a kernel that runs one iteration at a
//! time, and says whether it is paced (served at a fixed rate) and what it holds.

/// One prepared workload: input generated, reuse buffers allocated. `iterate` is what the
/// measured loop times; it must allocate only what the variant itself allocates.
pub trait Kernel {
    /// Runs one iteration and keeps the optimiser from discarding its output.
    fn iterate(&mut self);
    /// Runs one more iteration and returns a checksum of its output.
    fn checksum(&mut self) -> u64;
    /// For a workload served at a fixed rate (open loop): the time between the intended
    /// starts of this thread's iterations, in ns. None: iterations run back to back.
    fn pace_ns(&self) -> Option<u64> {
        None
    }
    /// The bytes of data the workload holds between iterations (a store's keys and
    /// values), where it keeps such data; None otherwise.
    fn held_bytes(&self) -> Option<u64> {
        None
    }
}

/// A kernel that can run on any thread.
pub type BoxedKernel = Box<dyn Kernel + Send>;
