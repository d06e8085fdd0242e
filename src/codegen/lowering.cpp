// MLIR text -> the requested output (lowering.h).
//
//   parse -> canonicalize, cse                                   (--emit=mlir stops here)
//   gpu.module: arith-expand, scf-to-cf, convert-gpu-to-rocdl{chipset, index 64, bare pointers}
//               or convert-gpu-to-nvvm{index 64, bare pointers}, convert-nvvm-to-llvm (inline
//               PTX for wgmma and fence.proxy); reconcile-unrealized-casts
//   translate the gpu.module to LLVM IR; triple, data layout, AMD code-object-version flag,
//   max flat workgroup size = the block; LLVM's O0..O3 pipeline    (--emit=llvm)
//   AMDGPU/NVPTX code generation: ISA or PTX text                   (--emit=asm, ptx)
//   AMD: object -> lld's ELF linker in process (`ld.lld -shared`) -> HSACO;
//   NVIDIA: PTX -> `ptxas` -> cubin.
// Each step's wall time goes to options.timings when set (wavec --time-passes).
//
// Only the dialects and passes used here are registered (InitAllDialects costs ~50 s to compile
// and milliseconds at every start).
#include "codegen/lowering.h"

#include "codegen/emu_translate.h"
#include "codegen/nvptx_minmax.h"

#include "mlir/Conversion/GPUToNVVM/GPUToNVVMPass.h"
#include "mlir/Conversion/GPUToROCDL/GPUToROCDLPass.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/LLVMIR/ROCDLDialect.h"
#include "mlir/Dialect/LLVMIR/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/ROCDL/ROCDLToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/IR/DebugInfo.h"
#include "llvm/Analysis/LoopInfo.h"
#include "llvm/IR/Dominators.h"
#include "llvm/IR/InlineAsm.h"
#include "lld/Common/Driver.h"

#include "llvm/IR/DiagnosticInfo.h"
#include "llvm/IR/DiagnosticPrinter.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/BinaryFormat/ELF.h"
#include "llvm/BinaryFormat/MsgPackDocument.h"
#include "llvm/IR/Constants.h"
#include "llvm/Object/ELF.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>

LLD_HAS_DRIVER(elf)

extern "C" {
void LLVMInitializeAMDGPUTargetInfo();
void LLVMInitializeAMDGPUTarget();
void LLVMInitializeAMDGPUTargetMC();
void LLVMInitializeAMDGPUAsmPrinter();
void LLVMInitializeNVPTXTargetInfo();
void LLVMInitializeNVPTXTarget();
void LLVMInitializeNVPTXTargetMC();
void LLVMInitializeNVPTXAsmPrinter();
}

#ifndef WAVEC_LLVM_TOOLS_DIR
#define WAVEC_LLVM_TOOLS_DIR "/usr/lib/llvm-19/bin"
#endif

namespace wave {

namespace {

// The name of the emitted MLIR text as a buffer: locations in it are not source locations.
constexpr const char *kMlirBufferName = "<wavec-mlir>";

bool fail(DiagnosticEngine &diags, const TargetInfo &target, const std::string &message) {
  diags.report(DiagId::CodegenFailed, {}, {target.name, message});
  return false;
}

void initTargets(Vendor vendor) {
  static std::once_flag amd, nv;
  if (vendor == Vendor::AMD)
    std::call_once(amd, [] {
      LLVMInitializeAMDGPUTargetInfo();
      LLVMInitializeAMDGPUTarget();
      LLVMInitializeAMDGPUTargetMC();
      LLVMInitializeAMDGPUAsmPrinter();
    });
  else
    std::call_once(nv, [] {
      LLVMInitializeNVPTXTargetInfo();
      LLVMInitializeNVPTXTarget();
      LLVMInitializeNVPTXTargetMC();
      LLVMInitializeNVPTXAsmPrinter();
    });
}

// A temporary file removed when this goes out of scope.
struct TempFile {
  llvm::SmallString<128> path;
  bool create(const char *suffix) {
    return !llvm::sys::fs::createTemporaryFile("wavec", suffix, path);
  }
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};

bool writeFile(const llvm::SmallString<128> &path, const std::string &data) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return false;
  os << data;
  return !os.has_error();
}

bool readFile(const llvm::SmallString<128> &path, std::string &data) {
  auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
  if (!buf)
    return false;
  data = (*buf)->getBuffer().str();
  return true;
}

// Runs a tool; stderr is captured into `message` on failure.
bool runTool(const std::string &program, const std::vector<std::string> &args,
             std::string &message) {
  TempFile err;
  if (!err.create("log")) {
    message = "cannot create a temporary file";
    return false;
  }
  std::vector<llvm::StringRef> argv{program};
  for (const auto &a : args)
    argv.push_back(a);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, std::nullopt,
                                                llvm::StringRef(err.path)};
  std::string execError;
  int rc = llvm::sys::ExecuteAndWait(program, argv, std::nullopt, redirects, 0, 0, &execError);
  if (rc == 0)
    return true;
  std::string log;
  readFile(err.path, log);
  message = "'" + program + "' failed" + (execError.empty() ? "" : ": " + execError) +
            (log.empty() ? "" : ":\n" + log);
  return false;
}

