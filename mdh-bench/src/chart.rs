//! The PNG bar chart of mdh's speedups over its peers. Text is rendered with
//! ab_glyph and DejaVu Sans from the `dejavu` crate: no system fonts, no X.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontStyle;

/// One bar: `label` (e.g. "matmul-1024 vs openblas") and mdh's speedup
/// (peer median / mdh median).
pub struct Bar {
    pub label: String,
    pub speedup: f64,
}

pub fn draw(path: &std::path::Path, title: &str, bars: &[Bar]) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("chart {}: {e}", path.display());
    plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
        .map_err(|_| "chart: cannot load the DejaVu font".to_string())?;
    // Top to bottom in the order given.
    let bars: Vec<&Bar> = bars
        .iter()
        .filter(|b| b.speedup.is_finite() && b.speedup > 0.0)
        .rev()
        .collect();
    let n = bars.len().max(1);
    let (lo, hi) = bars.iter().fold((1.0f64, 1.0f64), |(lo, hi), b| {
        (lo.min(b.speedup), hi.max(b.speedup))
    });
    // Whole decades around the data and 1.
    let lo = 10f64.powf((lo.log10() - 0.05).floor());
    let hi = 10f64.powf((hi.log10() + 0.05).ceil());

    let height = 140 + 34 * n as u32;
    let root = BitMapBackend::new(path, (1100, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(300)
        .build_cartesian_2d((lo..hi).log_scale(), (0..n - 1).into_segmented())
        .map_err(|e| fail(&e))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => bars.get(*i).map_or(String::new(), |b| b.label.clone()),
            _ => String::new(),
        })
        .x_desc("mdh speedup = peer median time / mdh median time (log scale; > 1: mdh is faster)")
        .x_label_formatter(&|x| {
            if *x >= 1.0 {
                format!("{x:.0}x")
            } else {
                format!("{x}x")
            }
        })
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|e| fail(&e))?;
    let green = RGBColor(46, 139, 87);
    let red = RGBColor(205, 92, 92);
    chart
        .draw_series(bars.iter().enumerate().map(|(i, b)| {
            let color = if b.speedup >= 1.0 { green } else { red };
            let mut r = Rectangle::new(
                [
                    (lo, SegmentValue::Exact(i)),
                    (b.speedup, SegmentValue::Exact(i + 1)),
                ],
                color.filled(),
            );
            r.set_margin(4, 4, 0, 0);
            r
        }))
        .map_err(|e| fail(&e))?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, b)| {
            // Two significant digits at least: 0.42x, 0.076x, 0.0035x.
            let decimals = (1 - b.speedup.log10().floor() as i32).max(2) as usize;
            let text = format!(" {:.*}x", decimals, b.speedup);
            let style = TextStyle::from(("sans-serif", 13).into_font())
                .pos(Pos::new(HPos::Left, VPos::Center));
            Text::new(text, (b.speedup, SegmentValue::CenterOf(i)), style)
        }))
        .map_err(|e| fail(&e))?;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![(1.0, SegmentValue::Exact(0)), (1.0, SegmentValue::Exact(n))],
            BLACK.stroke_width(2),
        )))
        .map_err(|e| fail(&e))?;
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}
