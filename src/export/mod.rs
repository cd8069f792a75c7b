//! Files written for people and tools: HdrHistogram percentile files, SVG plots, the
//! results folder with its summary and REPORT.md.

pub mod hdr;
pub mod plots;
pub mod report_md;
pub mod results;
pub mod svg;
