#!/usr/bin/env bash
# Fails when a commit since the house style began has a subject over 72 characters or no body, so
# that `git log --oneline` stays readable and every change says why. Commits before FIRST (the
# first one written this way) are history and are not judged.
# Usage: check_commit_messages.sh REPO_ROOT
set -euo pipefail
cd "${1:?usage: check_commit_messages.sh REPO_ROOT}"
first=a1dabcd
if ! git cat-file -e "$first^{commit}" 2>/dev/null; then
  echo "check_commit_messages: commit $first is not in this clone (shallow?); fetch full history" >&2
  exit 1
fi
bad=0
while read -r commit; do
  subject=$(git log -1 --format=%s "$commit")
  body=$(git log -1 --format=%b "$commit" | sed '/^\s*$/d')
  if ((${#subject} > 72)); then
    echo "$commit: subject is ${#subject} characters (at most 72): $subject"
    bad=1
  fi
  if [[ -z "$body" ]]; then
    echo "$commit: no body saying what changed and why: $subject"
    bad=1
  fi
done < <(git rev-list "$first^..HEAD")
[[ $bad == 0 ]] && echo "check_commit_messages: $(git rev-list --count "$first^..HEAD") commits checked"
exit $bad
