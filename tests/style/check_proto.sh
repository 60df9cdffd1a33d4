#!/usr/bin/env bash
# buf lint over proto/ (rules in proto/buf.yaml), then buf's breaking-change check of proto/
# against the last released API: the tag v0.1.0 (clients outside this repository are written
# against its names and field numbers). A clone without tags falls back to the tagged commit.
# Usage: check_proto.sh REPO_ROOT
set -euo pipefail
cd "${1:?usage: check_proto.sh REPO_ROOT}"
release_tag=v0.1.0
release_commit=ef0abcff91dd89c44d7e7c01e3528ed62b9aac2e
buf=$(command -v buf || true)
if [[ -z "$buf" ]]; then
  echo "check_proto: buf not found (scripts/install-deps.sh installs @bufbuild/buf from npm)" >&2
  exit 1
fi
(cd proto && "$buf" lint)
if git rev-parse -q --verify "refs/tags/$release_tag" >/dev/null; then
  against=".git#tag=$release_tag,subdir=proto"
elif git cat-file -e "$release_commit^{commit}" 2>/dev/null; then
  against=".git#ref=$(git rev-parse "$release_commit"),subdir=proto"
else
  echo "check_proto: neither tag $release_tag nor commit $release_commit is in this clone" >&2
  exit 1
fi
"$buf" breaking proto --against "$against"
echo "check_proto: lint clean, no breaking change against $release_tag ($("$buf" --version))"