// The LLVM features of the target with the kernels' wave size (gfx1100 runs wave32 or wave64);
// empty with `error` set when kernels of one module disagree.
std::string featuresFor(const TargetInfo &target, const std::vector<CodegenKernel> &kernels,
                        std::string &error) {
  std::string features = target.llvmFeatures;
  if (target.vendor != Vendor::AMD || kernels.empty())
    return features;
  unsigned wave = kernels.front().dist->waveSize;
  for (const auto &k : kernels)
    if (k.dist->waveSize != wave) {
      error = "kernels with different wave sizes in one code object";
      return "";
    }
  std::string out;
  llvm::SmallVector<llvm::StringRef> parts;
  llvm::StringRef(features).split(parts, ',', -1, false);
  for (llvm::StringRef f : parts)
    if (!f.contains("wavefrontsize"))
      out += f.str() + ",";
  return out + "+wavefrontsize" + std::to_string(wave);
}

// Runs a tool and returns its stderr in `log` whatever the exit status.
bool runToolWithLog(const std::string &program, const std::vector<std::string> &args,
                    std::string &log) {
  TempFile err;
  if (!err.create("log"))
    return false;
  std::vector<llvm::StringRef> argv{program};
  for (const auto &a : args)
    argv.push_back(a);
  std::optional<llvm::StringRef> redirects[] = {std::nullopt, std::nullopt,
                                                llvm::StringRef(err.path)};
  int rc = llvm::sys::ExecuteAndWait(program, argv, std::nullopt, redirects);
  readFile(err.path, log);
  return rc == 0;
}

// ptxas from the CUDA toolkit: /usr/local/cuda/bin first, then $PATH; empty when absent.
std::string findPtxas() {
  std::string ptxas = "/usr/local/cuda/bin/ptxas";
  if (llvm::sys::fs::can_execute(ptxas))
    return ptxas;
  auto found = llvm::sys::findProgramByName("ptxas");
  return found ? *found : std::string();
}

KernelResources &resourcesOf(std::vector<KernelResources> &all, llvm::StringRef name) {
  for (auto &r : all)
    if (r.name == name)
      return r;
  all.push_back({});
  all.back().name = name.str();
  return all.back();
}

// The static shared memory of each kernel: the sizes of the address-space-3 globals its
// instructions use (through constant expressions too).
void collectSharedBytes(const llvm::Module &m, const std::vector<CodegenKernel> &kernels,
                        std::vector<KernelResources> &out) {
  for (const auto &k : kernels) {
    const llvm::Function *f = m.getFunction(k.kernel->name);
    if (!f)
      continue;
    int64_t bytes = 0;
    for (const llvm::GlobalVariable &g : m.globals()) {
      if (g.getAddressSpace() != 3)
        continue;
      std::vector<const llvm::User *> work(g.user_begin(), g.user_end());
      bool used = false;
      for (size_t i = 0; i < work.size() && !used; ++i) {
        if (const auto *inst = llvm::dyn_cast<llvm::Instruction>(work[i]))
          used = inst->getFunction() == f;
        else if (llvm::isa<llvm::ConstantExpr>(work[i]))
          work.insert(work.end(), work[i]->user_begin(), work[i]->user_end());
      }
      if (used)
        bytes += static_cast<int64_t>(m.getDataLayout().getTypeAllocSize(g.getValueType()));
    }
    resourcesOf(out, f->getName()).sharedBytes = bytes;
  }
}

