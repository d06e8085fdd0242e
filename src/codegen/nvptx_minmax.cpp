#include "codegen/nvptx_minmax.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/IntrinsicInst.h"
#include "llvm/IR/IntrinsicsNVPTX.h"
#include "llvm/IR/Module.h"

#include <vector>

namespace wave {

namespace {

// The scalar elements of v (v itself when it is a scalar).
std::vector<llvm::Value *> elements(llvm::IRBuilder<> &b, llvm::Value *v) {
  auto *vt = llvm::dyn_cast<llvm::FixedVectorType>(v->getType());
  if (!vt)
    return {v};
  std::vector<llvm::Value *> out;
  for (unsigned i = 0; i < vt->getNumElements(); ++i)
    out.push_back(b.CreateExtractElement(v, b.getInt32(i)));
  return out;
}

} // namespace

void useNvptxNaNMinMax(llvm::Module &module) {
  for (llvm::Function &f : module)
    for (llvm::BasicBlock &bb : f)
      for (llvm::Instruction &inst : llvm::make_early_inc_range(bb)) {
        auto *call = llvm::dyn_cast<llvm::IntrinsicInst>(&inst);
        if (!call)
          continue;
        const llvm::Intrinsic::ID id = call->getIntrinsicID();
        const bool pairwise = id == llvm::Intrinsic::maximum || id == llvm::Intrinsic::minimum;
        const bool reduce = id == llvm::Intrinsic::vector_reduce_fmaximum ||
                            id == llvm::Intrinsic::vector_reduce_fminimum;
        if ((!pairwise && !reduce) || !call->getType()->getScalarType()->isFloatTy())
          continue;
        const bool isMax =
            id == llvm::Intrinsic::maximum || id == llvm::Intrinsic::vector_reduce_fmaximum;
        llvm::Function *fn = llvm::Intrinsic::getDeclaration(
            &module, isMax ? llvm::Intrinsic::nvvm_fmax_nan_f : llvm::Intrinsic::nvvm_fmin_nan_f);
        llvm::IRBuilder<> b(call);
        llvm::Value *result = nullptr;
        if (pairwise) {
          std::vector<llvm::Value *> x = elements(b, call->getArgOperand(0)),
                                     y = elements(b, call->getArgOperand(1));
          if (x.size() == 1) {
            result = b.CreateCall(fn, {x[0], y[0]});
          } else {
            result = llvm::PoisonValue::get(call->getType());
            for (size_t i = 0; i < x.size(); ++i)
              result = b.CreateInsertElement(result, b.CreateCall(fn, {x[i], y[i]}),
                                             b.getInt32(static_cast<uint32_t>(i)));
          }
        } else {
          std::vector<llvm::Value *> x = elements(b, call->getArgOperand(0));
          while (x.size() > 1) { // a balanced tree: independent instructions first
            std::vector<llvm::Value *> next;
            for (size_t i = 0; i + 1 < x.size(); i += 2)
              next.push_back(b.CreateCall(fn, {x[i], x[i + 1]}));
            if (x.size() % 2)
              next.push_back(x.back());
            x = std::move(next);
          }
          result = x[0];
        }
        call->replaceAllUsesWith(result);
        call->eraseFromParent();
      }
}

} // namespace wave
