#!/usr/bin/env bats
# Every tool: the usage line of --help equals the man page SYNOPSIS, and
# every option --help lists is documented in the man page.
load helpers

# The SYNOPSIS of a man page as one line of text.
synopsis() {
	MANWIDTH=1000 mandoc -T ascii "$1" | col -b |
		awk '/^SYNOPSIS/ { on = 1; next } /^[A-Z]/ { on = 0 } on' |
		tr -s '[:space:]' ' ' | sed 's/^ *//; s/ *$//'
}

# The usage text of --help (the lines up to the first blank one) as one line.
usage_of() {
	"$1" --help | awk 'NR == 1 { sub(/^usage: /, "") } /^$/ { exit } { print }' |
		sed 's/^ *or: */ /' | tr -s '[:space:]' ' ' | sed 's/^ *//; s/ *$//'
}

@test "manpages: every tool has a man page" {
	for b in "${TFM_BIN:-$ROOT/build/bin}"/tfm-*; do
		[ -f "$ROOT/man/$(basename "$b").1" ] || fail "no man page for $(basename "$b")"
	done
}

@test "manpages: --help usage equals the SYNOPSIS" {
	for b in "${TFM_BIN:-$ROOT/build/bin}"/tfm-*; do
		n=$(basename "$b")
		u=$(usage_of "$b")
		s=$(synopsis "$ROOT/man/$n.1")
		[ "$u" = "$s" ] || fail "$n:
  --help:   $u
  SYNOPSIS: $s"
	done
}

@test "manpages: every long option of --help is in the man page" {
	for b in "${TFM_BIN:-$ROOT/build/bin}"/tfm-*; do
		n=$(basename "$b")
		page=$(MANWIDTH=1000 mandoc -T ascii "$ROOT/man/$n.1" | col -b)
		for o in $("$b" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u); do
			echo "$page" | grep -qE -- "(^|[^a-z-])$o([^a-z-]|$)" || fail "$n: $o not in $n.1"
		done
	done
}