// Whether an instruction of the optimized module is a matrix instruction: an MFMA, WMMA or
// mma.sync intrinsic, or the inline PTX of a wgmma (not its fences, commits and waits).
bool isMatrixInstruction(const llvm::Instruction &inst) {
  const auto *call = llvm::dyn_cast<llvm::CallBase>(&inst);
  if (!call)
    return false;
  if (const auto *asmCall = llvm::dyn_cast<llvm::InlineAsm>(call->getCalledOperand())) {
    const std::string &text = asmCall->getAsmString();
    return text.find("mma_async") != std::string::npos || text.find("mma.sync") != std::string::npos;
  }
  const llvm::Function *callee = call->getCalledFunction();
  if (!callee)
    return false;
  const llvm::StringRef n = callee->getName();
  return n.starts_with("llvm.amdgcn.mfma") || n.starts_with("llvm.amdgcn.smfmac") ||
         n.starts_with("llvm.amdgcn.wmma") || n.starts_with("llvm.nvvm.mma.") ||
         n.starts_with("llvm.nvvm.wgmma.mma_async");
}

// Matrix instructions per trip of each innermost loop of each kernel, loops in the order of
// their headers in the function (the static figure --emit=metadata reports; instruction
// selection maps each such call to one instruction).
void collectLoopMatrixOps(llvm::Module &m, const std::vector<CodegenKernel> &kernels,
                          std::vector<KernelResources> &out) {
  for (const auto &k : kernels) {
    llvm::Function *f = m.getFunction(k.kernel->name);
    if (!f || f->isDeclaration())
      continue;
    llvm::DominatorTree dt(*f);
    llvm::LoopInfo loops(dt);
    std::map<const llvm::BasicBlock *, size_t> order;
    for (const llvm::BasicBlock &b : *f)
      order.emplace(&b, order.size());
    std::vector<std::pair<size_t, int64_t>> found;
    for (const llvm::Loop *l : loops.getLoopsInPreorder()) {
      if (!l->isInnermost())
        continue;
      int64_t n = 0;
      for (const llvm::BasicBlock *b : l->blocks())
        for (const llvm::Instruction &inst : *b)
          n += isMatrixInstruction(inst);
      found.push_back({order.at(l->getHeader()), n});
    }
    std::sort(found.begin(), found.end());
    KernelResources &r = resourcesOf(out, f->getName());
    r.loopMatrixOps.clear();
    for (const auto &[at, n] : found)
      r.loopMatrixOps.push_back(n);
  }
}

