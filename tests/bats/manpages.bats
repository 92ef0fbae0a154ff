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

# The options a man page documents (.It Fl ...), as the name --help shows:
# the long name, or -X for a short-only option.
man_options() {
	grep '^\.It Fl ' "$1" |
		awk '{ if (match($0, /Fl Fl [a-z][a-z0-9-]*/)) print "--" substr($0, RSTART + 6, RLENGTH - 6);
		       else if ($3 ~ /^[A-Za-z]$/) print "-" $3 }' | sort -u
}

@test "manpages: --help lists every option of the man page on a line of its own, and no other" {
	for b in "${TFM_BIN:-$ROOT/build/bin}"/tfm-*; do
		n=$(basename "$b")
		h=$("$b" --help | awk 'f; /^$/ { f = 1 }') # after the usage
		[ -n "$h" ] || fail "$n: --help has no option lines"
		for o in $(man_options "$ROOT/man/$n.1"); do
			case $o in
			--*) echo "$h" | grep -qE -- "^ +(-[A-Za-z], )?$o( |$)" || fail "$n: $o has no line in --help" ;;
			*) echo "$h" | grep -qE -- "^ +$o(,| |$)" || fail "$n: $o has no line in --help" ;;
			esac
		done
		# each option line of --help is an option of the man page
		for o in $(echo "$h" | sed -nE 's/^ +(-[A-Za-z], )?(--[a-z][a-z0-9-]*).*/\2/p; s/^ +(-[A-Za-z])( .*|)$/\1/p'); do
			man_options "$ROOT/man/$n.1" | grep -qxF -- "$o" || fail "$n: --help lists $o, the man page does not"
		done
	done
}
