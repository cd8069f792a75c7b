//! Layout: what the lab randomises per process (the heap's starting offset, the
//! environment's length) moves where glibc's heap puts a buffer and is kept in the
//! record; what the allocator decides (mimalloc's aligned blocks) it does not move; a
//! knob's cell gets an environment of the same length as its defaults'.

use crate::common::*;
use alloclab::model::budget::Budget;
use alloclab::model::counts::CounterMode;
use alloclab::model::layout::{LayoutDraw, Role};
use alloclab::model::record::RunRecord;
use alloclab::model::run::{RunSpec, WorkerRequest};
use alloclab::model::spec::{Allocator, Variant, Workload};

fn spec(allocator: Allocator, knobs: &str) -> RunSpec {
    RunSpec {
        allocator,
        workload: Workload::Scale,
        variant: Variant::InPlace,
        size: 1_000_000,
        threads: 1,
        seed: 42,
        knobs: knobs
            .parse::<alloclab::model::knobs::AllocatorSpec>()
            .unwrap()
            .knobs,
        thp: Default::default(),
        library: None,
    }
}

fn budget() -> Budget {
    Budget::exactly(2, 6)
}

/// One worker run of `spec` with the heap shifted by `shift` bytes.
fn shifted(spec: &RunSpec, shift: u32) -> RunRecord {
    let request = WorkerRequest {
        spec: spec.clone(),
        budget: budget(),
        counters: CounterMode::Off,
        timeline: false,
        cpu: None,
        layout: Some(LayoutDraw {
            heap_shift_bytes: shift,
            env_pad_bytes: 0,
        }),
        stall: None,
    };
    let out = std::process::Command::new(worker_path(spec.allocator))
        .args(["--request", &serde_json::to_string(&request).unwrap()])
        .output()
        .unwrap();
    let r = parse_record(&out);
    assert_eq!(r.layout, request.layout, "the record keeps the draw");
    r
}

/// The output buffer's usual offset past a 64-byte boundary.
fn output_offset(r: &RunRecord) -> u64 {
    let b = r
        .buffers
        .iter()
        .find(|b| b.role == Role::Output)
        .expect("the output buffer is noted");
    assert_eq!(b.bytes, 8_000_000);
    // Warm-up, measured iterations and the checksum's: each allocated one.
    assert!(b.allocations >= 9, "{b:?}");
    b.usual_mod_64().unwrap().0
}

#[test]
fn a_heap_shift_moves_glibcs_output_buffer_and_not_mimallocs() {
    let system = spec(Allocator::System, "system");
    let offsets: Vec<u64> = [0, 16, 32, 48]
        .iter()
        .map(|&s| output_offset(&shifted(&system, s)))
        .collect();
    // Each 16 bytes more of shift puts glibc's heap block 16 bytes further on.
    for w in offsets.windows(2) {
        assert_eq!((w[1] + 64 - w[0]) % 64, 16, "{offsets:?}");
    }
    // mimalloc hands out its large blocks on 64-byte boundaries whatever the shift.
    let mimalloc = spec(Allocator::Mimalloc, "mimalloc");
    for s in [0, 16, 48] {
        assert_eq!(output_offset(&shifted(&mimalloc, s)), 0);
    }
}

#[test]
fn every_process_draws_its_own_layout_and_keeps_it_in_its_record() {
    let dir = driver_path().parent().unwrap().to_path_buf();
    let executor = alloclab::engine::ProcessExecutor::new(
        dir,
        CounterMode::Off,
        std::time::Duration::from_secs(120),
    )
    .unwrap();
    let s = spec(Allocator::System, "system:arena_max=8");
    let records: Vec<RunRecord> = (0..4)
        .map(|_| {
            executor
                .spawn_worker(&s, &budget(), CounterMode::Off)
                .unwrap()
        })
        .collect();
    let draws: Vec<LayoutDraw> = records.iter().map(|r| r.layout.unwrap()).collect();
    assert!(
        draws.windows(2).any(|w| w[0] != w[1]),
        "four processes drew one layout: {draws:?}"
    );
    // The knob was set by the driver and took effect.
    for r in &records {
        assert_eq!(r.knobs_effective["arena_max"], "8");
    }
}

#[test]
fn a_knobs_cell_gets_an_environment_of_its_defaults_length() {
    let bytes = |s: &RunSpec, pad: u32| -> usize {
        alloclab::engine::executor::worker_env(
            s,
            Some(LayoutDraw {
                heap_shift_bytes: 0,
                env_pad_bytes: pad,
            }),
        )
        .iter()
        .map(|(k, v)| k.len() + v.len() + 2)
        .sum()
    };
    let defaults = spec(Allocator::System, "system");
    let knob = spec(Allocator::System, "system:arena_max=8,top_pad=64M");
    assert_eq!(bytes(&defaults, 0), bytes(&knob, 0));
    assert_eq!(bytes(&defaults, 160), bytes(&knob, 0) + 160);
    let env = alloclab::engine::executor::worker_env(&knob, None);
    assert!(env
        .iter()
        .any(|(k, v)| k == "GLIBC_TUNABLES"
            && v.to_string_lossy().contains("glibc.malloc.arena_max=8")));
}