// Registers, scratch and LDS of each kernel from an HSACO's AMDGPU metadata note.
void readAmdgpuNotes(const std::string &hsaco, std::vector<KernelResources> &out) {
  auto elf = llvm::object::ELF64LEFile::create(hsaco);
  if (!elf) {
    llvm::consumeError(elf.takeError());
    return;
  }
  auto sections = elf->sections();
  if (!sections) {
    llvm::consumeError(sections.takeError());
    return;
  }
  for (const auto &sec : *sections) {
    if (sec.sh_type != llvm::ELF::SHT_NOTE)
      continue;
    llvm::Error err = llvm::Error::success();
    for (const auto &note : elf->notes(sec, err)) {
      if (note.getName() != "AMDGPU" || note.getType() != llvm::ELF::NT_AMDGPU_METADATA)
        continue;
      llvm::ArrayRef<uint8_t> desc = note.getDesc(sec.sh_addralign);
      llvm::msgpack::Document doc;
      if (!doc.readFromBlob(llvm::StringRef(reinterpret_cast<const char *>(desc.data()),
                                            desc.size()),
                            false))
        continue;
      auto &root = doc.getRoot().getMap(true);
      auto kernelsIt = root.find("amdhsa.kernels");
      if (kernelsIt == root.end() || !kernelsIt->second.isArray())
        continue;
      for (auto &kernel : kernelsIt->second.getArray()) {
        if (!kernel.isMap())
          continue;
        auto &map = kernel.getMap();
        auto field = [&](const char *key) -> int64_t {
          auto it = map.find(key);
          if (it == map.end())
            return -1;
          auto kind = it->second.getKind();
          if (kind == llvm::msgpack::Type::UInt)
            return static_cast<int64_t>(it->second.getUInt());
          if (kind == llvm::msgpack::Type::Int)
            return it->second.getInt();
          return -1;
        };
        auto nameIt = map.find(".name");
        if (nameIt == map.end() || !nameIt->second.isString())
          continue;
        KernelResources &r = resourcesOf(out, nameIt->second.getString());
        r.sharedBytes = field(".group_segment_fixed_size");
        r.registers = field(".vgpr_count");
        r.agprs = field(".agpr_count");
        r.sgprs = field(".sgpr_count");
        r.scratchBytes = field(".private_segment_fixed_size");
        int64_t v = field(".vgpr_spill_count"), s = field(".sgpr_spill_count");
        r.spills = v < 0 && s < 0 ? -1 : std::max<int64_t>(v, 0) + std::max<int64_t>(s, 0);
      }
    }
    llvm::consumeError(std::move(err));
  }
}

// Registers, spills and stack of each kernel from `ptxas -v` on the PTX; nothing when ptxas is
// absent or fails (the PTX itself is then reported by whoever assembles it).
void readPtxasResources(const std::string &ptx, const TargetInfo &target,
                        std::vector<KernelResources> &out) {
  std::string ptxas = findPtxas();
  TempFile input, output;
  if (ptxas.empty() || !input.create("ptx") || !output.create("cubin") ||
      !writeFile(input.path, ptx))
    return;
  std::string log;
  if (!runToolWithLog(ptxas,
                      {"-v", "-arch=" + std::string(target.llvmCpu), std::string(input.path),
                       "-o", std::string(output.path)},
                      log))
    return;
  // "Compiling entry function 'NAME' for 'sm_90'", then "N bytes stack frame, N bytes spill
  // stores, ..." and "Used N registers, ..., N bytes smem".
  KernelResources *current = nullptr;
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(log).split(lines, '\n');
  auto numberBefore = [](llvm::StringRef line, llvm::StringRef what) -> int64_t {
    size_t at = line.find(what);
    if (at == llvm::StringRef::npos)
      return -1;
    llvm::StringRef head = line.substr(0, at).rtrim();
    size_t start = head.find_last_not_of("0123456789");
    int64_t value = -1;
    if (head.substr(start == llvm::StringRef::npos ? 0 : start + 1).getAsInteger(10, value))
      return -1;
    return value;
  };
  for (llvm::StringRef line : lines) {
    size_t at = line.find("entry function '");
    if (at != llvm::StringRef::npos) {
      llvm::StringRef rest = line.substr(at + 16);
      current = &resourcesOf(out, rest.substr(0, rest.find('\'')));
      continue;
    }
    if (!current)
      continue;
    if (int64_t n = numberBefore(line, " registers"); n >= 0)
      current->registers = n;
    if (int64_t n = numberBefore(line, " bytes stack frame"); n >= 0)
      current->scratchBytes = n;
    if (int64_t n = numberBefore(line, " bytes spill stores"); n >= 0)
      current->spills = n;
    if (int64_t n = numberBefore(line, " bytes smem"); n >= 0)
      current->sharedBytes = n;
  }
}

