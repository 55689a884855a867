//! The tables of a run: every method x classifier x k on every split, the shipped rows,
//! the rows with label cells, the deployed selector against the vendor library.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use tune::select::matrix::{best_in, score};
use tune::select::{
    evaluate, needed, Choice, Classifier, Matrix, Nested, Objective, Recipe, SetMethod, Split,
    TreeLimits,
};
use tune::{Result, Value};

use super::cells::verify;
use super::labels::labelled;
use super::recipe::{
    deploy, derived, methods, scheme, scheme7, scheme8, scheme9, schemes11, splits, DEPLOY_K, KS,
    KS_FIRST,
};
use super::run_file::{read_run, RunFile};

/// The nested choice on one split, for each k: the recipe chosen inside the training
/// shapes, its inner score, its score on the test shapes and its set's upper bound there.
struct NestedRow {
    k: usize,
    choice: Choice,
    test: tune::select::Score,
    bound: tune::select::Score,
}

fn nested_rows(
    m: &Matrix,
    truth: &Matrix,
    split: &Split,
    nested: &Nested,
    ks: &[usize],
) -> Result<Vec<NestedRow>> {
    let mut rows = Vec::new();
    for &k in ks {
        let (s, choice) = nested.fit(m, &split.train, k)?;
        let set: Vec<usize> = s
            .configs
            .iter()
            .filter_map(|cfg| truth.configs().iter().position(|x| x == cfg))
            .collect();
        let test = score(truth, &split.test, |i| {
            s.choose(&truth.inputs()[i].features)
                .and_then(|cfg| truth.configs().iter().position(|x| x == cfg))
        });
        let bound = score(truth, &split.test, |i| best_in(truth, i, &set));
        rows.push(NestedRow {
            k,
            choice,
            test,
            bound,
        });
    }
    Ok(rows)
}

/// select11's choice of the scheme on one split, for each k: the scheme chosen and every
/// candidate's inner score, the recipe it chose, its test score and its set's bound.
struct SchemeRow {
    k: usize,
    chosen: usize,
    scheme: String,
    inner: Vec<tune::select::Score>,
    /// The chosen scheme's row where it is neither select10's nor select8's (whose rows
    /// the report has computed already: `known`).
    own: Option<NestedRow>,
}

