# Sourced by the GEMM device-directory scripts (make_devrun_epistage.sh, make_devrun_gemm4k.sh):
# gemm_variant_sources SRC TMP writes into TMP the sources of samples/gemm/gemm_portable.wave
# that they compile, all with assume(K % 8 == 0) and assume(N % 8 == 0) (the TMA store's row
# rule): f32.wave (f16 in, f32 C), f16c.wave (f16 C, torch.matmul's output type), bf16.wave
# (bf16 in, f32 C) and bf16c.wave (bf16 in and out); fails if an edit did not apply.
gemm_variant_sources() {
  local src=$1 tmp=$2
  sed 's/^    assume(K > BLOCK_K \* 4);/&\n    assume(K % 8 == 0);\n    assume(N % 8 == 0);/' \
    "$src/samples/gemm/gemm_portable.wave" > "$tmp/f32.wave"
  sed -e 's/c: Memory\[M, N, global, f32\]/c: Memory[M, N, global, f16]/' \
    -e 's/^  write(result, c);/  write(cast(result, f16), c);/' "$tmp/f32.wave" > "$tmp/f16c.wave"
  sed 's/f16]/bf16]/g' "$tmp/f32.wave" > "$tmp/bf16.wave"
  sed -e 's/f16]/bf16]/g' -e 's/cast(result, f16)/cast(result, bf16)/' "$tmp/f16c.wave" \
    > "$tmp/bf16c.wave"
  grep -q 'N % 8 == 0' "$tmp/f32.wave"
  grep -q 'write(cast(result, f16), c)' "$tmp/f16c.wave"
  grep -q 'global, f16\]' "$tmp/f16c.wave"
  grep -q 'write(cast(result, bf16), c)' "$tmp/bf16c.wave"
}
