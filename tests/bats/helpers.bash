# helpers.bash: loaded by every bats file.
# Puts build/bin on PATH, loads bats-support and bats-assert, and gives
# SHARED (../shared; tests fail, never skip, when it is missing).
ROOT=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)
PATH="${TFM_BIN:-$ROOT/build/bin}:$PATH" # TFM_BIN: another build's programs (make B=...)
SHARED=${TFM_SHARED:-$ROOT/../shared}
load /usr/lib/bats/bats-support/load
load /usr/lib/bats/bats-assert/load

need_shared() {
	[ -d "$SHARED/models" ] || fail "$SHARED is missing: these tests need ../shared"
}
STORIES=$SHARED/models/stories260K/stories260K.bin
TOK512=$SHARED/models/stories260K/tok512.bin
