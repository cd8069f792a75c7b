//! The service workload: latency from each request's intended start (open loop), shown
//! to count a stall for every request it delays where the requests' own times count it
//! once; the store's bytes against the counting wrapper's; the same answer under every
//! allocator; and the experiment file through `alloclab run` to its findings.

use crate::common::*;
use alloclab::model::budget::Budget;
use alloclab::model::counts::CounterMode;
use alloclab::model::run::{RunSpec, Stall, WorkerRequest};
use alloclab::model::spec::{Allocator, Variant, Workload};

fn service_request(
    allocator: Allocator,
    variant: Variant,
    rate: u64,
    requests: u64,
) -> WorkerRequest {
    WorkerRequest {
        spec: RunSpec {
            allocator,
            workload: Workload::Service,
            variant,
            size: rate,
            threads: 1,
            seed: 11,
            knobs: Vec::new(),
            thp: Default::default(),
            library: None,
        },
        budget: Budget {
            warmup_time_ns: 0,
            warmup_iters: 10,
            min_time_ns: 0,
            min_iters: requests,
            max_iters: requests,
            idle_ns: 0,
        },
        counters: CounterMode::Off,
        timeline: false,
        cpu: None,
        layout: None,
        stall: None,
    }
}

fn run(request: &WorkerRequest) -> alloclab::model::record::RunRecord {
    let json = serde_json::to_string(request).unwrap();
    parse_record(
        &std::process::Command::new(worker_path(request.spec.allocator))
            .args(["--request", &json])
            .output()
            .unwrap(),
    )
}

#[test]
fn a_stall_counts_for_every_request_it_delays_from_the_intended_start_and_once_in_the_requests_own_times(
) {
    // 5,000 requests at 5,000/s (one every 200 µs); every 500th sleeps 40 ms inside its
    // handling: 10 stalls, each delaying the ~200 requests meant to start during it.
    let mut request = service_request(Allocator::System, Variant::OutOfPlace, 5_000, 5_000);
    request.stall = Some(Stall {
        every: 500,
        ns: 40_000_000,
    });
    let r = run(&request);
    let s = r
        .service
        .as_ref()
        .expect("a service run has its service figures");
    assert_eq!(r.iterations, 5_000);
    assert_eq!(s.offered_per_s, 5_000);
    // The stalled requests themselves: 10 of 5,000 (0.2 %) took 40 ms or more of their
    // own, so their own p99 lies below the stall and their own max at or above it.
    assert!(s.service_max_ns >= 40_000_000, "{s:?}");
    assert!(s.service_p99_ns < 20_000_000, "{s:?}");
    // From the intended start, each stall delays ~200 requests by 40 ms down to 0: about
    // 5 % of all requests are 20 ms late or more, so the p99 is.
    assert!(r.p99_ns >= 20_000_000, "p99 {} {s:?}", r.p99_ns);
    assert!(r.max_ns >= s.service_max_ns, "{} {s:?}", r.max_ns);
    assert!(r.p50_ns >= s.service_p50_ns, "{} {s:?}", r.p50_ns);
    assert!(s.start_lag_max_ns >= 20_000_000, "{s:?}");
    // The histogram holds one value per request, as the record's percentiles say.
    let h = r.histogram.decode().unwrap();
    assert_eq!(h.len(), 5_000);
}

#[test]
fn the_stores_bytes_lie_within_the_programs_live_bytes_and_every_allocator_answers_alike() {
    let mut checksums = Vec::new();
    for a in [Allocator::System, Allocator::Jemalloc, Allocator::Mimalloc] {
        for v in [Variant::OutOfPlace, Variant::Reuse] {
            let r = run(&service_request(a, v, 200_000, 20_000));
            let s = r.service.as_ref().unwrap();
            // The counting wrapper sees every byte the store holds, and more (the
            // harness's histograms, the key table).
            let (live_start, live_end) = (s.live_start_bytes.unwrap(), s.live_end_bytes.unwrap());
            let (held_start, held_end) = (s.held_start_bytes.unwrap(), s.held_end_bytes.unwrap());
            assert!(held_start > 1 << 20, "{s:?}");
            assert!(live_start >= held_start, "{a} {v}: {s:?}");
            assert!(live_end >= held_end, "{a} {v}: {s:?}");
            // Both live figures move by what the store moved, give or take the request
            // in flight (nothing else allocates between the two reads).
            let store_moved = held_end as i64 - held_start as i64;
            let live_moved = live_end as i64 - live_start as i64;
            assert!((store_moved - live_moved).abs() < 4 << 10, "{a} {v}: {s:?}");
            // The reuse variant allocates only the stored items; out-of-place also each
            // request's key (and a read buffer or reply).
            let allocs = r.per_iter[alloclab::model::metric::ALLOCS].unwrap();
            match v {
                Variant::Reuse => assert!(allocs < 0.3, "{a} {v}: {allocs}"),
                _ => assert!(allocs > 1.5, "{a} {v}: {allocs}"),
            }
            checksums.push(r.checksum.clone());
        }
    }
    checksums.dedup();
    assert_eq!(checksums.len(), 1, "{checksums:?}");
}

#[test]
fn the_service_refuses_the_variants_it_has_not_and_says_which_it_has() {
    let out = std::process::Command::new(worker_path(Allocator::System))
        .args(["--workload=service", "--variant=in-place", "--size=1000"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let err = stderr(&out);
    assert!(
        err.contains("out-of-place") && err.contains("reuse"),
        "{err}"
    );
    // An experiment file that lists one is refused before anything runs.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("svc.toml");
    std::fs::write(
        &file,
        "description = \"x\"\nworkloads = [\"service\"]\nvariants = [\"in-place\"]\nallocators = [\"system\"]\nsizes = [1000]\n",
    )
    .unwrap();
    let out = lab(&[
        "run",
        "--out",
        dir.path().join("o").to_str().unwrap(),
        file.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("no in-place variant"),
        "{}",
        stderr(&out)
    );
    assert!(!dir.path().join("o").join("svc").exists());
}

#[test]
fn the_service_experiment_answers_with_each_allocators_tail_and_memory_per_live_byte() {
    let dir = tempfile::tempdir().unwrap();
    let out = lab(&[
        "run",
        "--quick",
        "--out",
        dir.path().to_str().unwrap(),
        &experiment_file("service.toml"),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let folder = dir.path().join("service");
    let findings = json(&std::fs::read(folder.join("findings.json")).unwrap());
    let tails: Vec<&serde_json::Value> = findings["price_of_speed"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["figures"]["kind"] == "service-tail")
        .collect();
    // One per allocator and variant at the quick run's one rate.
    assert_eq!(tails.len(), 6, "{findings:#}");
    for t in &tails {
        let f = &t["figures"];
        let text = t["text"].as_str().unwrap();
        assert!(text.contains("50,000 requests/s"), "{text}");
        assert!(f["p99_ns"].as_f64().unwrap() >= f["service_p99_ns"].as_f64().unwrap() * 0.5);
        let per_live = f["resident_per_live"].as_f64().unwrap();
        assert!(per_live > 0.5, "{text}");
    }
    // Every surface renders the same items.
    let report = std::fs::read_to_string(folder.join("REPORT.md")).unwrap();
    let html = std::fs::read_to_string(folder.join("report.html")).unwrap();
    for t in &tails {
        let subject = t["parts"]["lead"].as_str().unwrap();
        assert!(report.contains(subject), "{subject}");
        assert!(
            html.contains(&alloclab::export::escape_markup(subject)),
            "{subject}"
        );
    }
    assert!(
        !report.contains("per f64 buffer"),
        "a rate has no buffer size"
    );
}
