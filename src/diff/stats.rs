//! `diff_mann_whitney_p(base, new)`: the two-sided p-value of the Mann-Whitney U test between
//! two lists of per-step values, the noise test of a diff. It asks whether one run's values
//! tend to be larger than the other's, without assuming a distribution, which suits step
//! times with their occasional slow step. Exact (the U distribution counted) when there are
//! no ties and both lists have at most 30 values; else the normal approximation with the tie
//! correction and a continuity correction. Equal lists give 1; a list of fewer than one value
//! gives NULL.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, Float64Array};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type};
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{create_udf, ColumnarValue, ScalarUDF, Volatility};

/// The SQL function, over two lists of Int64 (as `array_agg` makes them).
pub fn udf() -> ScalarUDF {
    let list = DataType::List(Arc::new(Field::new("item", DataType::Int64, true)));
    create_udf(
        "diff_mann_whitney_p",
        vec![list.clone(), list],
        DataType::Float64,
        Volatility::Immutable,
        Arc::new(invoke),
    )
}

fn invoke(args: &[ColumnarValue]) -> DfResult<ColumnarValue> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let (a, b) = (arrays[0].as_list::<i32>(), arrays[1].as_list::<i32>());
    let values = |list: &datafusion::arrow::array::ListArray, i: usize| -> Vec<f64> {
        let row = list.value(i);
        let row = row.as_primitive::<Int64Type>();
        row.iter().flatten().map(|v| v as f64).collect()
    };
    let out: Float64Array = (0..a.len())
        .map(|i| {
            (a.is_valid(i) && b.is_valid(i))
                .then(|| mann_whitney_p(&values(a, i), &values(b, i)))
                .flatten()
        })
        .collect();
    Ok(ColumnarValue::Array(Arc::new(out)))
}

/// The two-sided p-value of the Mann-Whitney U test between `x` and `y` (see the module).
pub fn mann_whitney_p(x: &[f64], y: &[f64]) -> Option<f64> {
    let (n, m) = (x.len(), y.len());
    if n == 0 || m == 0 {
        return None;
    }
    // U: pairs where y is larger, ties counting half; ranks over both lists for ties
    let mut u = 0.0f64;
    for a in x {
        for b in y {
            u += match b.partial_cmp(a) {
                Some(std::cmp::Ordering::Greater) => 1.0,
                Some(std::cmp::Ordering::Equal) => 0.5,
                _ => 0.0,
            };
        }
    }
    let mut all: Vec<f64> = x.iter().chain(y).copied().collect();
    all.sort_by(|a, b| a.total_cmp(b));
    let mut tie_term = 0.0; // sum of t^3 - t over groups of equal values
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1] == all[i] {
            j += 1;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    let (nf, mf) = (n as f64, m as f64);
    let mean = nf * mf / 2.0;
    if tie_term == 0.0 && n <= 30 && m <= 30 {
        let counts = u_distribution(n, m);
        let total: f64 = counts.iter().sum();
        let k = u.round() as usize;
        let below: f64 = counts[..=k].iter().sum::<f64>() / total;
        let above: f64 = counts[k..].iter().sum::<f64>() / total;
        return Some((2.0 * below.min(above)).min(1.0));
    }
    let total = nf + mf;
    let variance = nf * mf / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)));
    if variance <= 0.0 {
        return Some(1.0); // every value equal
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / variance.sqrt();
    Some(erfc(z / std::f64::consts::SQRT_2).min(1.0))
}

/// How many orderings of `n` x-values and `m` y-values give each U = 0..=n*m (no ties): the
/// recursion on the largest value, which is an x (U unchanged) or a y (U grows by n).
fn u_distribution(n: usize, m: usize) -> Vec<f64> {
    // counts[i][j][u], kept as one layer per i over (j, u)
    let width = n * m + 1;
    let mut prev: Vec<Vec<f64>> = vec![vec![0.0; width]; m + 1];
    for row in prev.iter_mut() {
        row[0] = 1.0; // no x-values: U = 0, one ordering
    }
    for i in 1..=n {
        let mut cur: Vec<Vec<f64>> = vec![vec![0.0; width]; m + 1];
        cur[0][0] = 1.0;
        for j in 1..=m {
            for u in 0..width {
                let x_last = prev[j][u];
                let y_last = if u >= i { cur[j - 1][u - i] } else { 0.0 };
                cur[j][u] = x_last + y_last;
            }
        }
        prev = cur;
    }
    prev.swap_remove(m)
}

/// The complementary error function (Numerical Recipes' `erfcc`, relative error < 1.2e-7).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.26551223
        + t * (1.00002368
            + t * (0.37409196
                + t * (0.09678418
                    + t * (-0.18628806
                        + t * (0.27886807
                            + t * (-1.13520398
                                + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_p_values_match_scipy() {
        // scipy.stats.mannwhitneyu(x, y, alternative="two-sided", method="exact")
        let p = mann_whitney_p(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]).unwrap();
        assert!((p - 0.1).abs() < 1e-12, "{p}");
        let p = mann_whitney_p(
            &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            &[7.0, 8.0, 9.0, 10.0, 11.0, 12.0],
        )
        .unwrap();
        assert!((p - 0.0021645021645021645).abs() < 1e-12, "{p}");
        let p = mann_whitney_p(&[1.0, 4.0, 6.0], &[2.0, 3.0, 5.0]).unwrap();
        assert!((p - 1.0).abs() < 1e-12, "{p}");
    }

    #[test]
    fn ties_use_the_normal_approximation_and_equal_lists_give_one() {
        assert_eq!(
            mann_whitney_p(&[5.0, 5.0, 5.0], &[5.0, 5.0, 5.0]),
            Some(1.0)
        );
        assert_eq!(mann_whitney_p(&[1.0, 2.0], &[1.0, 2.0]), Some(1.0));
        // scipy, method="asymptotic" (continuity correction): x=[1,2,2,3,4], y=[3,4,5,5,6]
        let p = mann_whitney_p(&[1.0, 2.0, 2.0, 3.0, 4.0], &[3.0, 4.0, 5.0, 5.0, 6.0]).unwrap();
        assert!((p - 0.034453637039471276).abs() < 1e-6, "{p}");
        assert_eq!(mann_whitney_p(&[], &[1.0]), None);
    }
}