// Appends the time since the last lap to options.timings (--time-passes).
class StepTimer {
public:
  explicit StepTimer(const CodegenOptions &o) : out_(o.timings), last_(Clock::now()) {}
  void lap(const char *step) {
    auto now = Clock::now();
    if (out_)
      out_->push_back({step, std::chrono::duration<double, std::milli>(now - last_).count()});
    last_ = now;
  }

private:
  using Clock = std::chrono::steady_clock;
  std::vector<std::pair<std::string, double>> *out_;
  Clock::time_point last_;
};

// Links one relocatable AMDGPU object into an HSACO with lld's ELF driver, in process (an
// `ld.lld` subprocess costs more than the rest of a small compilation). lld reports through
// the given streams and returns; `canRunAgain` false means its state is unusable afterwards.
bool linkHsaco(const std::string &object, const std::string &hsaco, std::string &message) {
  static std::mutex lldMutex; // lld keeps global state: one link at a time
  std::lock_guard<std::mutex> lock(lldMutex);
  static bool broken = false;
  if (broken) {
    message = "lld cannot run again in this process after an earlier failure";
    return false;
  }
  const char *args[] = {"ld.lld", "-shared", "--threads=1", object.c_str(), "-o", hsaco.c_str()};
  std::string out, err;
  llvm::raw_string_ostream outOs(out), errOs(err);
  lld::Result r = lld::lldMain(args, outOs, errOs, {{lld::Gnu, &lld::elf::link}});
  if (!r.canRunAgain)
    broken = true;
  if (r.retCode == 0)
    return true;
  message = "lld failed" + (err.empty() ? std::string() : ":\n" + err);
  return false;
}

// Step 2 of lowerModule: the gpu.module to the LLVM dialect (the ROCDL or NVVM conversions).
bool toLlvmDialect(mlir::ModuleOp module, mlir::MLIRContext &ctx, const TargetInfo &target,
                   DiagnosticEngine &diags, const std::string &mlirErrors) {
  const bool amd = target.vendor == Vendor::AMD;
  mlir::PassManager pm(&ctx);
  mlir::OpPassManager &g = pm.nest<mlir::gpu::GPUModuleOp>();
  if (amd) {
    g.addPass(mlir::arith::createArithExpandOpsPass());
  } else {
    // Only the index divisions: maximumf/minimumf stay llvm.maximum/minimum, which
    // useNvptxNaNMinMax turns into one max.NaN/min.NaN each (arith-expand would make them
    // compare-and-select chains first).
    mlir::RewritePatternSet divisions(&ctx);
    mlir::arith::populateCeilFloorDivExpandOpsPatterns(divisions);
    if (mlir::failed(mlir::applyPatternsAndFoldGreedily(module, std::move(divisions))))
      return fail(diags, target, "expanding index divisions failed");
  }
  g.addPass(mlir::createConvertSCFToCFPass());
  g.addPass(mlir::createConvertVectorToLLVMPass());
  if (amd) {
    g.addPass(mlir::createLowerGpuOpsToROCDLOpsPass(target.llvmCpu, 64,
                                                    /*useBarePtrCallConv=*/true));
  } else {
    mlir::ConvertGpuOpsToNVVMOpsOptions o;
    o.indexBitwidth = 64;
    o.useBarePtrCallConv = true;
    g.addPass(mlir::createConvertGpuOpsToNVVMOps(o));
    // NVVM ops that have no LLVM intrinsic (wgmma, fence.proxy) become inline PTX.
    g.addPass(mlir::createConvertNVVMToLLVMPass());
  }
  g.addPass(mlir::createReconcileUnrealizedCastsPass());
  // A DISubprogram on each llvm.func, so the `.wave` locations become DILocations.
  pm.addPass(mlir::LLVM::createDIScopeForLLVMFuncOpPass());
  if (mlir::failed(pm.run(module)))
    return fail(diags, target, "lowering to the LLVM dialect failed:\n" + mlirErrors);
  return true;
}

