//! `select_gemm explain DIR [SPLIT] [K] [SCHEME]`: where a split's shipped selector loses. For each
//! test shape of the split (default: the one that leaves out MobileNet; k default 8): the
//! configuration the shipped tree picks, its share of the shape's optimum, the best of the
//! set there and which configuration that is, and the features that lie outside the
//! training shapes' range. SCHEME 8 or 9 fits an earlier round's recipes (select8's, select9's)
//! instead of this round's (select8's choice with a fit shift). Reads the run as `analyse` does (the split's label cells
//! included); chooses nothing.

use std::fmt::Write as _;
use std::path::Path;

use tune::select::matrix::best_in;
use tune::select::Matrix;
use tune::Result;

use super::labels::labelled;
use super::recipe::{derived, scheme, scheme8, scheme9, splits, DEPLOY_K};
use super::run_file::read_run;

/// The features of every input (own, then derived) outside `[min, max]` of the training
/// inputs: `name<` below the range, `name>` above it.
fn outside(ext: &Matrix, train: &[usize], i: usize) -> Vec<String> {
    let mut out = Vec::new();
    let x = &ext.inputs()[i].features;
    let names: Vec<String> = ext.features.clone();
    for (f, name) in names.iter().enumerate() {
        let range = train.iter().map(|&t| ext.inputs()[t].features[f]);
        let (lo, hi) = range.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        });
        if x[f] < lo {
            out.push(format!("{name}<"));
        } else if x[f] > hi {
            out.push(format!("{name}>"));
        }
    }
    out
}