impl SchemeRow {
    /// The chosen scheme's row at this k.
    fn row<'a>(&'a self, known: [&'a [NestedRow]; 2]) -> Option<&'a NestedRow> {
        match known.get(self.chosen) {
            Some(rows) => rows.iter().find(|r| r.k == self.k),
            None => self.own.as_ref(),
        }
    }
}

fn scheme_rows(
    m: &Matrix,
    truth: &Matrix,
    split: &Split,
    by_group: bool,
) -> Result<Vec<SchemeRow>> {
    let choice = schemes11(by_group);
    let mut rows = Vec::new();
    for &k in &KS {
        let scores = choice.choose(m, &split.train, k)?;
        let (name, nested) = &choice.schemes[scores.chosen];
        // schemes11's first two are `scheme` and `scheme8`, whose rows exist.
        let own = if scores.chosen >= 2 {
            nested_rows(m, truth, split, nested, &[k])?.pop()
        } else {
            None
        };
        rows.push(SchemeRow {
            k,
            chosen: scores.chosen,
            scheme: name.clone(),
            inner: scores.scores,
            own,
        });
    }
    Ok(rows)
}

fn pct(s: &tune::select::Score) -> String {
    match s.unmeasured {
        _ if s.scored == 0 => "-".into(),
        0 => format!("{:.2}", 100.0 * s.geomean),
        u => format!("{:.2} ({u} unmeasured)", 100.0 * s.geomean),
    }
}

/// An inner score: its unmeasured picks were scored as their input's worst measured.
fn pct_inner(s: &tune::select::Score) -> String {
    match s.unmeasured {
        _ if s.scored == 0 => "-".into(),
        0 => format!("{:.2}", 100.0 * s.geomean),
        u => format!(
            "{:.2} ({u} picks unmeasured, as the worst)",
            100.0 * s.geomean
        ),
    }
}

/// The report: how the matrix was measured, the tables of every split, the deployed
/// selector against the vendor library (seconds per shape key) where given.
pub fn analyse(run: &RunFile) -> Result<String> {
    let (m, stats, verified) = (&run.matrix, &run.stats, run.verified);
    let truth = run.truth()?;
    let truth = &truth;
    // The times the selectors learn (the tuning run's re-measured ones, since select7).
    let learnt = run.learnt()?;
    // The label cells each training set's selectors learn from (0: a run without a label
    // step, whose selectors learn from the searches and the cross-evaluation alone).
    let budget = run.label_budget();
    let vendor = run.vendor.as_ref().map(|(n, v)| (n.as_str(), v.as_slice()));
    let mut out = format!(
        "# {} on {}\n\n{} shapes; {} configurations in the matrix. Searches measured {} cells; the cross-evaluation {} (anchors) + {} (promising): {:.1}% of the {}-cell grid of candidates x shapes in all ({:.1}% cross-evaluated), {} measurements failed or were skipped. What the selectors learn from: these {} cells.\n\n",
        m.tunable,
        m.device,
        m.inputs().len(),
        m.configs().len(),
        stats.searched,
        stats.anchored,
        stats.promising,
        100.0 * stats.measured_fraction(),
        stats.grid,
        100.0 * stats.fraction(),
        stats.failed,
        m.measured()
    );
    if budget > 0 {
        let _ = writeln!(
            out,
            "Label step (`labels::label_step`, part of the tuning run): at most {budget} cells per training set (what the searches and the cross-evaluation left of {:.0}% of the grid), each split's and all shapes' (the selector that ships): {} distinct cells measured, {} planned over the training sets (a cell two sets plan is measured once). Each split's selectors learn from the searches, the cross-evaluation and its own label cells.\n",
            100.0 * run.budget,
            run.labelled.0,
            run.labelled.1
        );
    }
    if run.filled > 0 {
        let _ = writeln!(
            out,
            "Filling the grid (never read by a set or a tree): {} more cells of the {} configurations x {} shapes, {} of them measured in all ({:.1}%).\n",
            run.filled,
            m.configs().len(),
            m.inputs().len(),
            truth.measured(),
            100.0 * truth.measured() as f64 / truth.grid().max(1) as f64,
        );
    }
    if run.planned > 0 {
        let _ = writeln!(
            out,
            "Scoring only (never read by a set or a tree): {verified} of {} planned cells measure the baselines and every set's configurations on the test shapes of each split, and every method's {DEPLOY_K}-set (chosen from all shapes) on every shape: {:.1}% of the grid more ({:.1}% with the searches and cross-evaluation). The per-shape optimum is the best of all {} cells.\n",
            run.planned,
            100.0 * verified as f64 / stats.grid.max(1) as f64,
            100.0 * (stats.searched + stats.anchored + stats.promising + verified) as f64
                / stats.grid.max(1) as f64,
            truth.measured()
        );
    } else {
        let _ = writeln!(
            out,
            "{verified} more cells measured the deployed configurations on the test shapes into the same matrix (a run before the scoring cells were kept apart: the selectors of one split may learn from cells measured to score another).\n"
        );
    }
    // The paper's classifiers, then the cost-sensitive trees (select6), then a model per
    // configuration and the cost-sensitive 3-NN (select8).
    let classifiers: Vec<Classifier> = Classifier::ALL
        .into_iter()
        .chain(Classifier::COST)
        .chain(Classifier::MODELS)
        .chain([Classifier::COST_NEIGHBOURS])
        .collect();
    let mut summary = String::from(
        "| split (train / test shapes) | tuning cells: searches + cross-evaluation + label cells + re-measured (% of the grid) | one config | nearest input (today) | shipped k=4 | shipped k=8 | bound, shipped set k=8 | chosen inside the training shapes, k=8 | select9's scheme k=4 / k=8 | select8's scheme k=4 / k=8 | select7's scheme k=4 / k=8 | models alone k=4 / k=8 (not shippable) |\n|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|\n",
    );
    let mut plain = String::from(
        "| split | label cells measured / wanted (% of the grid) | one config | nearest input (today) | shipped k=4 | shipped k=8 | bound, shipped set k=8 | chosen, k=8 |\n|---|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let first = run.first()?;
    let mut summary11 = String::from(
        "| split | one config | nearest input (today) | select10's scheme k=4 / k=8 | select11's scheme (the scheme chosen) k=4 / k=6 / k=8 / k=15 |\n|---|---:|---:|---:|---|\n",
    );
    let mut labels = String::from(
        "| split | label cells measured / wanted (% of the grid) | shipped k=4 | shipped k=8 | chosen, k=8 |\n|---|---:|---:|---:|---|\n",
    );
    let truth_ext = truth.with_derived(&derived());
    let base = m;
    for (n_split, split) in splits(m).into_iter().enumerate() {
        if split.train.is_empty() || split.test.is_empty() {
            continue;
        }
        // The first split is random; the others leave out a network.
        let by_group = n_split > 0;
        // What this split's selectors learn from, baselines included.
        let set_budget = run.set_budget(split.train.len());
        let (lab, gained, planned_labels) = labelled(base, &learnt, &split.train, set_budget)?;
        // Cells the tuning run re-measured for this set (counted in its budget).
        let reserved = (run.reserve * split.train.len()).min(budget);
        let (m, m_ext) = (&lab, lab.with_derived(&derived()));
        // Cells attempted: failures cost a measurement too.
        let tuning = stats.searched
            + stats.anchored
            + stats.promising
            + stats.failed
            + planned_labels
            + reserved;
        let r = evaluate(m, truth, &split, &SetMethod::MAIN, &classifiers, &KS)?;
        let _ = writeln!(out, "## {}\n\n{}", split.name, r.markdown());
        let norms: Vec<SetMethod> = methods().into_iter().skip(4).collect();
        let n = evaluate(
            m,
            truth,
            &split,
            &norms,
            &[Classifier::Tree(TreeLimits::B)],
            &KS,
        )?;
        let _ = writeln!(out, "Normalisations ({}):\n\n{}", split.name, n.markdown());
        let mut trees = classifiers.clone();
        trees.retain(|c| *c != Classifier::NearestInput);
        let d = evaluate(&m_ext, &truth_ext, &split, &SetMethod::MAIN, &trees, &KS)?;
        let _ = writeln!(
            out,
            "Derived features ({}): the trees and 1-NN reading {} besides the sizes:\n\n{}",
            split.name,
            derived()
                .iter()
                .map(|d| d.name().to_string())
                .collect::<Vec<_>>()
                .join(", "),
            d.markdown()
        );
        // A split too small for a scheme's folds gets no shipped rows (said in the report).
        let mut skipped = |r: Result<Vec<NestedRow>>, what: &str| {
            r.unwrap_or_else(|e| {
                let _ = writeln!(out, "{what} ({}): not fitted: {e}\n", split.name);
                Vec::new()
            })
        };
        let rows = skipped(
            nested_rows(m, truth, &split, &scheme(by_group), &KS),
            "Shipped",
        );
        // The same choice without the fit shift (select10).
        let eight = skipped(
            nested_rows(m, truth, &split, &scheme8(by_group), &KS),
            "select8's scheme",
        );
        let old = skipped(
            nested_rows(m, truth, &split, &scheme7(by_group), &[4, DEPLOY_K]),
            "select7's scheme",
        );
        // select9's: the 560 and each again with the fit guard.
        let nine = skipped(
            nested_rows(m, truth, &split, &scheme9(by_group), &[4, DEPLOY_K]),
            "select9's scheme",
        );
        // The 80 model recipes alone, chosen among by the same cross-validation (select8):
        // a row of the tables, not shippable (select12: the dispatch is a tree).
        let all_recipes = scheme8(by_group);
        let models_only = Nested {
            recipes: all_recipes
                .recipes
                .iter()
                .copied()
                .filter(|r| matches!(r.objective, Objective::Model(_)))
                .collect(),
            models_ship: true,
            ..all_recipes
        };
        let models = skipped(
            nested_rows(m, truth, &split, &models_only, &[4, DEPLOY_K]),
            "Models alone",
        );
        let folds = if by_group {
            "one fold per network of the training shapes (each left out in turn)"
        } else {
            "5 random folds"
        };
        let _ = writeln!(
            out,
            "Shipped ({}): set method, tree and features chosen by cross-validation inside the {} training shapes, {folds} (inner score: the left-out folds), scored on the {} test shapes:\n\n| k | chosen | inner score | test score | set's bound on the test shapes | runner-up (inner) | best model recipe (inner; not shippable) | without the fit shift (select8's scheme) |\n|---:|---|---:|---:|---:|---|---|---:|",
            split.name,
            split.train.len(),
            split.test.len()
        );
        for row in &rows {
            let inner = pct_inner(&row.choice.inner);
            // The chosen recipe as scored (the shift, where it ships, added after).
            let unshifted = |r: &Recipe| Recipe {
                fit_shift: false,
                ..*r
            };
            let second = row
                .choice
                .scores
                .iter()
                .find(|(r, _)| unshifted(r) != unshifted(&row.choice.recipe))
                .map(|(r, s)| {
                    let model = matches!(r.objective, Objective::Model(_));
                    let ships = if model { ", not shippable" } else { "" };
                    format!("{} ({}{ships})", r.name(), pct_inner(s))
                })
                .unwrap_or_default();
            let model = row
                .choice
                .scores
                .iter()
                .find(|(r, _)| matches!(r.objective, Objective::Model(_)))
                .map(|(r, s)| format!("{} ({}, not shippable)", r.name(), pct_inner(s)))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "| {} | {} | {inner} | {} | {} | {second} | {model} | {} |",
                row.k,
                row.choice.recipe.name(),
                pct(&row.test),
                pct(&row.bound),
                eight
                    .iter()
                    .find(|r| r.k == row.k)
                    .map(|r| pct(&r.test))
                    .unwrap_or_default()
            );
        }
        let _ = writeln!(out);
        // select11: the scheme itself chosen inside the training shapes.
        let eleven = scheme_rows(m, truth, &split, by_group).unwrap_or_else(|e| {
            let _ = writeln!(out, "select11's scheme ({}): not fitted: {e}\n", split.name);
            Vec::new()
        });
        let _ = writeln!(
            out,
            "select11's scheme ({}): the scheme chosen by cross-validation inside the training shapes (the folds above; each candidate's own choice nested in each fold), then its recipe on all of them:\n\n| k | scheme chosen | inner: select10's / select8's / shift in the folds | recipe | test score | set's bound | select10's scheme (shipped above) |\n|---:|---|---|---|---:|---:|---:|",
            split.name
        );
        let known = [rows.as_slice(), eight.as_slice()];
        for e in &eleven {
            let inner: Vec<String> = e.inner.iter().map(pct_inner).collect();
            let Some(row) = e.row(known) else { continue };
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} |",
                e.k,
                e.scheme,
                inner.join(" / "),
                row.choice.recipe.name(),
                pct(&row.test),
                pct(&row.bound),
                rows.iter()
                    .find(|r| r.k == e.k)
                    .map(|r| pct(&r.test))
                    .unwrap_or_default()
            );
        }
        let _ = writeln!(out);
        let eleven_at = |k: usize| {
            eleven
                .iter()
                .find(|r| r.k == k)
                .and_then(|r| Some(format!("{} ({})", pct(&r.row(known)?.test), r.scheme)))
                .unwrap_or_default()
        };
        let _ = writeln!(
            summary11,
            "| {} | {} | {} | {} / {} | {} / {} / {} / {} |",
            split.name,
            pct(&r.single_best),
            pct(&r.nearest_best),
            rows.iter()
                .find(|r| r.k == 4)
                .map(|r| pct(&r.test))
                .unwrap_or_default(),
            rows.iter()
                .find(|r| r.k == DEPLOY_K)
                .map(|r| pct(&r.test))
                .unwrap_or_default(),
            eleven_at(4),
            eleven_at(6),
            eleven_at(DEPLOY_K),
            eleven_at(15),
        );
        let at = |k: usize| rows.iter().find(|r| r.k == k);
        let old_at = |k: usize| {
            old.iter()
                .find(|r| r.k == k)
                .map(|r| pct(&r.test))
                .unwrap_or_default()
        };
        let eight_at = |k: usize| {
            eight
                .iter()
                .find(|r| r.k == k)
                .map(|r| pct(&r.test))
                .unwrap_or_default()
        };
        let _ = writeln!(
            out,
            "select8's scheme ({}; the same choice, its tree without the fit shift): k = 4 {} ({}), k = {DEPLOY_K} {} ({}).\n",
            split.name,
            eight_at(4),
            eight
                .iter()
                .find(|r| r.k == 4)
                .map(|r| r.choice.recipe.name())
                .unwrap_or_default(),
            eight_at(DEPLOY_K),
            eight
                .iter()
                .find(|r| r.k == DEPLOY_K)
                .map(|r| r.choice.recipe.name())
                .unwrap_or_default(),
        );
        let _ = writeln!(
            out,
            "select7's scheme ({}; the 480 recipes without models): k = 4 {} ({}), k = {DEPLOY_K} {} ({}).\n",
            split.name,
            old_at(4),
            old.first().map(|r| r.choice.recipe.name()).unwrap_or_default(),
            old_at(DEPLOY_K),
            old.get(1).map(|r| r.choice.recipe.name()).unwrap_or_default(),
        );
        let _ = writeln!(
            out,
            "Models alone ({}; the 80 model recipes, chosen among by the same cross-validation; not shippable: the dispatch is a tree): k = 4 {} ({}), k = {DEPLOY_K} {} ({}; bound {}).\n",
            split.name,
            models.first().map(|r| pct(&r.test)).unwrap_or_default(),
            models.first().map(|r| r.choice.recipe.name()).unwrap_or_default(),
            models.get(1).map(|r| pct(&r.test)).unwrap_or_default(),
            models.get(1).map(|r| r.choice.recipe.name()).unwrap_or_default(),
            models.get(1).map(|r| pct(&r.bound)).unwrap_or_default(),
        );
        let nine_at = |k: usize| {
            nine.iter()
                .find(|r| r.k == k)
                .map(|r| pct(&r.test))
                .unwrap_or_default()
        };
        let _ = writeln!(
            out,
            "select9's scheme ({}; the 560 recipes and each again with the fit guard): k = 4 {} ({}), k = {DEPLOY_K} {} ({}).\n",
            split.name,
            nine_at(4),
            nine.first().map(|r| r.choice.recipe.name()).unwrap_or_default(),
            nine_at(DEPLOY_K),
            nine.get(1).map(|r| r.choice.recipe.name()).unwrap_or_default(),
        );
        let _ = writeln!(
            summary,
            "| {} ({} / {}) | {} + {} + {gained} of {planned_labels} + {reserved} ({:.1}%) | {} | {} | {} | {} | {} | {} | {} / {} | {} / {} | {} / {} | {} / {} |",
            split.name,
            split.train.len(),
            split.test.len(),
            stats.searched,
            stats.anchored + stats.promising,
            100.0 * tuning as f64 / stats.grid.max(1) as f64,
            pct(&r.single_best),
            pct(&r.nearest_best),
            at(4).map(|r| pct(&r.test)).unwrap_or_default(),
            at(8).map(|r| pct(&r.test)).unwrap_or_default(),
            at(8).map(|r| pct(&r.bound)).unwrap_or_default(),
            at(8).map(|r| r.choice.recipe.name()).unwrap_or_default(),
            nine_at(4),
            nine_at(DEPLOY_K),
            eight_at(4),
            eight_at(DEPLOY_K),
            old_at(4),
            old_at(DEPLOY_K),
            models.first().map(|r| pct(&r.test)).unwrap_or_default(),
            models.get(1).map(|r| pct(&r.test)).unwrap_or_default(),
        );
        // Beside it: without label cells (a run with a label step), or with every wanted
        // label cell the run happened to measure (a run without one).
        let other_budget = if budget > 0 { 0 } else { usize::MAX };
        let (other, gained, wanted) = labelled(base, &learnt, &split.train, other_budget)?;
        let rows = nested_rows(&other, truth, &split, &scheme(by_group), &[4, DEPLOY_K])
            .unwrap_or_default();
        // Beside it (select7): select6's plan, every cell at its first time and the label
        // step at its whole budget, scored on the same truth.
        if run.reserve > 0 {
            let (other, gained, wanted) = labelled(base, &first, &split.train, budget)?;
            let rows = nested_rows(&other, truth, &split, &scheme(by_group), &[4, DEPLOY_K])
                .unwrap_or_default();
            // The baselines with the same label cells (no set, no classifier).
            let b = evaluate(&other, truth, &split, &[], &[], &[])?;
            let _ = writeln!(
                plain,
                "| {} | {gained} / {wanted} ({:.1}%) | {} | {} | {} | {} | {} | {} |",
                split.name,
                100.0 * gained as f64 / stats.grid.max(1) as f64,
                pct(&b.single_best),
                pct(&b.nearest_best),
                rows.first().map(|r| pct(&r.test)).unwrap_or_default(),
                rows.get(1).map(|r| pct(&r.test)).unwrap_or_default(),
                rows.get(1).map(|r| pct(&r.bound)).unwrap_or_default(),
                rows.get(1)
                    .map(|r| r.choice.recipe.name())
                    .unwrap_or_default(),
            );
        }
        let _ = writeln!(
            labels,
            "| {} | {gained} / {wanted} ({:.1}%) | {} | {} | {} |",
            split.name,
            100.0 * gained as f64 / stats.grid.max(1) as f64,
            rows.first().map(|r| pct(&r.test)).unwrap_or_default(),
            rows.get(1).map(|r| pct(&r.test)).unwrap_or_default(),
            rows.get(1)
                .map(|r| r.choice.recipe.name())
                .unwrap_or_default(),
        );
    }
    let _ = writeln!(
        out,
        "## Summary (unseen shapes, % of the per-shape optimum)\n\n{summary}"
    );
    let _ = writeln!(
        out,
        "## select11: the scheme chosen inside the training shapes (unseen shapes, % of the per-shape optimum)\n\n{summary11}"
    );
    if budget > 0 {
        let _ = writeln!(
            out,
            "## Without label cells (unseen shapes, % of the per-shape optimum)\n\nThe same scheme, learning from the searches and the cross-evaluation alone:\n\n{labels}"
        );
    } else {
        let _ = writeln!(
            out,
            "## With label cells (unseen shapes, % of the per-shape optimum)\n\nThe same scheme, learning from the matrix plus every configuration of the sets any method chooses (k = {KS:?}) on every training shape (`labels::labelled`, no budget; taken from the scoring and filling cells: wanted cells never measured stay empty):\n\n{labels}"
        );
    }
    if run.reserve > 0 {
        let _ = writeln!(
            out,
            "## Without re-measuring (unseen shapes, % of the per-shape optimum)\n\nThe same scheme on select6's plan: every cell at its first time, the label step at its whole budget ({budget} cells a training set; its cells past this run's label step were measured for this row alone and are never read by the rows above), scored on the same truth:\n\n{plain}"
        );
    }
    let all: Vec<usize> = (0..m.inputs().len()).collect();
    let (shipped_from, _, _) = labelled(m, &learnt, &all, run.set_budget(all.len()))?;
    let (s, choice, scheme_name) = deploy(&shipped_from)?;
    let _ = writeln!(
        out,
        "## Deployed\n\n{} configurations by {} ({scheme_name} scheme; both chosen by cross-validation over all {} shapes, a network left out per fold, inner score {}), tree depth {}, {} leaves:\n",
        s.configs.len(),
        choice.recipe.name(),
        m.inputs().len(),
        pct_inner(&choice.inner),
        s.tree.shape().0,
        s.tree.shape().1,
    );
    for c in &s.configs {
        let _ = writeln!(out, "- `{c}`");
    }
    if let Some((name, times)) = vendor {
        // (all shapes, shapes of at least 1 GFLOP) x (deployed, per-shape best).
        let mut logs: [[Vec<f64>; 2]; 2] = Default::default();
        let mut tiled = 0;
        for (i, input) in m.inputs().iter().enumerate() {
            let Some(&(_, t)) = times.iter().find(|(k, _)| *k == input.key) else {
                continue;
            };
            let cfg = s.choose(&input.features);
            if cfg.is_some_and(|c| c.get("KERNEL") == Some(&Value::Str("sgemm".into()))) {
                tiled += 1;
            }
            let ours = cfg
                .and_then(|cfg| truth.configs().iter().position(|x| x == cfg))
                .and_then(|c| truth.get(i, c));
            let flops = 2.0 * input.features.iter().take(4).product::<f64>();
            if let (Some(ours), Some((_, best))) = (ours, truth.best(i)) {
                for l in &mut logs[..if flops >= 1e9 { 2 } else { 1 }] {
                    l[0].push((t / ours).ln());
                    l[1].push((t / best).ln());
                }
            }
        }
        let g = |v: &[f64]| (v.iter().sum::<f64>() / v.len().max(1) as f64).exp();
        let _ = writeln!(
            out,
            "\nAgainst {name} on {} shapes (geometric mean of {name}'s time / ours; above 1: faster than {name}): the deployed set {:.3}, the per-shape best measured {:.3}; on the {} shapes of at least 1 GFLOP, {:.3} and {:.3}. The deployed selector picks the tiled SGEMM for {tiled} of {} shapes.",
            logs[0][0].len(),
            g(&logs[0][0]),
            g(&logs[0][1]),
            logs[1][0].len(),
            g(&logs[1][0]),
            g(&logs[1][1]),
            m.inputs().len()
        );
    }
    Ok(out)
}

