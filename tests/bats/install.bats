#!/usr/bin/env bats
# make install: programs, library, headers, tfm.pc, man pages; a program
# outside the tree builds against the installed header and library.
load helpers

@test "install: DESTDIR tree has the programs, header, pc file and man pages" {
	D=$BATS_TEST_TMPDIR/root
	run make -s -C "$ROOT" $TFM_MAKEVARS install PREFIX=/usr DESTDIR="$D"
	assert_success
	[ -x "$D/usr/bin/tfm-convert" ]
	[ -f "$D/usr/lib/libtfm.a" ]
	[ -f "$D/usr/lib/pkgconfig/tfm.pc" ]
	[ -f "$D/usr/share/man/man1/tfm-inspect.1" ]
	[ -f "$D/usr/share/man/man3/libtfm.3" ]
	[ -f "$D/usr/share/man/man5/tfm.5" ]
	# one public header, no internal ones, no directories on the include path
	run find "$D/usr/include" -mindepth 1
	assert_output "$D/usr/include/tfm.h"
	! grep -q '#include "' "$D/usr/include/tfm.h"
	# a versioned shared library with its SONAME
	v=$(sed -n 's/^#define TFM_VERSION "\(.*\)"/\1/p' "$ROOT/lib/tfm.h")
	[ -f "$D/usr/lib/libtfm.so.$v" ]
	[ "$(readlink "$D/usr/lib/libtfm.so")" = "libtfm.so.$v" ]
	[ "$(readlink "$D/usr/lib/libtfm.so.${v%%.*}")" = "libtfm.so.$v" ]
	readelf -d "$D/usr/lib/libtfm.so.$v" | grep -q "SONAME.*\[libtfm.so.${v%%.*}\]"
	# tfm.pc names its dependencies instead of hard-coding their -L
	grep -q '^Requires.private: .*openblas' "$D/usr/lib/pkgconfig/tfm.pc"
	! grep -q 'openblas' <(grep '^Libs' "$D/usr/lib/pkgconfig/tfm.pc")
}

@test "install: libtfm.3's example compiles against the installed library (pkg-config) and runs" {
	need_shared
	D=$BATS_TEST_TMPDIR/root
	make -s -C "$ROOT" $TFM_MAKEVARS install PREFIX=/usr DESTDIR="$D" >/dev/null
	# the program of EXAMPLES, as the page shows it
	mandoc -T ascii "$ROOT/man/libtfm.3" | col -b |
		awk '/^EXAMPLES/ { on = 1; next } on && /^ *#include <stdio.h>/ { p = 1 }
		     p { print } p && /^ *}$/ { exit }' | sed 's/^     //' > "$BATS_TEST_TMPDIR/greedy.c"
	grep -q 'tfm_model_open' "$BATS_TEST_TMPDIR/greedy.c"
	export PKG_CONFIG_PATH="$D/usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$D"
	run ${CC:-cc} -std=c11 -Wall -Werror -o "$BATS_TEST_TMPDIR/greedy" "$BATS_TEST_TMPDIR/greedy.c" \
		$(pkg-config --cflags --libs tfm) $(grep -o -- '-fsanitize=[a-z,]*' <<< "$TFM_MAKEVARS$(pkg-config --libs --static tfm)" | head -1)
	assert_success
	# the shared library is what it runs with
	readelf -d "$BATS_TEST_TMPDIR/greedy" | grep -q 'NEEDED.*libtfm.so.0'
	LD_LIBRARY_PATH="$D/usr/lib" run "$BATS_TEST_TMPDIR/greedy" "$STORIES" "Once upon a time" "$TOK512"
	assert_success
	# tfm-run's greedy text of 32 tokens
	assert_output "$(tfm-run -m "$STORIES" --vocab "$TOK512" --temp 0 -n 32 -p "Once upon a time")"
}

@test "install: an outside program compiles and links against the installed library" {
	D=$BATS_TEST_TMPDIR/root
	make -s -C "$ROOT" $TFM_MAKEVARS install PREFIX=/usr DESTDIR="$D" >/dev/null
	cat > "$BATS_TEST_TMPDIR/x.c" <<'C'
#include <tfm.h>
int main(int argc, char **argv)
{
	struct tfm_blob b;
	struct tfm_gguf *g;
	if (tfm_blob_open(&b, argv[1]) || tfm_gguf_parse(&g, b.data, b.size, b.name)) {
		fprintf(stderr, "%s\n", tfm_errmsg());
		return 1;
	}
	printf("%s %lld\n", tfm_gguf_get_str_or(g, "general.architecture", "?"),
	       (long long)tfm_gguf_n_kv(g));
	tfm_gguf_free(g);
	tfm_blob_close(&b);
	return 0;
}
C
	export PKG_CONFIG_PATH="$D/usr/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$D"
	# static: libtfm.a, then the libraries it uses (shared ones) and its own flags
	libs="$(pkg-config --libs openblas libarchive libzstd jansson libpcre2-8)
		$(sed -n 's/^Libs.private: //p' "$D/usr/lib/pkgconfig/tfm.pc")"
	run ${CC:-cc} -std=c11 $(pkg-config --cflags tfm) -o "$BATS_TEST_TMPDIR/x" "$BATS_TEST_TMPDIR/x.c" \
		"$D/usr/lib/libtfm.a" $libs
	assert_success
	need_shared
	run "$BATS_TEST_TMPDIR/x" "$SHARED/tokenizers/llama.cpp-vocab/ggml-vocab-gpt-2.gguf"
	assert_success
	assert_output --regexp '^gpt2 [0-9]+$'
}

@test "install: a second make after a clean build compiles nothing (no intermediates deleted)" {
	B2=$BATS_TEST_TMPDIR/b
	make -s -j2 -C "$ROOT" $TFM_MAKEVARS B="$B2" all > /dev/null 2>&1
	run make -C "$ROOT" $TFM_MAKEVARS B="$B2" V=1 all
	assert_success
	refute_output --regexp '(^|[[:space:]])-c [^ ]+\.c'
	refute_output --partial ' -o '
	# and the quiet build names what it does, not the command lines
	touch "$ROOT/lib/core/half.c"
	run make -C "$ROOT" $TFM_MAKEVARS B="$B2" all
	assert_success
	assert_line '  CC   lib/core/half.c'
	refute_output --partial ' -c '
}