/// The table of one split (see the module's doc).
pub fn explain_dir(
    dir: &Path,
    split_name: Option<&str>,
    k: Option<usize>,
    scheme_name: Option<&str>,
) -> Result<()> {
    let scheme: fn(bool) -> tune::select::Nested = match scheme_name {
        None | Some("10") => scheme,
        Some("9") => scheme9,
        Some("8") => scheme8,
        Some(other) => {
            return Err(tune::Error::Select(format!(
                "no scheme `{other}`: 8, 9 or 10 (this round's)"
            )))
        }
    };
    let run = read_run(dir)?;
    let truth = run.truth()?;
    let learnt = run.learnt()?;
    let k = k.unwrap_or(DEPLOY_K);
    let all = splits(&run.matrix);
    let wanted = split_name.unwrap_or("mobilenet");
    let (n_split, split) = all
        .iter()
        .enumerate()
        .find(|(_, s)| s.name.to_lowercase().contains(&wanted.to_lowercase()))
        .ok_or_else(|| {
            tune::Error::Select(format!(
                "no split named like `{wanted}`; the splits: {}",
                all.iter()
                    .map(|s| s.name.clone())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
    let budget = run.set_budget(split.train.len());
    let (lab, _, _) = labelled(&run.matrix, &learnt, &split.train, budget)?;
    let (s, choice) = scheme(n_split > 0).fit(&lab, &split.train, k)?;
    let set: Vec<usize> = s
        .configs
        .iter()
        .filter_map(|cfg| truth.configs().iter().position(|x| x == cfg))
        .collect();
    let ext = truth.with_derived(&derived());
    let mut out = format!(
        "# {} ({} training / {} test shapes), k = {k}, scheme {}\n\nShipped: {} (inner score {:.2}), tree depth {}, {} leaves.\n\nThe set (position: configuration):\n\n",
        split.name,
        split.train.len(),
        split.test.len(),
        scheme_name.unwrap_or("10"),
        choice.recipe.name(),
        100.0 * choice.inner.geomean,
        s.tree.shape().0,
        s.tree.shape().1,
    );
    // What the tree learnt from: each position's share of the training shapes measured in
    // the split's labelled matrix, and how often a training shape's label (its best of the
    // set among the measured cells) is not its best of the set in the truth.
    let lab_set: Vec<usize> = s
        .configs
        .iter()
        .filter_map(|cfg| lab.configs().iter().position(|x| x == cfg))
        .collect();
    for (p, c) in s.configs.iter().enumerate() {
        let measured = lab_set.get(p).map_or(0, |&c| {
            split
                .train
                .iter()
                .filter(|&&i| lab.get(i, c).is_some())
                .count()
        });
        let _ = writeln!(
            out,
            "- {p}: `{c}` (measured on {measured} of the {} training shapes)",
            split.train.len()
        );
    }
    let (mut wrong, mut labels, mut label_logs) = (0, 0, Vec::new());
    for &i in &split.train {
        let (Some(l), Some(t)) = (best_in(&lab, i, &lab_set), best_in(&truth, i, &set)) else {
            continue;
        };
        labels += 1;
        let l_pos = lab_set.iter().position(|&c| c == l);
        let t_pos = set.iter().position(|&c| c == t);
        if l_pos != t_pos {
            wrong += 1;
        }
        // The label's share of the shape's best of the set, in the truth.
        if let (Some(p), Some(tb)) = (l_pos, truth.get(i, t)) {
            if let Some(lt) = set.get(p).and_then(|&c| truth.get(i, c)) {
                label_logs.push((tb / lt).ln());
            }
        }
    }
    let _ = writeln!(
        out,
        "\nTraining labels: {wrong} of {labels} training shapes are labelled with another configuration than their best of the set in the truth; the labels reach {:.2}% of the best of the set on the training shapes (where the truth measures them).",
        100.0 * (label_logs.iter().sum::<f64>() / label_logs.len().max(1) as f64).exp()
    );
    // (log loss of the pick, row) for each test shape.
    let mut rows: Vec<(f64, String)> = Vec::new();
    // The same selector without its fit guard (select9) or shift (select10): where
    // either moved a pick.
    let unguarded = tune::select::Selector {
        fit_guard: None,
        fit_shift: None,
        ..s.clone()
    };
    let mover = if s.fit_shift.is_some() {
        "fit shift"
    } else {
        "fit guard"
    };
    let share = |i: usize, c: Option<&tune::results::Named<tune::Value>>, best: f64| {
        c.and_then(|p| truth.configs().iter().position(|x| x == p))
            .and_then(|c| truth.get(i, c))
            .map(|t| best / t)
    };
    let (mut moved, mut moved_logs, mut tree_logs) = (0, Vec::new(), Vec::new());
    let (mut logs_in, mut logs_out, mut bound_in, mut bound_out) = (vec![], vec![], vec![], vec![]);
    for &i in &split.test {
        let Some((_, best)) = truth.best(i) else {
            continue;
        };
        let input = &truth.inputs()[i];
        let pick = s.choose(&input.features);
        let pos = pick.and_then(|p| s.configs.iter().position(|c| c == p));
        let got = pick
            .and_then(|p| truth.configs().iter().position(|x| x == p))
            .and_then(|c| truth.get(i, c))
            .map(|t| best / t);
        let tree_pick = unguarded.choose(&input.features);
        let tree_pos = tree_pick.and_then(|p| s.configs.iter().position(|c| c == p));
        if tree_pos != pos {
            moved += 1;
            if let (Some(g), Some(t)) = (got, share(i, tree_pick, best)) {
                moved_logs.push(g.ln());
                tree_logs.push(t.ln());
            }
        }
        let top = best_in(&truth, i, &set);
        let top_pos = top.and_then(|c| set.iter().position(|&x| x == c));
        let bound = top.and_then(|c| truth.get(i, c)).map(|t| best / t);
        let far = outside(&ext, &split.train, i);
        let (logs, bounds) = if far.is_empty() {
            (&mut logs_in, &mut bound_in)
        } else {
            (&mut logs_out, &mut bound_out)
        };
        if let (Some(g), Some(b)) = (got, bound) {
            logs.push(g.ln());
            bounds.push(b.ln());
        }
        rows.push((
            got.map_or(f64::INFINITY, |g| -g.ln()),
            format!(
                "| {} | {} | {} | {} | {} | {} |",
                input.key,
                match (pos, tree_pos) {
                    (Some(p), Some(t)) if p != t => format!("{p} ({mover}; tree: {t})"),
                    (Some(p), _) => p.to_string(),
                    _ => "-".into(),
                },
                got.map_or("unmeasured".into(), |g| format!("{:.1}", 100.0 * g)),
                top_pos.map_or("-".into(), |p| p.to_string()),
                bound.map_or("-".into(), |b| format!("{:.1}", 100.0 * b)),
                far.join(" "),
            ),
        ));
    }
    rows.sort_by(|a, b| b.0.total_cmp(&a.0));
    let g = |v: &[f64]| 100.0 * (v.iter().sum::<f64>() / v.len().max(1) as f64).exp();
    let total: f64 = rows.iter().map(|r| r.0).filter(|x| x.is_finite()).sum();
    let _ = writeln!(
        out,
        "\nTest shapes inside every feature's training range: {} at {:.2}% (bound {:.2}%); outside some feature's range: {} at {:.2}% (bound {:.2}%).\n\nThe test shapes, largest loss first (loss: -ln of the pick's share; the {} largest make {:.0}% of the split's summed loss):\n\n| shape | pick | % of optimum | best of the set | its % | outside the training range |\n|---|---:|---:|---:|---:|---|",
        logs_in.len(),
        g(&logs_in),
        g(&bound_in),
        logs_out.len(),
        g(&logs_out),
        g(&bound_out),
        rows.len().min(10),
        100.0 * rows.iter().take(10).map(|r| r.0).filter(|x| x.is_finite()).sum::<f64>()
            / total.max(1e-12),
    );
    for (_, r) in &rows {
        let _ = writeln!(out, "{r}");
    }
    if s.fit_guard.is_some() || s.fit_shift.is_some() {
        let _ = writeln!(
            out,
            "\nThe {mover} moved {moved} of the {} test shapes' picks: {:.2}% where the tree's picks would reach {:.2}% (geometric means over those shapes).\n",
            split.test.len(),
            g(&moved_logs),
            g(&tree_logs),
        );
    }
    println!("{out}");
    Ok(())
}
