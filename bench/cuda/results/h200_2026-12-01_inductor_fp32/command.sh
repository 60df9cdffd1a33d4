#!/usr/bin/env bash
# One nvidia-h200 call (2026-12-01, eighth session): Inductor's generated Triton source for the
# shapes where torch.compile still leads most (fp32 plain H 16384 and 8192, fp32 plain 1024 x 4096,
# bf16 fused 65536 x 5120), kept this time (r/inductor_code.log). Logs under $OUT/ind.tgz.
set -uo pipefail
source .gpu/env.sh
R=/tmp/ind; rm -rf "$R"; mkdir -p "$R"
export TRITON_CACHE_DIR=$R/triton_cache
TORCH_LOGS=output_code timeout 200 python3 bench/cuda/inductor_probe.py --calls 3 \
  --shapes fp32:plain:65536x16384,fp32:plain:4096x16384,fp32:plain:65536x8192,fp32:plain:1024x4096,bf16:fused:65536x5120 \
  > "$R/inductor_code.log" 2>&1
echo "probe rc=$?"
find "$R/triton_cache" -name '*.json' | xargs grep -l '"num_warps"' | head -20 | while read -r f; do
  echo "== $f"; python3 -c "import json,sys; d=json.load(open('$f')); print({k: d.get(k) for k in ('name','num_warps','num_stages','shared','n_regs','n_spills')})"
done > "$R/kernel_meta.txt" 2>&1
find "$R/triton_cache" -name '*.ptx' -exec cp {} "$R/" \; 2>/dev/null
rm -rf "$R/triton_cache"
tar czf "$OUT/ind.tgz" -C /tmp ind