// Step 3 of lowerModule, after the translation: the target machine of `target`, set as the
// module's triple and data layout (and, on AMD, the code object version and workgroup sizes
// `blocks`). Null after reporting.
std::unique_ptr<llvm::TargetMachine>
targetMachineFor(llvm::Module &llvmModule, const std::vector<CodegenKernel> &kernels,
                 const TargetInfo &target, const CodegenOptions &options,
                 DiagnosticEngine &diags, const std::map<std::string, unsigned> &blocks) {
  const bool amd = target.vendor == Vendor::AMD;
  initTargets(target.vendor);
  std::string error;
  const llvm::Target *llvmTarget = llvm::TargetRegistry::lookupTarget(target.llvmTriple, error);
  if (!llvmTarget) {
    fail(diags, target, error);
    return nullptr;
  }
  static const llvm::CodeGenOptLevel levels[] = {
      llvm::CodeGenOptLevel::None, llvm::CodeGenOptLevel::Less, llvm::CodeGenOptLevel::Default,
      llvm::CodeGenOptLevel::Aggressive};
  llvm::TargetOptions targetOptions;
  std::string features = featuresFor(target, kernels, error);
  if (!error.empty()) {
    diags.report(DiagId::CodegenUnsupported, {}, {error});
    return nullptr;
  }
  std::unique_ptr<llvm::TargetMachine> tm(llvmTarget->createTargetMachine(
      target.llvmTriple, target.llvmCpu, features, targetOptions, llvm::Reloc::PIC_, std::nullopt,
      levels[std::min(options.optLevel, 3u)]));
  if (!tm) {
    fail(diags, target, "no LLVM target machine for " + std::string(target.llvmCpu));
    return nullptr;
  }
  llvmModule.setTargetTriple(target.llvmTriple);
  llvmModule.setDataLayout(tm->createDataLayout());
  if (amd) {
    llvmModule.addModuleFlag(llvm::Module::Error, "amdhsa_code_object_version",
                             options.codeObjectVersion * 100);
    for (llvm::Function &f : llvmModule) {
      auto it = blocks.find(f.getName().str());
      if (it == blocks.end() || f.getCallingConv() != llvm::CallingConv::AMDGPU_KERNEL)
        continue;
      std::string n = std::to_string(it->second);
      f.addFnAttr("amdgpu-flat-work-group-size", n + "," + n);
    }
  }
  return tm;
}

// Step 4 of lowerModule: LLVM's optimization pipeline at -O`optLevel`.
void optimizeModule(llvm::Module &llvmModule, llvm::TargetMachine &tm, unsigned optLevel,
                    StepTimer &timer) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  static const llvm::OptimizationLevel opt[] = {
      llvm::OptimizationLevel::O0, llvm::OptimizationLevel::O1, llvm::OptimizationLevel::O2,
      llvm::OptimizationLevel::O3};
  unsigned level = std::min(optLevel, 3u);
  llvm::ModulePassManager mpm = level == 0 ? pb.buildO0DefaultPipeline(opt[0])
                                           : pb.buildPerModuleDefaultPipeline(opt[level]);
  timer.lap("target machine");
  mpm.run(llvmModule, mam);
}

// Step 5 of lowerModule: the module's object file (`wantObject`) or assembly into `code`. False
// when the target machine cannot emit that kind of file.
bool machineCode(llvm::Module &llvmModule, llvm::TargetMachine &tm, bool wantObject,
                 std::string &code) {
  llvm::raw_string_ostream os(code);
  llvm::buffer_ostream bos(os);
  llvm::legacy::PassManager pm;
  if (tm.addPassesToEmitFile(pm, bos, nullptr,
                             wantObject ? llvm::CodeGenFileType::ObjectFile
                                        : llvm::CodeGenFileType::AssemblyFile))
    return false;
  pm.run(llvmModule);
  return true;
}

