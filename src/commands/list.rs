//! `alloclab list`: the allocators, workloads and variants the lab knows.

use crate::error::Result;
use crate::model::spec::{valid_names, Allocator, Variant, Workload};

pub fn run() -> Result<()> {
    super::print_out(&format!(
        "allocators: {}\nworkloads:  {}\nvariants:   {}\n",
        valid_names::<Allocator>(),
        valid_names::<Workload>(),
        valid_names::<Variant>()
    ))
}
