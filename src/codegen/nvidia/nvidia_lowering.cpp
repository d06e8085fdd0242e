// NVIDIA's target lowering (nvidia_lowering.h).
#include "codegen/nvidia/nvidia_lowering.h"

#include <map>
#include <vector>

namespace wave::codegen {

void NvidiaLowering::mathIntrinsic(const std::string &res, const std::string &name,
                                   const std::string &arg, ScalarType inT, int64_t e) {
  static const std::map<std::string, std::string> nvApprox = {{"exp2", "ex2.approx.ftz.f"},
                                                              {"log2", "lg2.approx.f"},
                                                              {"sin", "sin.approx.f"},
                                                              {"cos", "cos.approx.f"}};
  auto nv = nvApprox.find(name);
  if (nv == nvApprox.end()) {
    TargetLowering::mathIntrinsic(res, name, arg, inT, e);
    return;
  }
  // NVPTX has no lowering for llvm.exp2/log2/sin/cos: the PTX approximations, in f32,
  // one element at a time.
  const std::string ity = vecType(inT, e);
  const std::string ety = mlirType(inT);
  const bool f32 = inT == ScalarType::F32;
  std::string vec;
  if (e > 1) {
    vec = fresh();
    line(vec + " = arith.constant dense<0.0> : " + ity);
  }
  for (int64_t k = 0; k < e; ++k) {
    const bool last = k + 1 == e;
    std::string x = arg;
    if (e > 1) {
      x = fresh();
      line(x + " = vector.extract " + arg + "[" + std::to_string(k) + "] : " + ety + " from " +
           ity);
    }
    if (!f32) {
      std::string w = fresh();
      line(w + " = arith.extf " + x + " : " + ety + " to f32");
      x = w;
    }
    std::string y = e == 1 && f32 ? res : fresh();
    line(y + " = llvm.call_intrinsic \"llvm.nvvm." + nv->second + "\"(" + x +
         ") : (f32) -> f32");
    if (!f32) {
      std::string n = e == 1 ? res : fresh();
      line(n + " = arith.truncf " + y + " : f32 to " + ety);
      y = n;
    }
    if (e > 1) {
      std::string n = last ? res : fresh();
      line(n + " = vector.insert " + y + ", " + vec + " [" + std::to_string(k) + "] : " + ety +
           " into " + ity);
      vec = n;
    }
  }
}

// mma.sync through the NVVM intrinsic (MLIR 19's nvvm.mma.sync rejects bf16).
std::string NvidiaLowering::mmaInstruction(const MmaKind &k, ScalarType in, const std::string &a,
                                           const std::string &b, const std::string &c) {
  const std::string cty = vecType(k.acc, k.c.elements);
  const bool bf = in == ScalarType::BF16;
  auto regs = [&](const std::string &x, int64_t e) {
    const int64_t words = e / 2;
    std::string w = bitcast(x, vecType(in, e), "vector<" + std::to_string(words) + "xi32>");
    std::vector<std::string> out;
    for (int64_t j = 0; j < words; ++j) {
      std::string r = fresh();
      line(r + " = vector.extract " + w + "[" + std::to_string(j) + "] : i32 from vector<" +
           std::to_string(words) + "xi32>");
      out.push_back(bf ? r : bitcast(r, "i32", vecType(in, 2)));
    }
    return out;
  };
  std::vector<std::string> args = regs(a, k.a.elements), bs = regs(b, k.b.elements);
  args.insert(args.end(), bs.begin(), bs.end());
  std::string sig;
  const std::string rty = bf ? "i32" : vecType(in, 2);
  for (size_t j = 0; j < args.size(); ++j)
    sig += (j ? ", " : "") + rty;
  for (unsigned j = 0; j < k.c.elements; ++j) {
    std::string x = fresh();
    line(x + " = vector.extract " + c + "[" + std::to_string(j) + "] : f32 from " + cty);
    args.push_back(x);
    sig += ", f32";
  }
  std::string list;
  for (size_t j = 0; j < args.size(); ++j)
    list += (j ? ", " : "") + args[j];
  const std::string shape = "m" + std::to_string(k.m) + "n" + std::to_string(k.n) + "k" +
                            std::to_string(k.k);
  std::string sty = "!llvm.struct<(f32, f32, f32, f32)>", s = fresh();
  line(s + " = llvm.call_intrinsic \"llvm.nvvm.mma." + shape + ".row.col." +
       (bf ? "bf16" : "f32.f32") + "\"(" + list + ") : (" + sig + ") -> " + sty);
  std::string vec = fresh();
  line(vec + " = llvm.mlir.undef : " + cty);
  for (unsigned j = 0; j < k.c.elements; ++j) {
    std::string x = fresh(), r = fresh();
    line(x + " = llvm.extractvalue " + s + "[" + std::to_string(j) + "] : " + sty);
    line(r + " = vector.insert " + x + ", " + vec + " [" + std::to_string(j) + "] : f32 into " +
         cty);
    vec = r;
  }
  return vec;
}

// cp.async.cg: 16 bytes through L2 only; a source size of 0 fills the 16 bytes with zeros.
void NvidiaLowering::asyncCopy(const std::string &dst, const std::string &src,
                               const std::string &bytes) {
  line("llvm.call_intrinsic \"llvm.nvvm.cp.async.cg.shared.global.16.s\"(" + dst + ", " + src +
       ", " + bytes + ") : (!llvm.ptr<3>, !llvm.ptr<1>, i32) -> ()");
}

// TMA (sm_90): cp.async.bulk.tensor and the mbarriers it completes on, as inline PTX (MLIR
// 19's NVVM ops for them lower through the same text). Shared addresses go in as 32-bit
// registers (the shared window fits 32 bits); the tensor map's global address as a 64-bit
// generic one. PTX ISA: "cp.async.bulk.tensor", "mbarrier".
bool NvidiaLowering::tensorCopies() const { return target_.warpgroupMma; }

namespace {
std::string sharedAddress(LoweringHost &host, const std::string &ptr) {
  std::string a = host.fresh();
  host.line(a + " = llvm.ptrtoint " + ptr + " : !llvm.ptr<3> to i32");
  return a;
}
} // namespace

void NvidiaLowering::barrierInit(const std::string &bar, int count) {
  line("llvm.inline_asm has_side_effects asm_dialect = att \"mbarrier.init.shared::cta.b64 "
       "[$0], " + std::to_string(count) + ";\", \"r\" " + sharedAddress(host_, bar) +
       " : (i32) -> ()");
}

void NvidiaLowering::barrierInitFence() {
  line("llvm.inline_asm has_side_effects asm_dialect = att \"fence.mbarrier_init.release."
       "cluster;\\0Afence.proxy.async.shared::cta;\", \"\" : () -> ()");
}

void NvidiaLowering::barrierArriveExpect(const std::string &bar, int64_t bytes) {
  line("llvm.inline_asm has_side_effects asm_dialect = att \"{\\0A.reg .b64 st;\\0A"
       "mbarrier.arrive.expect_tx.shared::cta.b64 st, [$0], " + std::to_string(bytes) +
       ";\\0A}\", \"r\" " + sharedAddress(host_, bar) + " : (i32) -> ()");
}

void NvidiaLowering::tensorCopy(const std::string &dst, const std::string &map,
                                const std::vector<std::string> &coords, const std::string &bar) {
  const std::string d = sharedAddress(host_, dst), b = sharedAddress(host_, bar), m = fresh();
  line(m + " = llvm.ptrtoint " + map + " : !llvm.ptr<1> to i64");
  const size_t n = coords.size();
  std::string list, values, types, constraints = "r,l,";
  for (size_t i = 0; i < n; ++i) {
    list += (i ? ", $" : "$") + std::to_string(i + 2);
    values += ", " + coords[i];
    types += ", i32";
    constraints += "r,";
  }
  line("llvm.inline_asm has_side_effects asm_dialect = att \"cp.async.bulk.tensor." +
       std::to_string(n) + "d.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1, {" +
       list + "}], [$" + std::to_string(n + 2) + "];\", \"" + constraints + "r\" " +
       d + ", " + m + values + ", " + b + " : (i32, i64" + types + ", i32) -> ()");
}

void NvidiaLowering::tensorStore2d(const std::string &src, const std::string &map,
                                   const std::string &col, const std::string &row) {
  const std::string d = sharedAddress(host_, src), m = fresh();
  line(m + " = llvm.ptrtoint " + map + " : !llvm.ptr<1> to i64");
  line("llvm.inline_asm has_side_effects asm_dialect = att \"cp.async.bulk.tensor.2d.global."
       "shared::cta.bulk_group [$0, {$1, $2}], [$3];\\0Acp.async.bulk.commit_group;\", "
       "\"l,r,r,r,~{memory}\" " + m + ", " + col + ", " + row + ", " + d +
       " : (i64, i32, i32, i32) -> ()");
}

void NvidiaLowering::tensorStoreWaitRead() {
  line("llvm.inline_asm has_side_effects asm_dialect = att \"cp.async.bulk.wait_group.read 0;\", "
       "\"~{memory}\" : () -> ()");
}

// try_wait suspends for a while before it answers false; the loop asks again until the phase
// has completed (the label is unique per instance).
void NvidiaLowering::barrierWait(const std::string &bar, const std::string &parity) {
  line("llvm.inline_asm has_side_effects asm_dialect = att \"{\\0A.reg .pred p;\\0A"
       "wave_wait_${:uid}:\\0Ambarrier.try_wait.parity.shared::cta.b64 p, [$0], $1;\\0A"
       "@!p bra wave_wait_${:uid};\\0A}\", \"r,r\" " + sharedAddress(host_, bar) + ", " +
       parity + " : (i32, i32) -> ()");
}

void NvidiaLowering::barrierArrive(const std::string &bar) {
  line("llvm.inline_asm has_side_effects asm_dialect = att \"{\\0A.reg .b64 st;\\0A"
       "mbarrier.arrive.shared::cta.b64 st, [$0];\\0A}\", \"r\" " + sharedAddress(host_, bar) +
       " : (i32) -> ()");
}

void NvidiaLowering::setRegisterLimit(int regs, bool increase) {
  line(std::string("llvm.inline_asm has_side_effects asm_dialect = att \"setmaxnreg.") +
       (increase ? "inc" : "dec") + ".sync.aligned.u32 " + std::to_string(regs) +
       ";\", \"\" : () -> ()");
}

void NvidiaLowering::exitThread() {
  line("llvm.inline_asm has_side_effects asm_dialect = att \"exit;\", \"\" : () -> ()");
}

void NvidiaLowering::namedBarrier(int id, int threads, bool arrive) {
  line(std::string("llvm.inline_asm has_side_effects asm_dialect = att \"bar.") +
       (arrive ? "arrive " : "sync ") + std::to_string(id) + ", " + std::to_string(threads) +
       ";\", \"\" : () -> ()");
}

std::string NvidiaLowering::registerFence(const std::string &x) {
  const std::string r = fresh();
  line(r + " = llvm.inline_asm has_side_effects asm_dialect = att \"\", \"=f,0\" " + x +
       " : (f32) -> f32");
  return r;
}

void NvidiaLowering::asyncCommit() {
  line("llvm.call_intrinsic \"llvm.nvvm.cp.async.commit.group\"() : () -> ()");
}

std::vector<std::string> NvidiaLowering::asyncWait(int keep, const std::string &name) {
  if (keep <= 0)
    return {"llvm.call_intrinsic \"llvm.nvvm.cp.async.wait.all\"() : () -> ()"};
  return {name + " = llvm.mlir.constant(" + std::to_string(keep) + " : i32) : i32",
          "llvm.call_intrinsic \"llvm.nvvm.cp.async.wait.group\"(" + name + ") : (i32) -> ()"};
}

// wgmma reads shared memory through the async proxy: writes made by ordinary stores must be
// fenced into it before the barrier that publishes them.
std::string NvidiaLowering::asyncProxyFence() const {
  return "nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, "
         "space = #nvvm.shared_space<cta>}";
}

void NvidiaLowering::warpgroupFence() { line("nvvm.wgmma.fence.aligned"); }

void NvidiaLowering::warpgroupMma(const std::string &res, const MmaKind &k, ScalarType in,
                                  const std::string &aDesc, const std::string &bDesc,
                                  const std::string &acc, bool bNMajor, bool zeroC) {
  const std::string ty = in == ScalarType::F16        ? "f16"
                         : in == ScalarType::BF16     ? "bf16"
                         : in == ScalarType::F8E4M3FN ? "e4m3"
                                                      : "e5m2";
  const std::string shape = "#nvvm.shape<m = " + std::to_string(k.m) +
                            ", n = " + std::to_string(k.n) + ", k = " + std::to_string(k.k) + ">";
  const std::string sty = f32StructType(k.c.elements);
  line(res + " = nvvm.wgmma.mma_async " + aDesc + ", " + bDesc + ", " + acc + ", " + shape +
       ", D [<f32>, #nvvm.wgmma_scale_out<" + (zeroC ? "zero" : "one") + ">], A [<" + ty +
       ">, #nvvm.wgmma_scale_in<one>, <row>], B [<" + ty + ">, #nvvm.wgmma_scale_in<one>, <" +
       (bNMajor ? "row" : "col") + ">] : " + sty + " -> " + sty);
}

// MLIR 19's nvvm.wgmma.mma_async takes A only through a descriptor: the register form as
// inline PTX, the accumulators tied to the results.
void NvidiaLowering::warpgroupMmaRegisterA(
    const std::string &res, const MmaKind &k, ScalarType in, const std::string &acc,
    const std::function<const std::vector<std::string> &()> &fragments, const std::string &bDesc,
    bool bNMajor, bool zeroC) {
  const int64_t n = k.c.elements;
  const std::string sty = f32StructType(n);
  const std::string ty = in == ScalarType::F16 ? "f16" : "bf16";
  const std::string ptxShape = "m" + std::to_string(k.m) + "n" + std::to_string(k.n) + "k" +
                               std::to_string(k.k);
  std::string text = std::string("{\\0A.reg .pred p;\\0Asetp.ne.b32 p, ") + (zeroC ? "0" : "1") +
                     ", 0;\\0Awgmma.mma_async.sync.aligned." +
                     ptxShape + ".f32." + ty + "." + ty + " {";
  std::string cons, args, types;
  for (int64_t j = 0; j < n; ++j) {
    text += (j ? ", $" : "$") + std::to_string(j);
    cons += "=f,";
  }
  text += "}, {";
  for (int j = 0; j < 4; ++j)
    text += (j ? ", $" : "$") + std::to_string(2 * n + j);
  text += "}, $" + std::to_string(2 * n + 4) + ", p, 1, 1, " + (bNMajor ? "1" : "0") +
          ";\\0A}";
  fresh(); // keeps the SSA numbering of earlier releases (this name is unused)
  for (int64_t j = 0; j < n; ++j) {
    std::string x = fresh();
    line(x + " = llvm.extractvalue " + acc + "[" + std::to_string(j) + "] : " + sty);
    args += (j ? ", " : "") + x;
    types += j ? ", f32" : "f32";
    cons += std::to_string(j) + ",";
  }
  for (const std::string &wd : fragments()) {
    args += ", " + wd;
    types += ", i32";
    cons += "r,";
  }
  args += ", " + bDesc;
  types += ", i64";
  cons += "l";
  line(res + " = llvm.inline_asm has_side_effects asm_dialect = att \"" + text + "\", \"" +
       cons + "\" " + args + " : (" + types + ") -> " + sty);
}

void NvidiaLowering::warpgroupCommit() { line("nvvm.wgmma.commit.group.sync.aligned"); }

void NvidiaLowering::warpgroupWait(int keep) {
  line("nvvm.wgmma.wait.group.sync.aligned " + std::to_string(keep));
}

std::string NvidiaLowering::matrixLoad(const std::string &ptr, unsigned regs, bool trans,
                                       const std::string &structType) {
  std::string s = fresh();
  line(s + " = llvm.call_intrinsic \"llvm.nvvm.ldmatrix.sync.aligned.m8n8.x" +
       std::to_string(regs) + (trans ? ".trans" : "") + ".b16\"(" + ptr +
       ") : (!llvm.ptr<3>) -> " + structType);
  return s;
}

} // namespace wave::codegen