// Step 6 of lowerModule: the machine code `code` linked (HSACO) or assembled (cubin) into
// `out` with an external tool, through temporary files.
bool linkOrAssemble(const std::string &code, const TargetInfo &target,
                    const CodegenOptions &options, DiagnosticEngine &diags, std::string &out) {
  const bool amd = target.vendor == Vendor::AMD;
  TempFile input, output;
  if (!input.create(amd ? "o" : "ptx") || !output.create(amd ? "hsaco" : "cubin") ||
      !writeFile(input.path, code))
    return fail(diags, target, "cannot write a temporary file");
  std::string message;
  if (amd) {
    if (!linkHsaco(std::string(input.path), std::string(output.path), message))
      return fail(diags, target, message);
  } else {
    std::string ptxas = findPtxas();
    if (ptxas.empty()) {
      diags.report(DiagId::ToolNotFound, {}, {"a cubin", "ptxas (CUDA toolkit)"});
      return false;
    }
    if (!runTool(ptxas,
                 {"-arch=" + std::string(target.llvmCpu), std::string(input.path), "-o",
                  std::string(output.path)},
                 message))
      return fail(diags, target, message);
  }
  if (!readFile(output.path, out))
    return fail(diags, target, "cannot read the linked code object");
  if (options.resources && amd)
    readAmdgpuNotes(out, *options.resources);
  return true;
}

} // namespace

// The static figures of --emit=metadata that the optimized module knows: shared bytes, loop
// matrix ops per iteration, the launch's dynamic shared memory.
void collectResources(llvm::Module &m, const std::vector<CodegenKernel> &kernels,
                      const std::map<std::string, int64_t> &dynamicShared,
                      std::vector<KernelResources> &resources) {
  collectSharedBytes(m, kernels, resources);
  collectLoopMatrixOps(m, kernels, resources);
  for (const auto &[name, bytes] : dynamicShared)
    resourcesOf(resources, name).dynamicSharedBytes = bytes;
}

