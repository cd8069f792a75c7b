//! `alloclab calibrate`: what observing costs here, printed as lines or JSON.

use crate::cli::CalibrateArgs;
use crate::engine::{calibrate, preflight};
use crate::error::{Error, Result};
use crate::model::knobs::AllocatorSpec;
use crate::model::run::RunSpec;
use crate::model::spec::{Variant, Workload};

pub fn run(args: &CalibrateArgs) -> Result<()> {
    let alloc: AllocatorSpec = args
        .allocator
        .parse()
        .map_err(|e| Error::BadInput(format!("--allocator: {e}")))?;
    let founding_case = RunSpec {
        allocator: alloc.allocator,
        workload: Workload::Scale,
        variant: Variant::OutOfPlace,
        size: args.size,
        threads: 1,
        seed: 42,
        knobs: alloc.knobs.clone(),
        thp: Default::default(),
        library: alloc.library.clone(),
    };
    let workers = preflight::check(&[founding_case]).map_err(Error::bad)?;
    crate::engine::begin();
    let c = calibrate::calibrate(&workers, &alloc, args.size, args.min_time, args.rounds)
        .map_err(|e| Error::RunFailed(format!("calibration failed: {}", e.cause)))?;
    let text = if args.json {
        serde_json::to_string_pretty(&c).map_err(Error::failed)? + "\n"
    } else {
        c.describe().iter().map(|l| format!("{l}\n")).collect()
    };
    super::print_out(&text)
}
