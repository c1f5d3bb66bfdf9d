//! The PNG: bar charts of mdh's speedups over its peers and of every row's
//! `% of roof`, one panel each, one above the other. Text is rendered with
//! ab_glyph and DejaVu Sans from the `dejavu` crate: no system fonts, no X.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::FontStyle;

/// One bar: `label` (e.g. "matmul-1024 vs openblas") and its value.
pub struct Bar {
    pub label: String,
    pub value: f64,
    /// Drawn in the highlight colour (in the `% of roof` panel: mdh's rows).
    pub highlight: bool,
}

/// What a panel's values are.
#[derive(Clone, Copy)]
pub enum Scale {
    /// mdh's speedup (peer median / mdh median), log scale, a line at 1;
    /// green at or above it, red below.
    Speedup,
    /// Percent of the roof, linear from 0, a line at 100; highlighted bars
    /// blue, the others grey.
    PercentOfRoof,
}

/// One panel: a caption and its bars, top to bottom in the order given.
pub struct Panel {
    pub caption: String,
    pub scale: Scale,
    pub bars: Vec<Bar>,
}

const WIDTH: u32 = 1100;

/// The height of a panel of `n` bars.
fn height(n: usize) -> u32 {
    140 + 34 * n.max(1) as u32
}

pub fn draw(path: &std::path::Path, panels: &[Panel]) -> Result<(), String> {
    let fail = |e: &dyn std::fmt::Display| format!("chart {}: {e}", path.display());
    plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
        .map_err(|_| "chart: cannot load the DejaVu font".to_string())?;
    let panels: Vec<(&Panel, Vec<&Bar>)> = panels
        .iter()
        .map(|p| {
            let bars = p
                .bars
                .iter()
                .filter(|b| b.value.is_finite() && b.value > 0.0)
                .rev()
                .collect();
            (p, bars)
        })
        .collect();
    let total = panels.iter().map(|(_, b)| height(b.len())).sum::<u32>();
    let root = BitMapBackend::new(path, (WIDTH, total.max(1))).into_drawing_area();
    root.fill(&WHITE).map_err(|e| fail(&e))?;
    let mut rest = root.clone();
    for (panel, bars) in &panels {
        let (area, below) = rest.split_vertically(height(bars.len()));
        rest = below;
        let (lo, hi) = bars.iter().fold((1.0f64, 1.0f64), |(lo, hi), b| {
            (lo.min(b.value), hi.max(b.value))
        });
        match panel.scale {
            Scale::Speedup => {
                // Whole decades around the data and 1.
                let lo = 10f64.powf((lo.log10() - 0.05).floor());
                let hi = 10f64.powf((hi.log10() + 0.05).ceil());
                let x_desc = "mdh speedup = peer median time / mdh median time (log scale; > 1: mdh is faster)";
                let axis = |x: &f64| {
                    if *x >= 1.0 {
                        format!("{x:.0}x")
                    } else {
                        format!("{x}x")
                    }
                };
                // Two significant digits at least: 0.42x, 0.076x, 0.0035x.
                let value = |v: f64| {
                    let decimals = (1 - v.log10().floor() as i32).max(2) as usize;
                    format!(" {v:.decimals$}x")
                };
                let colour = |b: &Bar| if b.value >= 1.0 { GREEN } else { RED };
                let look = Look { x_desc, axis: &axis, value: &value, colour: &colour, at: 1.0 };
                bar_panel(&area, (lo..hi).log_scale(), lo, &panel.caption, bars, &look)
            }
            Scale::PercentOfRoof => {
                let x_desc = "% of roof = the rate / the case's roofline, min(FMA peak, flops/bytes × streaming bandwidth)";
                let axis = |x: &f64| format!("{x:.0}%");
                let value = |v: f64| format!(" {v:.1}%");
                let colour = |b: &Bar| if b.highlight { BLUE } else { GREY };
                let look = Look { x_desc, axis: &axis, value: &value, colour: &colour, at: 100.0 };
                let hi = (hi.max(100.0) * 1.15 / 10.0).ceil() * 10.0;
                bar_panel(&area, 0.0..hi, 0.0, &panel.caption, bars, &look)
            }
        }
        .map_err(|e| fail(&e))?;
    }
    root.present().map_err(|e| fail(&e))?;
    Ok(())
}

const GREEN: RGBColor = RGBColor(46, 139, 87);
const RED: RGBColor = RGBColor(205, 92, 92);
const BLUE: RGBColor = RGBColor(70, 110, 180);
const GREY: RGBColor = RGBColor(160, 160, 160);

/// How a panel labels and colours its bars.
struct Look<'a> {
    x_desc: &'a str,
    axis: &'a dyn Fn(&f64) -> String,
    value: &'a dyn Fn(f64) -> String,
    colour: &'a dyn Fn(&Bar) -> RGBColor,
    /// Where the reference line is drawn.
    at: f64,
}

/// Horizontal bars from `lo` on the x axis `x` (bottom to top: `bars`).
fn bar_panel<X>(
    area: &DrawingArea<BitMapBackend, Shift>,
    x: X,
    lo: f64,
    caption: &str,
    bars: &[&Bar],
    look: &Look,
) -> Result<(), String>
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    let e = |e: &dyn std::fmt::Display| e.to_string();
    let n = bars.len().max(1);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(300)
        .build_cartesian_2d(x, (0..n - 1).into_segmented())
        .map_err(|x| e(&x))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => bars.get(*i).map_or(String::new(), |b| b.label.clone()),
            _ => String::new(),
        })
        .x_desc(look.x_desc)
        .x_label_formatter(look.axis)
        .label_style(("sans-serif", 14))
        .draw()
        .map_err(|x| e(&x))?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, b)| {
            let mut r = Rectangle::new(
                [
                    (lo, SegmentValue::Exact(i)),
                    (b.value, SegmentValue::Exact(i + 1)),
                ],
                (look.colour)(b).filled(),
            );
            r.set_margin(4, 4, 0, 0);
            r
        }))
        .map_err(|x| e(&x))?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, b)| {
            let style = TextStyle::from(("sans-serif", 13).into_font())
                .pos(Pos::new(HPos::Left, VPos::Center));
            Text::new(
                (look.value)(b.value),
                (b.value, SegmentValue::CenterOf(i)),
                style,
            )
        }))
        .map_err(|x| e(&x))?;
    chart
        .draw_series(std::iter::once(PathElement::new(
            vec![
                (look.at, SegmentValue::Exact(0)),
                (look.at, SegmentValue::Exact(n)),
            ],
            BLACK.stroke_width(2),
        )))
        .map_err(|x| e(&x))?;
    Ok(())
}