/// `analyse OUT_DIR`: the tables again from the matrix (and `vendor.json`) a run wrote.
pub fn analyse_dir(dir: &Path) -> Result<()> {
    println!("{}", analyse(&read_run(dir)?)?);
    Ok(())
}

/// `plan OUT_DIR`: the scoring cells [`verify`] plans on a run's matrix, by kind, as if no
/// label cell had been measured yet (the label step changes the sets, and so the plan).
pub fn plan_dir(dir: &Path) -> Result<()> {
    let run = read_run(dir)?;
    let m = &run.matrix;
    let started = Instant::now();
    let budget = (run.label_budget(), run.reserve);
    let (_, planned) = verify(m, &mut m.clone(), budget, |_, _| None)?;
    let first = needed(m, &splits(m), &methods(), &KS_FIRST[..1])?.len();
    println!(
        "{planned} scoring cells ({:.1}% of the {}-cell grid; {first} for the baselines and the k = {DEPLOY_K} sets), planned in {:.1?}",
        100.0 * planned as f64 / m.grid().max(1) as f64,
        m.grid(),
        started.elapsed()
    );
    Ok(())
}

/// `classifiers DIR`: the classifier rows of the tables alone (each split, every main set
/// method, k = 4 and 8, the learnt matrix with each split's label cells), in seconds
/// rather than the minutes of the nested choice: a quick look at a new classifier.
pub fn classifiers_dir(dir: &Path) -> Result<()> {
    let run = read_run(dir)?;
    let truth = run.truth()?;
    let learnt = run.learnt()?;
    let classifiers: Vec<Classifier> = [
        Classifier::Tree(TreeLimits::A),
        Classifier::Tree(TreeLimits::B),
        Classifier::CostTree(TreeLimits::B),
        Classifier::NearestNeighbour,
        Classifier::COST_NEIGHBOURS,
    ]
    .into_iter()
    .chain(Classifier::MODELS)
    .collect();
    for split in splits(&run.matrix) {
        let (lab, _, _) = labelled(
            &run.matrix,
            &learnt,
            &split.train,
            run.set_budget(split.train.len()),
        )?;
        let r = evaluate(
            &lab,
            &truth,
            &split,
            &SetMethod::MAIN,
            &classifiers,
            &[4, 8],
        )?;
        println!("## {}\n\n{}", split.name, r.markdown());
    }
    Ok(())
}
