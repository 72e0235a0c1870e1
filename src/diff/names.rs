//! `diff_kernel_name(name)`: the name a diff pairs kernels by, so that two builds of the same
//! work pair although their mangled details differ. The rule, in order:
//! 1. a cuBLAS, cuBLASLt or CUTLASS GEMM (the name, after a leading `void `, starts with
//!    `sm<N>_`, `ampere_`, `hopper_`, `volta_`, `turing_`, `maxwell_`, `cutlass`, `cublas` or
//!    `nvjet` and contains `gemm`, or starts with `nvjet`) is `gemm (cuBLAS/CUTLASS)`: the
//!    library picks its tile and variant per run;
//! 2. otherwise the leading `void `, every template argument list `<...>` and the argument
//!    list `(...)` at the end are dropped (`(anonymous namespace)` stays a part of the name);
//! 3. a Triton kernel (`triton_...`) loses its trailing `_<number>`, the counter Inductor
//!    numbers its kernels with.
//!
//! Memcpy and Memset pass through. The raw name stays beside the normalized one in the views.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::builder::make_view;
use datafusion::arrow::array::{Array, AsArray, StringViewArray};
use datafusion::arrow::buffer::{Buffer, ScalarBuffer};
use datafusion::arrow::datatypes::DataType;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::{create_udf, ColumnarValue, ScalarUDF, Volatility};
use foldhash::fast::FixedState;

/// The SQL function, over text as the tables hold it (views), to views.
pub fn udf() -> ScalarUDF {
    create_udf(
        "diff_kernel_name",
        vec![DataType::Utf8View],
        DataType::Utf8View,
        Volatility::Immutable,
        Arc::new(invoke),
    )
}

/// A window's ops repeat a few hundred names: each distinct name is normalized once and stored
/// once, and each row gets a view of it. Rows are first looked up by their own view, which is
/// the same for every row that shares the bytes of one dictionary value (Parquet's, and a
/// join's copies of its rows): a 16-byte key in place of a name of a hundred bytes. (Over
/// text, with a copy of each name in and out, this took 0.1 s of a 1 M-event diff.)
fn invoke(args: &[ColumnarValue]) -> DfResult<ColumnarValue> {
    let arrays = ColumnarValue::values_to_arrays(args)?;
    let names = arrays[0].as_string_view();
    let mut block: Vec<u8> = Vec::new();
    let mut by_text: HashMap<&str, u128, FixedState> = HashMap::default();
    let mut by_view: HashMap<u128, u128, FixedState> = HashMap::default();
    let mut views = Vec::with_capacity(names.len());
    for (i, view) in names.views().iter().enumerate() {
        if names.is_null(i) {
            views.push(0);
            continue;
        }
        let normalized = *by_view.entry(*view).or_insert_with(|| {
            let raw = names.value(i);
            *by_text.entry(raw).or_insert_with(|| {
                let name = kernel_name(raw);
                let at = u32::try_from(block.len()).expect("normalized names under 4 GiB");
                block.extend_from_slice(name.as_bytes());
                make_view(name.as_bytes(), 0, at)
            })
        });
        views.push(normalized);
    }
    // SAFETY: every view is `make_view` of a whole `&str` appended to `block` at its offset
    // (block 0), or 0 under a null: what `try_new` checks.
    let out = unsafe {
        StringViewArray::new_unchecked(
            ScalarBuffer::from(views),
            vec![Buffer::from_vec(block)],
            names.nulls().cloned(),
        )
    };
    Ok(ColumnarValue::Array(Arc::new(out)))
}

const GEMM_LIBRARIES: [&str; 8] = [
    "ampere_", "hopper_", "volta_", "turing_", "maxwell_", "cutlass", "cublas", "nvjet",
];

