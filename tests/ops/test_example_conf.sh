#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
#
# The example configuration (dist/dpquicd.conf.example) is valid and
# documents every key:
#   - `dpquicd -c EXAMPLE --check` accepts it (server.root is overridden:
#     the example's /srv/dpquic need not exist here; without the override
#     the check must name that directory);
#   - every key dpquicd knows (the --check listing, from the config table)
#     appears in the example, set or commented out, inside its section,
#     right below a comment that explains it;
#   - every key the example sets is taken from the file (origin FILE:LINE).
#
#   test_example_conf.sh DPQUICD EXAMPLE
DPQUICD=${1:?usage: $0 DPQUICD EXAMPLE}
EXAMPLE=${2:?}
FAILS=0
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
ok() { echo "ok: $*"; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
TMP=$(mktemp -d /tmp/dpq-example.XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT

"$DPQUICD" -c "$EXAMPLE" --check > "$TMP/noroot.out" 2>&1
rc=$?
if [ "$rc" -eq 2 ] && grep -q "server.root (--root) /srv/dpquic" "$TMP/noroot.out"; then
	ok "without /srv/dpquic the check names the missing root (exit 2)"
else
	fail "check without root: exit $rc: $(cat "$TMP/noroot.out")"
fi
"$DPQUICD" -c "$EXAMPLE" --check --root "$TMP" > "$TMP/check.out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -q "^dpquicd: configuration OK: $EXAMPLE" "$TMP/check.out"; then
	ok "dpquicd -c $(basename "$EXAMPLE") --check: OK"
else
	fail "dpquicd --check: exit $rc"
	cat "$TMP/check.out"
fi

python3 - "$TMP/check.out" "$EXAMPLE" <<'PY' || FAILS=$((FAILS + 1))
import re, sys
listing, example = sys.argv[1], sys.argv[2]
keys = []
for line in open(listing):
    m = re.match(r'^  (\S+)\s+= (.*?)\s*# (.*)$', line)
    if m:
        keys.append((m.group(1), m.group(3)))
lines = open(example).read().split('\n')
# where each key is in the example: section, line number, set or not
section = None
found = {}
for i, l in enumerate(lines):
    m = re.match(r'^(\w[\w-]*) = \{', l)
    if m:
        section = m.group(1)
        continue
    if l.startswith('};'):
        section = None
        continue
    m = re.match(r'^\s*(#\s*)?([\w-]+) = ', l)
    if m and section:
        prev = lines[i - 1].strip()
        found.setdefault(section + '.' + m.group(2), []).append(
            (i + 1, m.group(1) is None, prev.startswith('#')))
bad = 0
if len(keys) < 30:
    print('FAIL: --check listed only %d keys' % len(keys)); bad += 1
for k, origin in keys:
    where = found.get(k)
    if not where:
        print('FAIL: %s is not in the example' % k); bad += 1
        continue
    line, is_set, documented = where[0]
    if not documented:
        print('FAIL: %s (line %d) has no comment above it' % (k, line))
        bad += 1
    if is_set and k != 'server.root' and origin != '%s:%d' % (example, line):
        print('FAIL: %s set on line %d but taken from %s' % (k, line, origin))
        bad += 1
    if not is_set and origin != 'default':
        print('FAIL: %s commented out but from %s' % (k, origin)); bad += 1
print('ok: %d keys, each in the example under a comment; %d set there'
      % (len(keys), sum(1 for k in found.values() if k[0][1])) if not bad
      else '%d problem(s)' % bad)
sys.exit(1 if bad else 0)
PY
if [ $FAILS -ne 0 ]; then
	echo "$FAILS check(s) failed"
	exit 1
fi
echo "all checks passed"
