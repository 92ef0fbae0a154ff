# tfm: one non-recursive Makefile.  Objects go under build/.
#   make                 libtfm.a, libtfm.so, build/bin/tfm-*
#   make check           unit tests, bats tests, man-page lint, fuzz regressions
#   make check-arm64     cross-build for aarch64, kernel tests and a golden under qemu
#   make fuzz            libFuzzer harnesses (tests/fuzz/fuzz.mk)
#   make demo            run a real model
#   make install PREFIX=/usr/local DESTDIR=
#   CUDA=auto|0|1        build the CUDA backend (auto: when nvcc is on PATH)
#   SANITIZE=1           ASan + UBSan
PREFIX   ?= /usr/local
DESTDIR  ?=
CUDA     ?= auto
SANITIZE ?= 0
CC       ?= cc
NVCC     ?= nvcc
B        := build

PKGS     := openblas libarchive libzstd jansson libpcre2-8 libutf8proc
VERSION  := $(shell sed -n 's/^\#define TFM_VERSION "\(.*\)"/\1/p' lib/tfm.h)
SOMAJOR  := $(firstword $(subst ., ,$(VERSION)))
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

# Quiet by default: "  CC  lib/core/blob.c"; V=1 prints the commands.
V        ?= 0
ifeq ($(V),1)
Q        :=
say       =
else
Q        := @
say       = printf '  %-4s %s\n' '$(1)' '$(2)';
endif

OPT      ?= -O2
CFLAGS   ?= $(OPT) -g
XCFLAGS  := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wno-unused-parameter \
            -Wno-sign-compare -fPIC -pthread -Ilib -MMD -MP $(PKG_CFLAGS)
LDLIBS   := $(PKG_LIBS) -lm -pthread
ifeq ($(SANITIZE),1)
XCFLAGS  += -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
LDFLAGS  += -fsanitize=address,undefined -fno-sanitize-recover=all
endif

