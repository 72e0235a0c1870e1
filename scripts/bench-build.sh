# Sourced by the bench scripts: build tracesql with the bench profile and set $bin to it.
#
# TRACESQL_BENCH_PROFILE picks the Cargo profile: `release` (default; thin-local LTO, 16
# codegen units: a one-file change rebuilds in minutes, for A/B runs) or `dist` (fat LTO, one
# codegen unit: what ships). The builds live in their own target dir
# ($TRACESQL_RELEASE_TARGET, default ~/.cache/tracesql-target-release) so they never hold the
# lock of the dev/test one. Extra cargo arguments: $bench_cargo_args (an array, optional).
# TRACESQL_BIN skips the build and names the binary (e.g. an older build, for before/after).
bench_profile=${TRACESQL_BENCH_PROFILE:-release}
if [[ -n "${TRACESQL_BIN:-}" ]]; then
  bin=$TRACESQL_BIN
  echo "bench binary: $bin (TRACESQL_BIN)" >&2
else
  export CARGO_TARGET_DIR="${TRACESQL_RELEASE_TARGET:-$HOME/.cache/tracesql-target-release}"
  cargo build --profile "$bench_profile" --quiet "${bench_cargo_args[@]}"
  bin="$CARGO_TARGET_DIR/$bench_profile/tracesql"
  echo "bench binary: profile $bench_profile, $bin" >&2
fi