bool lowerModule(const std::string &mlirText, const std::vector<CodegenKernel> &kernels,
                 const TargetInfo &target, const CodegenOptions &options, DiagnosticEngine &diags,
                 std::string &out, EmuImageResult *emu,
                 const std::map<std::string, int64_t> &dynamicShared,
                 const std::map<std::string, int64_t> &producerThreads) {
  const bool amd = target.vendor == Vendor::AMD;
  StepTimer timer(options);
  mlir::DialectRegistry registry;
  registry.insert<mlir::arith::ArithDialect, mlir::gpu::GPUDialect, mlir::LLVM::LLVMDialect,
                  mlir::scf::SCFDialect, mlir::vector::VectorDialect, mlir::cf::ControlFlowDialect,
                  mlir::func::FuncDialect, mlir::memref::MemRefDialect, mlir::ROCDL::ROCDLDialect,
                  mlir::NVVM::NVVMDialect>();
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerGPUDialectTranslation(registry);
  mlir::registerROCDLDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);
  mlir::MLIRContext ctx(registry);
  ctx.disableMultithreading();

  std::string mlirErrors;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    if (d.getSeverity() == mlir::DiagnosticSeverity::Error) {
      llvm::raw_string_ostream os(mlirErrors);
      os << d.getLocation() << ": " << d << "\n";
    }
    return mlir::success();
  });

  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(mlirText, &ctx, kMlirBufferName);
  if (!module)
    return fail(diags, target, "the emitted MLIR does not parse (a wavec bug):\n" + mlirErrors);
  // Ops the emitter gave no `.wave` location keep none (not a line of the MLIR text): only
  // source locations become line info.
  module->walk([&](mlir::Operation *op) {
    auto file = mlir::dyn_cast<mlir::FileLineColLoc>(op->getLoc());
    if (file && file.getFilename().getValue() == kMlirBufferName)
      op->setLoc(mlir::UnknownLoc::get(&ctx));
  });
  timer.lap("MLIR context and parse");

  // 1. clean up the emitted text.
  {
    mlir::PassManager pm(&ctx);
    pm.addPass(mlir::createCanonicalizerPass());
    pm.addPass(mlir::createCSEPass());
    if (mlir::failed(pm.run(*module)))
      return fail(diags, target, "MLIR canonicalization failed:\n" + mlirErrors);
  }
  timer.lap("canonicalize, CSE");
  if (options.output == CodegenOutput::MLIR) {
    llvm::raw_string_ostream os(out);
    module->print(os);
    return true;
  }
  std::map<std::string, unsigned> blocks;
  for (const auto &k : kernels)
    blocks[k.kernel->name] = k.dist->block[0] * k.dist->block[1] * k.dist->block[2];

  // 2. to the LLVM dialect.
  if (!toLlvmDialect(*module, ctx, target, diags, mlirErrors))
    return false;
  timer.lap("lower to LLVM dialect");
  mlir::gpu::GPUModuleOp gpuModule;
  module->walk([&](mlir::gpu::GPUModuleOp m) { gpuModule = m; });

  // 3. LLVM IR. Back-end errors (an intrinsic the target cannot lower) are collected here;
  // LLVM's default handler would exit the process.
  llvm::LLVMContext llvmCtx;
  std::string llvmErrors;
  llvmCtx.setDiagnosticHandlerCallBack(
      [](const llvm::DiagnosticInfo *info, void *context) {
        if (info->getSeverity() != llvm::DS_Error)
          return;
        llvm::raw_string_ostream os(*static_cast<std::string *>(context));
        llvm::DiagnosticPrinterRawOStream printer(os);
        info->print(printer);
        os << "\n";
      },
      &llvmErrors);
  std::unique_ptr<llvm::Module> llvmModule =
      mlir::translateModuleToLLVMIR(gpuModule, llvmCtx, "wave_kernels");
  if (!llvmModule)
    return fail(diags, target, "translation to LLVM IR failed:\n" + mlirErrors);

  timer.lap("translate to LLVM IR");
  std::unique_ptr<llvm::TargetMachine> tm =
      targetMachineFor(*llvmModule, kernels, target, options, diags, blocks);
  if (!tm)
    return false;

  // 4. LLVM's optimization pipeline.
  optimizeModule(*llvmModule, *tm, options.optLevel, timer);
  if (target.vendor == Vendor::NVIDIA)
    useNvptxNaNMinMax(*llvmModule);
  timer.lap("LLVM optimization");
  if (options.resources)
    collectResources(*llvmModule, kernels, dynamicShared, *options.resources);
  // 4b. the emulator image: this very module, right before instruction selection. What the
  // emulator does not model (inline PTX it does not know, ...) the translation refuses by name.
  if (options.output == CodegenOutput::Emu) {
    std::string why;
    if (!translateToEmuImage(*llvmModule, kernels, target, out, why, dynamicShared,
                             producerThreads)) {
      diags.report(DiagId::EmuRequiredUnsupported, {}, {target.name, why});
      return false;
    }
    return true;
  }
  if (emu && options.output != CodegenOutput::LLVM) {
    emu->image.clear();
    emu->error.clear();
    if (!translateToEmuImage(*llvmModule, kernels, target, emu->image, emu->error,
                             dynamicShared, producerThreads))
      emu->image.clear();
    timer.lap("emulator image");
  }
  // Line info (from the .wave locations) stays in the native output only with -g.
  if (!options.debugInfo)
    llvm::StripDebugInfo(*llvmModule);
  if (options.output == CodegenOutput::LLVM) {
    llvm::raw_string_ostream os(out);
    llvmModule->print(os, nullptr);
    return true;
  }

  // 5. machine code.
  std::string code;
  if (!machineCode(*llvmModule, *tm, options.output == CodegenOutput::HSACO, code))
    return fail(diags, target, "the LLVM target cannot emit this file type");
  timer.lap("LLVM code generation");
  if (!llvmErrors.empty())
    return fail(diags, target, "the LLVM back end failed:\n" + llvmErrors);
  if (options.resources && options.registerCounts && !amd)
    readPtxasResources(code, target, *options.resources);
  if (options.output == CodegenOutput::Asm || options.output == CodegenOutput::PTX) {
    out = std::move(code);
    return true;
  }

  // 6. link (HSACO) or assemble (cubin) with an external tool, through temporary files.
  if (!linkOrAssemble(code, target, options, diags, out))
    return false;
  timer.lap(amd ? "link (lld)" : "assemble (ptxas)");
  return true;
}

} // namespace wave
