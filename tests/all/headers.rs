//! The columns of the lab's row files, as users' scripts read them: summary.csv's
//! (compare, run), exec's, sweep's and a built-in cell's trace timeline, in their order. The rows carry their figures
//! keyed by the metric registry; these headers are what they must still serialise to
//! (each was read from the files the lab wrote before the registry carried the figures;
//! the memory registry's seven columns came after, in summary.csv after `rss_peak_bytes`,
//! in exec's at the end; the huge-page fault pair after `alloc_bytes_per_iter`; the
//! peak's interval before the mean's in summary.csv, and in exec's all three at its end).

use alloclab::analysis::command::ExecRow;
use alloclab::engine::program::PointRow;
use alloclab::export::csv::csv_of;
use alloclab::model::summary::SummaryRow;

const SUMMARY: &str = "run_id,allocator,allocator_spec,workload,variant,size,threads,seed,status,error,iterations,min_ns,p50_ns,p90_ns,p99_ns,p999_ns,max_ns,mean_ns,throughput_gb_per_s,minflt_per_iter,majflt_per_iter,nvcsw_per_iter,nivcsw_per_iter,utime_ns_per_iter,stime_ns_per_iter,brk_per_iter,mmap_per_iter,munmap_per_iter,madvise_per_iter,mremap_per_iter,syscalls_per_iter,memory_syscalls_per_iter,syscall_counter,allocs_per_iter,alloc_bytes_per_iter,huge_faults_per_iter,faulted_bytes_per_iter,rss_start_bytes,rss_end_bytes,rss_peak_bytes,mem_peak_bytes,mem_mean_bytes,mem_last_bytes,huge_mean_bytes,freed_bytes,half_returned_ms,huge_coverage_pct,mem_hwm_bytes,mem_peak_ci_low_bytes,mem_peak_ci_high_bytes,mem_mean_ci_low_bytes,mem_mean_ci_high_bytes,mem_last_ci_low_bytes,mem_last_ci_high_bytes,checksum,timer_overhead_ns,harness_overhead_ns_per_sample,allocator_version,processes,p50_ci_low_ns,p50_ci_high_ns,p99_ci_low_ns,p99_ci_high_ns,ci_coverage,minflt_per_iter_min,minflt_per_iter_max,memory_syscalls_per_iter_min,memory_syscalls_per_iter_max,faulted_bytes_per_iter_min,faulted_bytes_per_iter_max,vs_in_place,vs_in_place_ci_low,vs_in_place_ci_high,vs_in_place_verdict,process_p50_ns,behaviours,pooled_p50_ns";

const EXEC: &str = "allocator,status,error,runs,wall_median_ms,wall_min_ms,wall_max_ms,wall_mad_pct,wall_ci_low_ms,wall_ci_high_ms,wall_ci_coverage,vs_baseline,vs_baseline_ci_low,vs_baseline_ci_high,vs_baseline_verdict,baseline,user_ms,sys_ms,minflt,majflt,voluntary_csw,involuntary_csw,peak_rss_mib,brk,mmap,munmap,madvise,mremap,syscalls,syscall_counter,allocator_version,preload,malloc_from,command,run_wall_ms,complete,stopped_by,runs_planned,behaviours,traced_differs,mem_peak_bytes,mem_mean_bytes,mem_last_bytes,huge_mean_bytes,freed_bytes,half_returned_ms,huge_coverage_pct,mem_hwm_bytes,mem_peak_ci_low_bytes,mem_peak_ci_high_bytes,mem_mean_ci_low_bytes,mem_mean_ci_high_bytes,mem_last_ci_low_bytes,mem_last_ci_high_bytes";

const POINT: &str = "size,allocator,status,error,runs,per,time_ns,time_ci_low_ns,time_ci_high_ns,ci_coverage,minflt,memory_syscalls,brk,mmap,munmap,madvise,minflt_noise,memory_syscalls_noise,peak_rss_mib,run_wall_ms,syscall_counter";

const TRACE_TIMELINE: &str = "iteration,start_ms,elapsed_ns,minflt,brk,mmap,munmap,madvise,mremap,brk_delta_bytes,mmap_bytes,munmap_bytes,madvise_bytes,rss_bytes,heap_top_offset_bytes";

/// A CSV's header line.
fn first(csv: String) -> String {
    csv.lines().next().unwrap_or("").to_string()
}

#[test]
fn row_files_keep_their_columns_in_their_order() {
    assert_eq!(first(csv_of(&[], &SummaryRow::empty())), SUMMARY);
    assert_eq!(first(csv_of(&[], &ExecRow::default())), EXEC);
    assert_eq!(first(csv_of(&[], &PointRow::default())), POINT);
    assert_eq!(alloclab::export::trace::timeline_header(), TRACE_TIMELINE);
}

#[test]
fn exec_rows_read_back_their_registry_figures() {
    // A row as exec's JSON holds it, read and written again: every per-run figure in
    // its column, nothing lost to the flattened registry.
    let line = "allocator,runs,user_ms,minflt,peak_rss_mib,brk,mremap,syscall_counter,mem_mean_bytes\nsystem,3,1.5,4100,27.5,2,0,perf,20480000\n";
    let mut reader = csv::Reader::from_reader(line.as_bytes());
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    let record = reader.records().next().unwrap().unwrap();
    let mut json = serde_json::Map::new();
    for (k, v) in header.iter().zip(record.iter()) {
        let value = match (v.parse::<u64>(), v.parse::<f64>()) {
            (Ok(n), _) => serde_json::Value::from(n),
            (_, Ok(x)) => serde_json::Value::from(x),
            _ => serde_json::Value::from(v),
        };
        json.insert(k.clone(), value);
    }
    json.insert("status".into(), "ok".into());
    let row: ExecRow = serde_json::from_value(serde_json::Value::Object(json)).unwrap();
    let back = serde_json::to_value(&row).unwrap();
    for (k, v) in [
        ("user_ms", 1.5),
        ("minflt", 4100.0),
        ("peak_rss_mib", 27.5),
        ("brk", 2.0),
        ("mremap", 0.0),
    ] {
        assert_eq!(back[k], serde_json::json!(v), "{k}");
    }
    // A memory figure is whole bytes: written back as an integer.
    assert_eq!(back["mem_mean_bytes"], serde_json::json!(20480000u64));
    assert_eq!(back["mem_last_bytes"], serde_json::Value::Null);
    assert!(back["mmap"].is_null(), "a figure not given is null, not 0");
    assert_eq!(back["syscall_counter"], "perf");
}
