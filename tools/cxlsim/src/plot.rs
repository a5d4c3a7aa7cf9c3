//! SVG figures (plotters, SVG backend): aggregate bandwidth vs topology
//! (ESF figure 10), bandwidth vs read:write mix and header overhead (figure
//! 16), snoop filter victim policies normalised to FIFO (figure 14), and the
//! latency distribution of a run.

use crate::experiments::{DuplexPoint, SnoopPoint, TopologyPoint};
use anyhow::{anyhow, Result};
use plotters::prelude::*;
use std::path::Path;

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn err<E: std::fmt::Debug>(e: E) -> anyhow::Error {
    anyhow!("plotting: {e:?}")
}

fn ensure_dir(path: &Path) -> Result<()> {
    if let Some(d) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(d)?;
    }
    Ok(())
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// A white 800 x 500 SVG canvas writing to `path` (its directory made).
fn canvas(path: &Path) -> Result<Area<'_>> {
    ensure_dir(path)?;
    let root = SVGBackend::new(path, (800, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    Ok(root)
}

/// Draws the legend at `pos` and writes the figure.
fn finish<'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    root: &Area<'a>,
    pos: SeriesLabelPosition,
) -> Result<()> {
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(pos)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// Figure 10: aggregate bandwidth (multiples of one port) vs n, a line per
/// topology, with the paper's expectation dashed.
pub fn topology(points: &[TopologyPoint], path: &Path) -> Result<()> {
    let root = canvas(path)?;
    let xmax = points.iter().map(|p| p.n).max().unwrap_or(1) as f64;
    let ymax = points
        .iter()
        .map(|p| p.multiple.max(p.expected))
        .fold(1.0, f64::max)
        * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Aggregate bandwidth vs topology (uniform random, N x N)",
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..xmax * 1.05, 0.0..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("N (requesters = memories)")
        .y_desc("bandwidth / one port")
        .draw()
        .map_err(err)?;
    let mut names: Vec<&str> = points.iter().map(|p| p.topology.as_str()).collect();
    names.dedup();
    names.sort();
    names.dedup();
    for (i, name) in names.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        let mut pts: Vec<&TopologyPoint> = points.iter().filter(|p| p.topology == *name).collect();
        pts.sort_by_key(|p| p.n);
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|p| (p.n as f64, p.multiple)),
                c.stroke_width(2),
            ))
            .map_err(err)?
            .label(*name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart
            .draw_series(
                pts.iter()
                    .map(|p| Circle::new((p.n as f64, p.multiple), 4, c.filled())),
            )
            .map_err(err)?;
        chart
            .draw_series(DashedLineSeries::new(
                pts.iter().map(|p| (p.n as f64, p.expected)),
                4,
                4,
                c.stroke_width(1),
            ))
            .map_err(err)?;
    }
    finish(&mut chart, &root, SeriesLabelPosition::UpperLeft)
}

/// Figure 16: payload bandwidth normalised to the read-only case vs read
/// ratio, a line per header ratio, full duplex solid and half dashed.
pub fn duplex(points: &[DuplexPoint], path: &Path) -> Result<()> {
    let root = canvas(path)?;
    let norm = |p: &DuplexPoint| {
        let base = points
            .iter()
            .find(|q| {
                q.duplex == p.duplex && q.header_ratio == p.header_ratio && q.read_ratio == 1.0
            })
            .map(|q| q.measured)
            .unwrap_or(1.0);
        p.measured / base
    };
    let ymax = points.iter().map(norm).fold(1.0, f64::max) * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Bandwidth vs read ratio and header overhead",
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..1.0, 0.0..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("read ratio r")
        .y_desc("bandwidth / read-only bandwidth")
        .draw()
        .map_err(err)?;
    let mut hs: Vec<f64> = points.iter().map(|p| p.header_ratio).collect();
    hs.sort_by(f64::total_cmp);
    hs.dedup();
    for (i, h) in hs.iter().enumerate() {
        let c = COLORS[i % COLORS.len()];
        for d in ["full", "half"] {
            let mut pts: Vec<&DuplexPoint> = points
                .iter()
                .filter(|p| p.header_ratio == *h && p.duplex == d)
                .collect();
            pts.sort_by(|a, b| a.read_ratio.total_cmp(&b.read_ratio));
            let data: Vec<(f64, f64)> = pts.iter().map(|p| (p.read_ratio, norm(p))).collect();
            if d == "full" {
                chart
                    .draw_series(LineSeries::new(data.clone(), c.stroke_width(2)))
                    .map_err(err)?
                    .label(format!("full duplex, h = {h}"))
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                    });
            } else {
                chart
                    .draw_series(DashedLineSeries::new(data.clone(), 5, 4, c.stroke_width(2)))
                    .map_err(err)?
                    .label(format!("half duplex, h = {h}"))
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(1))
                    });
            }
            chart
                .draw_series(data.iter().map(|&p| Circle::new(p, 3, c.filled())))
                .map_err(err)?;
        }
    }
    finish(&mut chart, &root, SeriesLabelPosition::UpperRight)
}