# CUDA: auto builds the backend when nvcc is on PATH, and says so.
ifeq ($(CUDA),auto)
HAVE_NVCC := $(shell command -v $(NVCC) >/dev/null 2>&1 && echo 1)
CUDA_ON   := $(if $(HAVE_NVCC),1,0)
else
CUDA_ON   := $(CUDA)
endif
CU_SRC   := $(wildcard lib/kernels/cuda/*.cu)
ifeq ($(CUDA_ON),1)
ifneq ($(CU_SRC),)
CUDA_HOME ?= $(patsubst %/bin/,%,$(dir $(shell command -v $(NVCC))))
XCFLAGS  += -DTFM_CUDA=1 -I$(CUDA_HOME)/include
LDLIBS   += -L$(CUDA_HOME)/lib64 -lcudart -lcublas
endif
endif

# Sources are discovered: every lib/**/*.c is in libtfm, every cmd/tfm-*.c is a
# program, every tests/unit/test_*.c is a test program.
# SIMD kernels are named for their instruction set (*-avx2.c, *-avx512.c,
# *-neon.c): only the target's are built (`$(CC) -dumpmachine`).
ARCH     := $(shell $(CC) -dumpmachine 2>/dev/null)
ifneq ($(filter aarch64% arm64%,$(ARCH)),)
NOT_ISA  := %-avx2.c %-avx512.c
else
NOT_ISA  := %-neon.c %-dotprod.c
endif
LIB_SRC  := $(sort $(filter-out $(NOT_ISA),$(wildcard lib/*/*.c lib/*/*/*.c)))
LIB_OBJ  := $(LIB_SRC:%.c=$(B)/%.o)
ifeq ($(CUDA_ON),1)
LIB_OBJ  += $(CU_SRC:%.cu=$(B)/%.o)
endif
CMD_SRC  := $(wildcard cmd/tfm-*.c)
CMD_BIN  := $(CMD_SRC:cmd/%.c=$(B)/bin/%)
CMD_COMMON := $(filter-out cmd/tfm-%.c,$(wildcard cmd/*.c))
CMD_COMMON_OBJ := $(CMD_COMMON:%.c=$(B)/%.o)
TEST_SRC := $(wildcard tests/unit/test_*.c)
TEST_BIN := $(TEST_SRC:tests/unit/%.c=$(B)/tests/%)
TEST_COMMON_OBJ := $(patsubst %.c,$(B)/%.o,$(filter-out $(TEST_SRC),$(wildcard tests/unit/*.c)))

# SIMD kernels are compiled for their instruction set and chosen at run time.
$(B)/lib/kernels/cpu/%-avx2.o: XCFLAGS += -mavx2 -mfma -mf16c
$(B)/lib/kernels/cpu/%-avx512.o: XCFLAGS += -mavx512f -mavx512bw -mavx512vl \
	-mavx512dq -mavx512vnni -mavx512bf16 -mfma -mf16c
# the scans round as their references do (GDN, RWKV v5/v6 and mLSTM are
# bit-identical to them): no multiply-add fused unless the code asks
$(B)/lib/kernels/cpu/scan-avx2.o $(B)/lib/kernels/cpu/scan-avx512.o \
$(B)/lib/kernels/cpu/scan-neon.o $(B)/lib/kernels/ref/scan.o: XCFLAGS += -ffp-contract=off
# test_kernels runs scan-simd.h on 64-byte plain C vectors (static
# functions: clang's backend warns of an ABI no caller depends on)
$(B)/tests/unit/test_kernels.o: XCFLAGS += -Wno-psabi -ffp-contract=off
$(B)/lib/quant/%-avx2.o: XCFLAGS += -mavx2 -mfma -mf16c
$(B)/lib/quant/%-avx512.o: XCFLAGS += -mavx512f -mavx512bw -mavx512vl \
	-mavx512dq -mavx512vnni -mavx512bf16 -mfma -mf16c
# aarch64: NEON is in every ARMv8-A processor; *-dotprod.c use SDOT
# (vdotq_s32, ARMv8.2-A's optional dot product), chosen when HWCAP says so
$(B)/lib/kernels/cpu/%-neon.o $(B)/lib/quant/%-neon.o: XCFLAGS += -march=armv8-a
$(B)/lib/kernels/cpu/%-dotprod.o $(B)/lib/quant/%-dotprod.o: XCFLAGS += -march=armv8.2-a+dotprod
# GCC 12's scheduler before register allocation hoists the 64 LD1R of a
# block of igemm-neon.c's kernel and spills its accumulators to the stack
# (580 q-register stack accesses, most in the inner loop; without it 130,
# none in the loop)
$(B)/lib/kernels/cpu/igemm-neon.o: XCFLAGS += -fno-schedule-insns

# The programs' and tests' objects are made by a chain of pattern rules;
# kept (not deleted as intermediate) so that a second make rebuilds nothing.
.SECONDARY: $(CMD_SRC:%.c=$(B)/%.o) $(TEST_SRC:%.c=$(B)/%.o) $(CMD_COMMON_OBJ) \
            $(TEST_COMMON_OBJ)

.PHONY: all deps check check-arm64 unit bats manlint demo install clean cuda-info
all: cuda-info $(B)/libtfm.a $(B)/libtfm.so $(CMD_BIN)

cuda-info:
ifeq ($(CUDA_ON),1)
	@if [ -n "$(CU_SRC)" ]; then echo "cuda: building the CUDA backend ($(NVCC))"; \
	 else echo "cuda: nvcc found, but there are no CUDA kernels yet: CPU only"; fi >&2
else
	@echo "cuda: not built (CUDA=$(CUDA)$(if $(filter auto,$(CUDA)), and no nvcc on PATH))" >&2
endif

$(B)/%.o: %.c
	@mkdir -p $(@D)
	$(Q)$(call say,CC,$<)$(CC) $(XCFLAGS) $(CFLAGS) -c $< -o $@

$(B)/%.o: %.cu
	@mkdir -p $(@D)
	$(Q)$(call say,NVCC,$<)$(NVCC) -O2 -Ilib -Xcompiler -fPIC -c $< -o $@

$(B)/libtfm.a: $(LIB_OBJ)
	@mkdir -p $(@D)
	$(Q)$(call say,AR,$@)rm -f $@ && ar rcs $@ $^

# The shared library is versioned: libtfm.so.VERSION, SONAME libtfm.so.MAJOR.
$(B)/libtfm.so: $(B)/libtfm.so.$(VERSION)
	$(Q)ln -sf libtfm.so.$(VERSION) $(B)/libtfm.so.$(SOMAJOR)
	$(Q)$(call say,LN,$@)ln -sf libtfm.so.$(VERSION) $@

$(B)/libtfm.so.$(VERSION): $(LIB_OBJ)
	$(Q)$(call say,LD,$@)$(CC) -shared -Wl,-soname,libtfm.so.$(SOMAJOR) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The one installed header: tfm.h with its public headers inlined.
$(B)/include/tfm.h: lib/tfm.h lib/quant/dtype.h lib/format/gguf.h lib/format/ckpt.h \
		    lib/format/convert.h lib/spec/spec.h lib/text/tokenizer.h lib/model/model.h \
		    scripts/public-header
	@mkdir -p $(@D)
	$(Q)$(call say,GEN,$@)scripts/public-header > $@

# tfm-run --chat edits its lines with libedit
$(B)/bin/tfm-run: LDLIBS += -ledit

$(B)/bin/%: $(B)/cmd/%.o $(CMD_COMMON_OBJ) $(B)/libtfm.a
	@mkdir -p $(@D)
	$(Q)$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $< $(CMD_COMMON_OBJ) $(B)/libtfm.a $(LDLIBS)

$(B)/tests/%: $(B)/tests/unit/%.o $(TEST_COMMON_OBJ) $(B)/libtfm.a
	@mkdir -p $(@D)
	$(Q)$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $< $(TEST_COMMON_OBJ) $(B)/libtfm.a $(LDLIBS)

deps:
	@./scripts/install-deps

# check-arm64: cross-build for aarch64 (build-arm64/) and run under
# qemu-user the quant tests and the stories260K golden on a processor with
# the dot product instructions (QEMU_CPU=max) and on one without
# (Cortex-A57, ARMv8.0), so that both NEON paths run; the kernel tests
# (every CPU instruction set: scalar, neon, dotprod) once, on max, and
# their scans and four-row decode kernels (qgemv_neon: the SMULL ones
# there) on Cortex-A57.  TFM_TEST_QUICK=1: test_kernels' reduced grid
# (fewer attention cases of 17 tokens, see tests/unit/test_kernels.c);
# make check runs the whole grid natively.  The whole of check-arm64,
# cross-build included, took 4.7 minutes on a 2-core AVX2 EPYC (the full
# test_kernels on max, 4 of them); Cortex-A57 also runs the regrouped
# decode cases (qx8, qx8k: their scalar definitions, no SDOT there).  The
# loader and libc come from Debian's arm64 multiarch root (/), not the
# cross toolchain's /usr/aarch64-linux-gnu: the arm64 libraries bring
# libc6:arm64, whose libc must not meet another build's ld.so.
ARM64_B   := build-arm64
ARM64_ENV := PKG_CONFIG_LIBDIR=/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig
ARM64_RUN := QEMU_LD_PREFIX=/ OPENBLAS_NUM_THREADS=1 TFM_TEST_QUICK=1 qemu-aarch64
check-arm64:
	@./scripts/install-deps --arm64
	@$(ARM64_ENV) $(MAKE) --no-print-directory B=$(ARM64_B) CC=aarch64-linux-gnu-gcc CUDA=0 \
	  all $(ARM64_B)/tests/test_kernels $(ARM64_B)/tests/test_quant $(ARM64_B)/tests/test_model_real
	@set -e; for run in "max test_quant" "max test_model_real stories260k" \
	    "cortex-a57 test_quant" "cortex-a57 test_model_real stories260k" \
	    "cortex-a57 test_kernels scans" "cortex-a57 test_kernels qgemv_neon" \
	    "cortex-a57 test_kernels qx8" \
	    "max test_kernels"; do \
	  set -- $$run; cpu=$$1; shift; \
	  echo "check-arm64: QEMU_CPU=$$cpu $$*" >&2; \
	  QEMU_CPU=$$cpu $(ARM64_RUN) $(ARM64_B)/tests/$$* >$(ARM64_B)/check.log 2>&1 || \
	    { cat $(ARM64_B)/check.log; echo "check-arm64: $$* failed (QEMU_CPU=$$cpu)" >&2; exit 1; }; \
	  tail -n 1 $(ARM64_B)/check.log >&2; \
	done

# check: install what is missing, build, then unit tests, bats, man lint.
check: deps
	@$(MAKE) --no-print-directory all $(TEST_BIN)
	@TFM_BIN=$(CURDIR)/$(B)/bin TFM_MAKEVARS="B=$(B) CC=$(CC) SANITIZE=$(SANITIZE)" \
	  ./tests/run-all $(TEST_BIN)

unit: all $(TEST_BIN)
	@./tests/run-all --unit $(TEST_BIN)

bats: all
	@TFM_BIN=$(CURDIR)/$(B)/bin TFM_MAKEVARS="B=$(B) CC=$(CC) SANITIZE=$(SANITIZE)" \
	  ./tests/run-all --bats

manlint:
	@./tests/run-all --man

demo:
	@./scripts/install-deps --demo
	@$(MAKE) --no-print-directory all
	@./scripts/demo

install: all $(B)/include/tfm.h
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	  $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/share/man/man1 \
	  $(DESTDIR)$(PREFIX)/share/man/man3 $(DESTDIR)$(PREFIX)/share/man/man5
	install -m 755 $(CMD_BIN) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(B)/libtfm.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(B)/libtfm.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libtfm.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libtfm.so.$(SOMAJOR)
	ln -sf libtfm.so.$(VERSION) $(DESTDIR)$(PREFIX)/lib/libtfm.so
	install -m 644 $(B)/include/tfm.h $(DESTDIR)$(PREFIX)/include/
	install -m 644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 man/*.3 $(DESTDIR)$(PREFIX)/share/man/man3/
	install -m 644 man/*.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' \
	  -e 's|@LIBS@|$(strip $(LDFLAGS) $(filter-out $(PKG_LIBS),$(LDLIBS)))|' \
	  scripts/tfm.pc.in > $(DESTDIR)$(PREFIX)/lib/pkgconfig/tfm.pc

clean:
	rm -rf $(B)

include tests/fuzz/fuzz.mk

-include $(shell find $(B) -name '*.d' 2>/dev/null)