/// The normalized kernel name (see the module's rule).
pub fn kernel_name(raw: &str) -> String {
    if raw.starts_with("Memcpy") || raw.starts_with("Memset") {
        return raw.to_string();
    }
    let name = raw.trim().strip_prefix("void ").unwrap_or(raw.trim());
    let lower = name.to_ascii_lowercase();
    let sm_prefix = lower
        .strip_prefix("sm")
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
    let library = sm_prefix || GEMM_LIBRARIES.iter().any(|p| lower.starts_with(p));
    if library && (lower.contains("gemm") || lower.starts_with("nvjet")) {
        return "gemm (cuBLAS/CUTLASS)".into();
    }
    let mut out = String::with_capacity(name.len());
    let mut depth = 0usize;
    let without_args = strip_argument_list(name);
    for c in without_args.chars() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    let out = out.trim().to_string();
    if out.starts_with("triton_") {
        if let Some((head, counter)) = out.rsplit_once('_') {
            if !counter.is_empty() && counter.chars().all(|c| c.is_ascii_digit()) {
                return head.to_string();
            }
        }
    }
    out
}

/// `name` without the balanced `(...)` that ends it, if one does (its parameter list).
fn strip_argument_list(name: &str) -> &str {
    if !name.ends_with(')') {
        return name;
    }
    let mut depth = 0usize;
    for (at, c) in name.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth -= 1;
                if depth == 0 {
                    let head = &name[..at];
                    // `(anonymous namespace)` is part of a qualified name, not a parameter list
                    return match name[at..].starts_with("(anonymous namespace)") {
                        true => name,
                        false => head.trim_end(),
                    };
                }
            }
            _ => {}
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_and_arguments_are_dropped() {
        assert_eq!(
            kernel_name(
                "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, \
                 at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)"
            ),
            "at::native::vectorized_elementwise_kernel"
        );
        assert_eq!(
            kernel_name("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>(float*, int)"),
            "at::native::(anonymous namespace)::cunn_SoftMaxForward"
        );
        assert_eq!(
            kernel_name("Memcpy HtoD (Pageable -> Device)"),
            "Memcpy HtoD (Pageable -> Device)"
        );
        assert_eq!(kernel_name("my_kernel"), "my_kernel");
    }

    #[test]
    fn the_function_normalizes_each_row_and_keeps_nulls() {
        let names = StringViewArray::from(vec![
            Some("triton_poi_fused_add_mul_0"),
            None,
            Some("void k<int>(float*)"),
            Some("triton_poi_fused_add_mul_0"),
            Some("void k<float>(int)"),
        ]);
        let ColumnarValue::Array(out) = invoke(&[ColumnarValue::Array(Arc::new(names))]).unwrap()
        else {
            panic!("an array")
        };
        let out = out.as_string_view();
        let got: Vec<Option<&str>> = out.iter().collect();
        assert_eq!(
            got,
            [
                Some("triton_poi_fused_add_mul"),
                None,
                Some("k"),
                Some("triton_poi_fused_add_mul"),
                Some("k"),
            ]
        );
        out.to_data().validate_full().unwrap();
    }

    #[test]
    fn gemm_variants_and_triton_counters_map_to_one_name() {
        for gemm in [
            "ampere_sgemm_128x64_nn",
            "sm80_xmma_gemm_f16f16_f16f32_f32_nn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel",
            "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x4_tn_align4>(cutlass_80_tensorop_s1688gemm_128x128_16x4_tn_align4::Params)",
            "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNN",
            "volta_h884gemm_64x64_ldg8_nn",
        ] {
            assert_eq!(kernel_name(gemm), "gemm (cuBLAS/CUTLASS)", "{gemm}");
        }
        assert_eq!(
            kernel_name("triton_poi_fused_add_mul_0"),
            "triton_poi_fused_add_mul"
        );
        assert_eq!(
            kernel_name("triton_red_fused_sum_12"),
            "triton_red_fused_sum"
        );
        assert_eq!(kernel_name("sm_kernel_gemm"), "sm_kernel_gemm");
    }
}
