//! The PNG of the best run time over evaluations. Text is rendered with
//! ab_glyph and DejaVu Sans from the `dejavu` crate, as mdh-bench's chart:
//! no system fonts.

use plotters::prelude::*;
use plotters::style::FontStyle;

/// `best[i]`: the best time in seconds after evaluation `i + 1`.
pub fn best_over_evaluations(
    path: &std::path::Path,
    title: &str,
    best: &[f64],
) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("plot {}: {e}", path.display());
    plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
        .map_err(|_| "plot: cannot load the DejaVu font".to_string())?;
    let ms: Vec<f64> = best.iter().map(|t| t * 1e3).collect();
    let hi = ms.iter().copied().fold(0.0, f64::max) * 1.05;
    let lo = ms.iter().copied().fold(f64::INFINITY, f64::min).min(hi) * 0.95;
    let root = BitMapBackend::new(path, (900, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(1..ms.len().max(2), lo..hi.max(lo * 1.01))
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .x_desc("evaluations (measured candidates)")
        .y_desc("best run time [ms]")
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|e| fail(&e))?;
    chart
        .draw_series(LineSeries::new(
            ms.iter().enumerate().map(|(i, &t)| (i + 1, t)),
            RGBColor(46, 139, 87).stroke_width(2),
        ))
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))
}
