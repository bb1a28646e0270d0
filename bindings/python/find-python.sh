#!/bin/sh
# Print the path of a Python >= 3.12 interpreter (the OpenHands SDK needs it),
# trying in order: $PYTHON, python3.12 / python3.13 on PATH, pyenv's newest
# 3.12.x / 3.13.x, `uv python find`, then python3. Exit 1 if there is none.
ok() {
    "$@" -c 'import sys, ssl; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1
}
real() {  # resolve pyenv shims and the like to the interpreter itself
    "$@" -c 'import sys; print(sys.executable)'
}
if [ -n "$PYTHON" ] && ok "$PYTHON"; then real "$PYTHON"; exit 0; fi
for cand in python3.12 python3.13; do
    if command -v "$cand" >/dev/null 2>&1 && ok "$cand"; then real "$cand"; exit 0; fi
done
if command -v pyenv >/dev/null 2>&1; then
    for minor in 12 13; do
        for v in $(pyenv versions --bare 2>/dev/null | grep -E "^3\.$minor\.[0-9]+\$" | sort -t. -k3,3nr); do
            py="$(pyenv root)/versions/$v/bin/python"
            if [ -x "$py" ] && ok "$py"; then real "$py"; exit 0; fi
        done
    done
fi
if command -v uv >/dev/null 2>&1; then
    py="$(uv python find 3.12 2>/dev/null)"
    if [ -n "$py" ] && ok "$py"; then real "$py"; exit 0; fi
fi
for cand in python3 python; do
    if command -v "$cand" >/dev/null 2>&1 && ok "$cand"; then real "$cand"; exit 0; fi
done
exit 1
