//! One PNG per message size: median round-trip time (log scale) against
//! loss rate, one line per (implementation, latency). Cells with no good run
//! are drawn as crosses on the x axis, so a failure is visible rather than
//! missing.
//!
//! Text needs a TrueType font read at run time (no font is compiled in):
//! `$WANMPI_FONT`, else DejaVu Sans from Debian's fonts-dejavu-core.

use crate::error::BenchError;
use crate::grid::fmt_num;
use crate::record::Row;
use crate::table::{axes, size_label, summarize};
use plotters::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

const FONT_CANDIDATES: &[&str] = &[
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
];

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
];

static FONT: OnceLock<Result<(), String>> = OnceLock::new();

/// Loads and registers the font once per process (the bytes must live for
/// the whole process: plotters keeps a reference).
fn ensure_font() -> Result<(), String> {
    FONT.get_or_init(|| {
        let mut tried: Vec<String> = Vec::new();
        let env = std::env::var("WANMPI_FONT").ok();
        for cand in env.iter().map(String::as_str).chain(FONT_CANDIDATES.iter().copied()) {
            match std::fs::read(cand) {
                Ok(bytes) => {
                    let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                    return plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
                        .map_err(|_| format!("{cand} is not a usable TrueType font"));
                }
                Err(e) => tried.push(format!("{cand} ({e})")),
            }
        }
        Err(format!("no font found (install fonts-dejavu-core or set WANMPI_FONT); tried {}", tried.join(", ")))
    })
    .clone()
}

/// Writes `<prefix>-<size>.png` for every size in `rows`, each captioned
/// `<title>, <size> messages`; returns the files.
pub fn plot_all(rows: &[Row], prefix: &Path, title: &str) -> Result<Vec<PathBuf>, BenchError> {
    let a = axes(rows);
    let mut files = Vec::new();
    for &size in &a.sizes {
        let file = PathBuf::from(format!("{}-{size}.png", prefix.display()));
        plot_size(rows, size, &file, title)?;
        files.push(file);
    }
    Ok(files)
}

fn plot_size(rows: &[Row], size: u64, file: &Path, title: &str) -> Result<(), BenchError> {
    let perr = |problem: String| BenchError::Plot { file: file.display().to_string(), problem };
    ensure_font().map_err(perr)?;
    let a = axes(rows);
    struct Series {
        label: String,
        points: Vec<(f64, f64)>,
        failed: Vec<f64>,
    }
    let mut series = Vec::new();
    for imp in &a.implementations {
        for &d in &a.delays_ms {
            let mut s = Series { label: format!("{imp}, {} ms", fmt_num(d)), points: vec![], failed: vec![] };
            for &loss in &a.losses_pct {
                let sum = summarize(rows, imp, d, loss, size);
                match sum.median_us {
                    Some(us) => s.points.push((loss, us / 1000.0)),
                    None if sum.total() > 0 => s.failed.push(loss),
                    None => {}
                }
            }
            series.push(s);
        }
    }
    // Log scale: round trips span 0.05 ms to seconds across one grid.
    let ys = || series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let ymax = ys().fold(0.0f64, f64::max).max(1.0) * 1.5;
    let ymin = ys().fold(f64::INFINITY, f64::min).min(ymax / 10.0).max(1e-3) / 1.5;
    let (lo, hi) = (a.losses_pct.first().copied().unwrap_or(0.0), a.losses_pct.last().copied().unwrap_or(1.0));
    let pad = ((hi - lo) * 0.05).max(0.1);
    let e = |x: &dyn std::fmt::Display| perr(x.to_string());
    let root = BitMapBackend::new(file, (960, 620)).into_drawing_area();
    root.fill(&WHITE).map_err(|x| e(&x))?;
    let cc = a.congestion_controls.join(", ");
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{title}, {} messages (TCP congestion control: {cc})", size_label(size)), ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(70)
        .build_cartesian_2d((lo - pad)..(hi + pad), (ymin..ymax).log_scale())
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .x_desc("loss rate (%)")
        .y_desc("median time (ms, log scale): round trip or run time")
        .y_label_formatter(&|v| if *v >= 1.0 { format!("{v:.0}") } else { format!("{v:.2}") })
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .draw()
        .map_err(|x| e(&x))?;
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let label = if s.failed.is_empty() { s.label.clone() } else { format!("{} (x: {} cell(s) with no good run)", s.label, s.failed.len()) };
        chart
            .draw_series(LineSeries::new(s.points.clone(), color.stroke_width(2)))
            .map_err(|x| e(&x))?
            .label(label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(3)));
        chart.draw_series(s.points.iter().map(|p| Circle::new(*p, 4, color.filled()))).map_err(|x| e(&x))?;
        chart.draw_series(s.failed.iter().map(|l| Cross::new((*l, ymin * 1.1), 8, color.stroke_width(3)))).map_err(|x| e(&x))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 15))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|x| e(&x))?;
    root.present().map_err(|x| e(&x))?;
    Ok(())
}
