#!/usr/bin/env bats
# make install: programs, library, headers, tfm.pc, man pages; a program
# outside the tree builds against the installed header and library.
load helpers

@test "install: DESTDIR tree has the programs, header, pc file and man pages" {
	D=$BATS_TEST_TMPDIR/root
	run make -s -C "$ROOT" $TFM_MAKEVARS install PREFIX=/usr DESTDIR="$D"
	assert_success
	[ -x "$D/usr/bin/tfm-convert" ]
	[ -f "$D/usr/include/tfm/tfm.h" ]
	[ -f "$D/usr/lib/libtfm.a" ]
	[ -f "$D/usr/lib/pkgconfig/tfm.pc" ]
	[ -f "$D/usr/share/man/man1/tfm-inspect.1" ]
	[ -f "$D/usr/share/man/man5/tfm.5" ]
	# no private headers installed
	run find "$D/usr/include" -name '*-impl.h'
	assert_output ''
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
	libs=$(sed -n 's/^Libs.private: //p' "$D/usr/lib/pkgconfig/tfm.pc")
	run ${CC:-cc} -std=c11 -I"$D/usr/include/tfm" -o "$BATS_TEST_TMPDIR/x" "$BATS_TEST_TMPDIR/x.c" \
		"$D/usr/lib/libtfm.a" $libs
	assert_success
	need_shared
	run "$BATS_TEST_TMPDIR/x" "$SHARED/tokenizers/llama.cpp-vocab/ggml-vocab-gpt-2.gguf"
	assert_success
	assert_output --regexp '^gpt2 [0-9]+$'
}
