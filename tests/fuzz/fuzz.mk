# tests/fuzz/fuzz.mk: the libFuzzer harnesses, included by the Makefile.
#   make fuzz [FUZZ_SECONDS=20] [FUZZ_NAMES='gguf config']
#       builds libtfm and every tests/fuzz/fuzz_NAME.c with clang, libFuzzer,
#       ASan and UBSan (no recovery) into build-fuzz/, then runs each harness
#       for FUZZ_SECONDS on its corpus (tests/fuzz/run); a crasher lands in
#       tests/fuzz/regress/NAME/ and the target fails.
#   make fuzz-clean     removes build-fuzz/ (corpora included)
# `make check` replays every file of tests/fuzz/regress/NAME/ through the same
# harness built without libFuzzer (build/tests/replay_NAME, replay.c).
FUZZ_SECONDS ?= 20
FUZZ_B       := build-fuzz
FUZZ_SRC     := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_NAMES   ?= $(FUZZ_SRC:tests/fuzz/fuzz_%.c=%)
FUZZ_COMMON  := $(B)/tests/fuzz/fuzz-util.o
FUZZ_REPLAY  := $(FUZZ_SRC:tests/fuzz/fuzz_%.c=$(B)/tests/replay_%)
TEST_BIN     += $(FUZZ_REPLAY)

$(B)/tests/replay_%: $(B)/tests/fuzz/fuzz_%.o $(B)/tests/fuzz/replay.o $(FUZZ_COMMON) $(B)/libtfm.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(B)/libtfm.a $(LDLIBS)

$(B)/fuzz/fuzz_%: $(B)/tests/fuzz/fuzz_%.o $(FUZZ_COMMON) $(B)/libtfm.a
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $(filter %.o,$^) $(B)/libtfm.a $(LDLIBS)

.PHONY: fuzz fuzz-bins fuzz-clean
fuzz-bins: $(FUZZ_NAMES:%=$(B)/fuzz/fuzz_%)

fuzz: deps
	@command -v clang >/dev/null || { echo "fuzz: clang is needed" >&2; exit 1; }
	@$(MAKE) --no-print-directory B=$(FUZZ_B) CC=clang CUDA=0 SANITIZE=1 \
	  CFLAGS='-O1 -g -fsanitize=fuzzer-no-link -fno-sanitize-recover=all' \
	  FUZZ_NAMES='$(FUZZ_NAMES)' fuzz-bins
	@./tests/fuzz/run $(FUZZ_B) $(FUZZ_SECONDS) $(FUZZ_NAMES)

fuzz-clean:
	rm -rf $(FUZZ_B)
