#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use super::*;
use crate::import;

fn records() -> Vec<Record> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/test_cache_file.json");
    import::read(&p).unwrap().1
}

/// Decodes an RGB PNG: width, height, pixels.
fn decode(path: &Path) -> (u32, u32, Vec<u8>) {
    let dec = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = dec.read_info().unwrap();
    let mut buf = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buf).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    buf.truncate(info.buffer_size());
    (info.width, info.height, buf)
}

fn dark(px: &[u8], w: u32, x: u32, y: u32) -> bool {
    let i = ((y * w + x) * 3) as usize;
    px[i..i + 3].iter().all(|&c| c < 100)
}

/// The longest vertical and horizontal runs of dark pixels: the axis lines.
fn axis_runs(w: u32, h: u32, px: &[u8]) -> (u32, u32) {
    let mut best_col = 0;
    for x in 0..w {
        let n = (0..h).filter(|&y| dark(px, w, x, y)).count() as u32;
        best_col = best_col.max(n);
    }
    let mut best_row = 0;
    for y in 0..h {
        let n = (0..w).filter(|&x| dark(px, w, x, y)).count() as u32;
        best_row = best_row.max(n);
    }
    (best_col, best_row)
}

#[test]
fn png_plots_have_the_size_axes_and_text() {
    // TUNE_PLOT_KEEP=DIR keeps the plots there, to look at them.
    let tmp = tempfile::tempdir().unwrap();
    let dir = std::env::var_os("TUNE_PLOT_KEEP").map_or(tmp.path().to_path_buf(), Into::into);
    let recs = records();
    let costs: Vec<Option<f64>> = recs.iter().map(|r| r.cost).collect();
    let base = Baseline::of(&costs, 0.5, costs.len());
    let files = write_all(&dir, &recs, Some(&base), &[Format::Png, Format::Svg]).unwrap();
    // Two best-so-far plots, the histogram, one per parameter; each as PNG and SVG.
    assert_eq!(files.len(), 2 * (3 + recs[0].config.0.len()));
    for f in files.iter().filter(|f| Format::of(f) == Some(Format::Png)) {
        let (w, h, px) = decode(f);
        assert_eq!((w, h), SIZE, "{}", f.display());
        let non_white = px.chunks(3).filter(|p| p.iter().any(|&c| c < 250)).count();
        assert!(
            non_white > 2_000,
            "{}: only {non_white} drawn pixels",
            f.display()
        );
        let (col, row) = axis_runs(w, h, &px);
        assert!(col > h / 2, "{}: no y axis ({col} px)", f.display());
        assert!(row > w / 2, "{}: no x axis ({row} px)", f.display());
        // The title, drawn with the bundled font: dark pixels in the top band.
        let title = (0..40)
            .flat_map(|y| (0..w).map(move |x| (x, y)))
            .filter(|&(x, y)| dark(&px, w, x, y))
            .count();
        assert!(title > 100, "{}: no title text ({title} px)", f.display());
    }
    let svg = std::fs::read_to_string(dir.join("best_so_far_evaluations.svg")).unwrap();
    assert!(
        svg.contains("<text") && svg.contains("random search (median)"),
        "{svg}"
    );
    assert!(svg.contains("kernel_tuner_cache (seed 0)"));
}

#[test]
fn charts_hold_the_data() {
    let recs = records();
    let Chart::Histogram { values, .. } = histogram(&recs) else {
        panic!("not a histogram")
    };
    assert_eq!(values.len(), 15);
    let Chart::Scatter {
        points, categories, ..
    } = cost_vs_param(&recs, "block_size_x")
    else {
        panic!("not a scatter")
    };
    assert_eq!(points.len(), 15);
    // 15 distinct sizes: a numeric axis; few distinct values: evenly spaced categories.
    assert!(categories.is_none());
    assert!(points.iter().any(|p| p.0 == 1024.0), "{points:?}");
    let few: Vec<Record> = recs.iter().take(4).cloned().collect();
    let Chart::Scatter { categories, .. } = cost_vs_param(&few, "block_size_x") else {
        panic!("not a scatter")
    };
    let cats = categories.unwrap();
    let nums: Vec<f64> = cats.iter().map(|c| c.parse().unwrap()).collect();
    assert_eq!(nums.len(), 4);
    assert!(nums.windows(2).all(|w| w[0] < w[1]), "{cats:?}");
    let Chart::Lines {
        series, baseline, ..
    } = convergence(&runs(&recs), Axis::Evaluations, None, "time_s")
    else {
        panic!("not lines")
    };
    assert_eq!(series.len(), 1);
    assert!(baseline.is_none());
    assert!(series[0].1.windows(2).all(|w| w[1].1 <= w[0].1));
}

#[test]
fn unknown_extensions_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let e = save(&dir.path().join("x.bmp"), &histogram(&records())).unwrap_err();
    assert!(e.to_string().contains("`.svg` or `.png`"), "{e}");
}
