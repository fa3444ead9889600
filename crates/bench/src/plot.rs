//! SVG plots of a run: E+ and E− per engine over the update sizes (log scale), one
//! file per workload, and the peak memory of a full materialization as bars.

use crate::Error;
use crate::report::{Results, Status};
use crate::worker::Mode;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn err(e: impl std::fmt::Display) -> Error {
    Error::Plot(e.to_string())
}

/// Time of E+ and E− per engine and update size, for one workload.
pub fn times(results: &Results, workload: &str, path: &Path) -> Result<(), Error> {
    let updates = &results.updates;
    let mut series = Vec::new();
    for (i, e) in results.engines.iter().enumerate() {
        for (label, plus) in [("E+", true), ("E−", false)] {
            let points: Vec<(f64, f64)> = updates
                .iter()
                .enumerate()
                .filter_map(|(k, &u)| {
                    results
                        .median(workload, e, Mode::Update, u, |m| {
                            m.report
                                .as_ref()
                                .and_then(|r| if plus { r.eplus_s } else { r.eminus_s })
                        })
                        .map(|t| (k as f64, t.max(1e-6)))
                })
                .collect();
            if !points.is_empty() {
                series.push((
                    format!("{e} {label}"),
                    COLORS[i % COLORS.len()],
                    plus,
                    points,
                ));
            }
        }
    }
    let all: Vec<f64> = series
        .iter()
        .flat_map(|s| s.3.iter().map(|p| p.1))
        .collect();
    let (lo, hi) = all
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &t| (a.min(t), b.max(t)));
    let (lo, hi) = if all.is_empty() {
        (1e-3, 1.0)
    } else {
        (lo / 2.0, hi * 2.0)
    };
    let root = SVGBackend::new(path, (720, 440)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{workload}: E+ and E− (s, log scale)"),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d(-0.5f64..(updates.len() as f64 - 0.5), (lo..hi).log_scale())
        .map_err(err)?;
    let labels: Vec<String> = updates.iter().map(|u| format!("{u}%")).collect();
    chart
        .configure_mesh()
        .x_desc("update size")
        .y_desc("seconds")
        .x_labels(updates.len().max(1))
        .x_label_formatter(&|x| {
            let k = x.round();
            if (x - k).abs() < 1e-6 && k >= 0.0 {
                labels.get(k as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| format!("{y:.3}"))
        .draw()
        .map_err(err)?;
    for (label, color, plus, points) in series {
        let style = if plus {
            color.stroke_width(2)
        } else {
            color.mix(0.6).stroke_width(1)
        };
        chart
            .draw_series(LineSeries::new(points.clone(), style))
            .map_err(err)?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], style));
        if plus {
            chart
                .draw_series(points.iter().map(|p| Circle::new(*p, 4, color.filled())))
                .map_err(err)?;
        } else {
            chart
                .draw_series(points.iter().map(|p| TriangleMarker::new(*p, 5, color)))
                .map_err(err)?;
        }
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Peak memory of a full materialization, bars grouped by workload.
pub fn memory(results: &Results, path: &Path) -> Result<(), Error> {
    let engines = &results.engines;
    let mut bars = Vec::new();
    for (wi, w) in results.workloads.iter().enumerate() {
        for (ei, e) in engines.iter().enumerate() {
            if let Some(mb) = results.median(w, e, Mode::Full, 0, |m| Some(m.peak_rss_mb)) {
                bars.push((wi, ei, mb));
            }
        }
    }
    let top = bars.iter().map(|b| b.2).fold(1.0, f64::max) * 1.15;
    let n = results.workloads.len().max(1) as f64;
    let root = SVGBackend::new(path, (720, 440)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Peak memory of a full materialization (MB)",
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..n, 0f64..top)
        .map_err(err)?;
    let names = results.workloads.clone();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(names.len() * 2 + 1)
        .x_label_formatter(&|x| {
            let k = (x - 0.5).round();
            if (x - 0.5 - k).abs() < 1e-6 && k >= 0.0 {
                names.get(k as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_desc("MB")
        .draw()
        .map_err(err)?;
    let width = 0.8 / engines.len().max(1) as f64;
    for (ei, e) in engines.iter().enumerate() {
        let color = COLORS[ei % COLORS.len()];
        let mine: Vec<(usize, f64)> = bars
            .iter()
            .filter(|b| b.1 == ei)
            .map(|b| (b.0, b.2))
            .collect();
        if mine.is_empty() {
            continue;
        }
        chart
            .draw_series(mine.iter().map(|&(wi, mb)| {
                let x0 = wi as f64 + 0.1 + ei as f64 * width;
                Rectangle::new([(x0, 0.0), (x0 + width * 0.9, mb)], color.filled())
            }))
            .map_err(err)?
            .label(e.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled()));
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Every plot of a run into `dir`; returns the files written.
pub fn all(results: &Results, dir: &Path) -> Result<Vec<PathBuf>, Error> {
    // A plot draws medians of finished measurements; with none (`--modes` without its
    // mode, a partial run, or every process OOT/OOM) there is nothing to draw.
    let finished = |w: Option<&str>, mode: Mode| {
        results
            .measurements
            .iter()
            .any(|m| w.is_none_or(|w| m.workload == w) && m.mode == mode && m.status == Status::Ok)
    };
    let mut files = Vec::new();
    for w in &results.workloads {
        if !finished(Some(w), Mode::Update) {
            continue;
        }
        let p = dir.join(format!("time-{w}.svg"));
        times(results, w, &p)?;
        files.push(p);
    }
    if finished(None, Mode::Full) {
        let p = dir.join("memory.svg");
        memory(results, &p)?;
        files.push(p);
    }
    Ok(files)
}
