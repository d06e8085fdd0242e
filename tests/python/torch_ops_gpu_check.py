"""Issue 16's operation checks on silicon: kernels compiled for sm_90 by
scripts/make_devrun_ops.sh (headers and stubs in devrun/ops), called on cuda tensors through the
Python package and compared with torch on fresh random data, outputs poisoned first:
  - samples/histogram: per-row weighted counts of x % 16 (shared-memory and global atomics),
    against scatter_add; hist starts from random counts, which the kernel adds to;
  - tests/e2e/kernels/topk_rows: the 8 largest of each row (f32, and i32 rows divided by 100,
    full of ties), values and indices, ties to the lower index, against a stable sort;
  - tests/e2e/kernels/gather_embed: an embedding lookup with indices in and out of range (out
    of range reads 0), against index_select;
  - samples/moe_routing: the router (softmax, top-2, per-expert counts by scatter_add) against
    torch.softmax/topk/bincount, align_block_size against a padded cumsum, and the sorted token
    ids (scatter_add's cursors, gather, scatter) segment by segment as sets.
    PYTHONPATH=python python3 tests/python/torch_ops_gpu_check.py"""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEV = os.path.join(ROOT, "devrun", "ops")
os.environ.setdefault("WAVE_RUNTIME_LIBRARY", os.path.join(DEV, "libwave_runtime.so.0"))
os.environ.setdefault("WAVE_RUNTIME_INCLUDE", os.path.join(ROOT, "runtime", "include"))
os.environ.setdefault("WAVEC_PY_CACHE", "/tmp/wavec-py-cache")

import torch  # noqa: E402

import wavec  # noqa: E402

failed = 0


def expect(what, ok, detail=""):
    global failed
    print(("ok: " if ok else "FAIL: ") + what + (f" ({detail})" if detail else ""), flush=True)
    failed += not ok


def module(name):
    return wavec.load(os.path.join(DEV, name + ".h"), os.path.join(DEV, name + ".c"))


print(torch.__version__, torch.cuda.get_device_name(0), flush=True)
torch.manual_seed(2026)
dev = "cuda"

hist_mod = module("histogram")
for R, N in [(64, 4096), (37, 1000), (5, 1), (3, 0), (1000, 777)]:
    x = torch.randint(0, 1 << 20, (R, N), device=dev, dtype=torch.int32)
    w = torch.randint(0, 5, (R, N), device=dev, dtype=torch.int32)
    hist = torch.randint(0, 100, (R, 16), device=dev, dtype=torch.int32)
    ref = hist.clone().long()
    ref.scatter_add_(1, (x % 16).long(), w.long())
    hist_mod.histogram(x, w, hist)
    torch.cuda.synchronize()
    bad = int((hist.long() != ref).sum())
    expect(f"histogram R={R} N={N}: every count equals scatter_add's", bad == 0, f"{bad} differ")

topk_mod = module("topk_rows")
K = 8
for M, N in [(1000, 128), (333, 100), (7, 61), (4, 5)]:
    x = torch.randn(M, N, device=dev, dtype=torch.float32)
    a = torch.randint(-100000, 100000, (M, N), device=dev, dtype=torch.int32)
    v = torch.full((M, K), float("nan"), device=dev)
    vi = torch.full((M, K), -7, device=dev, dtype=torch.int32)
    w = torch.full((M, K), -7, device=dev, dtype=torch.int32)
    wi = torch.full((M, K), -7, device=dev, dtype=torch.int32)
    topk_mod.topk_rows(x, v, vi, a, w, wi)
    torch.cuda.synchronize()
    k = min(K, N)
    # Largest first, ties to the lower index: a stable sort of the negated values.
    for name, vals, got_v, got_i in [("f32", x.double(), v, vi),
                                     ("i32 / 100", torch.div(a, 100, rounding_mode="trunc").double(), w, wi)]:
        order = torch.sort(-vals, dim=1, stable=True).indices[:, :k]
        want_v = torch.gather(vals, 1, order)
        ok_v = torch.equal(got_v[:, :k].double(), want_v)
        ok_i = torch.equal(got_i[:, :k].long(), order)
        tail_ok = k == K or bool((got_i[:, k:] == -1).all())
        expect(f"topk {name} M={M} N={N}: values, indices (stable ties) and the short-row fill "
               f"match torch", ok_v and ok_i and tail_ok,
               f"values {ok_v}, indices {ok_i}, fill {tail_ok}")

