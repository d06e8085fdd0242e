# Where the samples' Makefiles find wavec and the runtime (included by each of them).
#   WAVEC        the compiler: as given, else this tree's build (../../build/wavec), else the
#                `wavec` on PATH (an installed one)
#   RUNTIME_INC  <wave/runtime.h>: the install prefix's include/ next to WAVEC's bin/, else the
#                source tree of WAVEC's build directory
#   RUNTIME_LIB  the directory of libwave_runtime.so: the prefix's lib*/, else build/runtime/
# Any of them may be given on the command line instead.
WAVEC ?= $(or $(wildcard ../../build/wavec),$(shell command -v wavec 2>/dev/null))
ifeq ($(strip $(WAVEC)),)
$(error no wavec: build this tree (bash scripts/build.sh), put an installed wavec on PATH, or pass WAVEC=/path/to/wavec)
endif
WAVEC_BINDIR := $(abspath $(dir $(shell command -v $(WAVEC) 2>/dev/null || echo $(WAVEC))))
WAVEC_PREFIX := $(abspath $(WAVEC_BINDIR)/..)
ifneq ($(wildcard $(WAVEC_PREFIX)/include/wave/runtime.h),)
  RUNTIME_INC ?= $(WAVEC_PREFIX)/include
  RUNTIME_LIB ?= $(patsubst %/,%,$(dir $(firstword $(wildcard $(WAVEC_PREFIX)/lib*/libwave_runtime.so $(WAVEC_PREFIX)/lib/*/libwave_runtime.so))))
else
  RUNTIME_INC ?= $(or $(wildcard ../../runtime/include),$(shell sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' $(WAVEC_BINDIR)/CMakeCache.txt 2>/dev/null)/runtime/include)
  RUNTIME_LIB ?= $(WAVEC_BINDIR)/runtime
endif