/// Figure 14: bandwidth, latency and invalidations of each victim policy,
/// normalised to FIFO (grouped bars).
pub fn snoop(points: &[SnoopPoint], path: &Path) -> Result<()> {
    let root = canvas(path)?;
    let vals: Vec<[f64; 3]> = points
        .iter()
        .map(|p| {
            [
                1.0 + p.bandwidth_vs_fifo,
                1.0 + p.latency_vs_fifo,
                1.0 + p.invalidations_vs_fifo,
            ]
        })
        .collect();
    let ymax = vals.iter().flatten().copied().fold(1.0, f64::max) * 1.15;
    let n = points.len();
    let labels: Vec<String> = points.iter().map(|p| p.policy.clone()).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Snoop filter victim policies (normalised to FIFO)",
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..n as f64, 0.0..ymax)
        .map_err(err)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n * 2 + 1)
        .x_label_formatter(&|x| {
            let i = x.floor() as usize;
            if (x - x.floor() - 0.5).abs() < 0.01 && i < labels.len() {
                labels[i].clone()
            } else {
                String::new()
            }
        })
        .y_desc("relative to FIFO")
        .draw()
        .map_err(err)?;
    let metrics = ["bandwidth", "latency", "invalidations"];
    for (m, name) in metrics.iter().enumerate() {
        let c = COLORS[m];
        chart
            .draw_series(vals.iter().enumerate().map(|(i, v)| {
                let x0 = i as f64 + 0.15 + m as f64 * 0.23;
                Rectangle::new([(x0, 0.0), (x0 + 0.21, v[m])], c.filled())
            }))
            .map_err(err)?
            .label(*name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], c.filled()));
    }
    finish(&mut chart, &root, SeriesLabelPosition::UpperRight)
}

/// Latency CDF of each requester of a run.
pub fn latency_cdf(cdfs: &[(String, Vec<(f64, f64)>)], path: &Path) -> Result<()> {
    let root = canvas(path)?;
    let xmax = cdfs
        .iter()
        .flat_map(|(_, c)| c.iter().map(|p| p.0))
        .fold(1.0, f64::max)
        * 1.05;
    let mut chart = ChartBuilder::on(&root)
        .caption("Request latency distribution", ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..xmax, 0.0..1.0)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("latency (ns)")
        .y_desc("fraction of requests")
        .draw()
        .map_err(err)?;
    for (i, (name, cdf)) in cdfs.iter().enumerate().take(24) {
        let c = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(cdf.iter().copied(), c.stroke_width(2)))
            .map_err(err)?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
    }
    finish(&mut chart, &root, SeriesLabelPosition::LowerRight)
}

/// A line of [`lines`]: label, points, dashed, colour index.
pub struct Line {
    pub label: String,
    pub points: Vec<(f64, f64)>,
    pub dashed: bool,
    pub color: usize,
}

/// A line chart (the MemChannel figures): one series per [`Line`], with
/// markers on solid lines.
pub fn lines(title: &str, x_desc: &str, y_desc: &str, series: &[Line], path: &Path) -> Result<()> {
    let root = canvas(path)?;
    let all = series.iter().flat_map(|l| l.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if x0 >= x1 {
        x0 = 0.0;
        x1 = x1.max(1.0);
    }
    let y1 = if y1 > 0.0 { y1 * 1.15 } else { 1.0 };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(55)
        .build_cartesian_2d(x0..x1, 0.0..y1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()
        .map_err(err)?;
    for l in series {
        let c = COLORS[l.color % COLORS.len()];
        if l.dashed {
            chart
                .draw_series(DashedLineSeries::new(
                    l.points.iter().copied(),
                    6,
                    4,
                    c.stroke_width(2),
                ))
                .map_err(err)?
                .label(l.label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(1))
                });
        } else {
            chart
                .draw_series(LineSeries::new(l.points.iter().copied(), c.stroke_width(2)))
                .map_err(err)?
                .label(l.label.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2))
                });
            if l.points.len() <= 40 {
                chart
                    .draw_series(l.points.iter().map(|&p| Circle::new(p, 3, c.filled())))
                    .map_err(err)?;
            }
        }
    }
    finish(&mut chart, &root, SeriesLabelPosition::UpperRight)
}