gather_mod = module("gather_embed")
for T, V, D in [(4096, 50000, 128), (1001, 777, 70), (5, 0, 64)]:
    table = torch.randn(V, D, device=dev)
    ids = torch.randint(-50, V + 50, (T,), device=dev, dtype=torch.int32)
    out = torch.full((T, D), float("nan"), device=dev)
    gather_mod.gather_embed(table, ids, out)
    torch.cuda.synchronize()
    inside = (ids >= 0) & (ids < V)
    ref = torch.zeros(T, D, device=dev)
    if V > 0:
        ref[inside] = table.index_select(0, ids[inside].long())
    expect(f"gather T={T} V={V} D={D}: rows equal index_select's, 0 out of range "
           f"({int((~inside).sum())} of {T} out of range)", torch.equal(out, ref))

moe = module("moe_routing")
K, BLOCK = 2, 16
for T, E in [(4096, 8), (1000, 64), (3, 5)]:
    logits = torch.randn(T, E, device=dev)
    w = torch.full((T, K), float("nan"), device=dev)
    ids = torch.full((T, K), -7, device=dev, dtype=torch.int32)
    counts = torch.zeros(E, device=dev, dtype=torch.int32)
    moe.moe_route(logits, w, ids, counts)
    padded = torch.full((E,), -7, device=dev, dtype=torch.int32)
    offsets = torch.full((E,), -7, device=dev, dtype=torch.int32)
    moe.moe_align(counts, padded, offsets)
    torch.cuda.synchronize()
    p = torch.softmax(logits.double(), dim=1)
    rv, ri = torch.topk(p, K, dim=1)
    werr = float((w.double() - rv).abs().max())
    # An id may differ from torch's only where the two experts' probabilities tie within f32.
    got = ids.long()
    differ = got != ri
    near = (torch.gather(p, 1, got.clamp(0, E - 1)) - rv).abs() < 1e-6
    expect(f"moe_route T={T} E={E}: top-{K} weights (max error {werr:.1e}) and expert ids match "
           f"torch.softmax/topk ({int(differ.sum())} ids differ at f32 ties)",
           werr < 1e-5 and bool((~differ | near).all()))
    ri = got  # the kernel's own choice from here on
    rc = torch.bincount(ri.flatten(), minlength=E)
    expect(f"moe_route T={T} E={E}: per-expert counts equal bincount's", torch.equal(counts.long(), rc))
    rp = (rc + BLOCK - 1) // BLOCK * BLOCK
    ro = torch.cumsum(rp, 0) - rp
    expect(f"moe_align T={T} E={E}: padded counts and segment offsets", torch.equal(padded.long(), rp)
           and torch.equal(offsets.long(), ro))
    P = int(rp.sum())
    cursor = torch.zeros(E, device=dev, dtype=torch.int32)
    sorted_ids = torch.full((P,), T * K, device=dev, dtype=torch.int32)
    moe.moe_sort(ids, offsets, cursor, sorted_ids)
    torch.cuda.synchronize()
    flat = ri.flatten().cpu()
    good = torch.equal(cursor.long().cpu(), rc.cpu())
    sid = sorted_ids.cpu()
    for e in range(E):
        seg = sid[int(ro[e]):int(ro[e]) + int(rp[e])]
        want = sorted((flat == e).nonzero().flatten().tolist())
        n = len(want)
        good &= sorted(seg[:n].tolist()) == want and bool((seg[n:] == T * K).all())
    expect(f"moe_sort T={T} E={E}: every expert's segment holds its pairs (as a set) and the fill",
           good)

print("torch_ops_gpu_check:", "FAILED" if failed else "all passed", flush=True)
sys.exit(1 if failed else 0)
