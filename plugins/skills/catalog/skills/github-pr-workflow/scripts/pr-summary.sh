#!/bin/sh
# Prints the commits and changed files of the current branch against its base, as a starting
# point for a pull request description. Usage: pr-summary.sh [base-branch]
set -eu
base="${1:-}"
if [ -z "$base" ]; then
  base="$(git symbolic-ref --quiet --short refs/remotes/origin/HEAD 2>/dev/null || echo origin/main)"
fi
merge_base="$(git merge-base "$base" HEAD)"
echo "## Commits"
git log --reverse --format='- %s' "$merge_base..HEAD"
echo
echo "## Files changed"
git diff --stat "$merge_base" HEAD
