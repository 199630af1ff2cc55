#!/usr/bin/env bash
# Redo the rooms branch on a newer main: the hand edits to files at their old paths and the
# changes to scripts/move_rooms.py first, then the moves made afresh by the script (one commit),
# then the hand edits made after the moves. The old result commits of the script (subject
# "Rooms: scripts/move_rooms.py's result...") are dropped: the script makes them again from the
# new main's files, so the other branches' edits to moved files move with them.
#
#   scripts/rebase_rooms.sh OLD_BRANCH [BASE]     # from the repository root; BASE: main
#
# It leaves the result on the current branch, which must be BASE itself checked out as a new
# branch (git checkout -b rooms-new main). On a cherry-pick conflict it stops: resolve, run
# `git cherry-pick --continue`, then run the script again with the same arguments (picked
# commits are skipped: it compares subjects). See docs/architecture.md, "Moving rooms".
set -euo pipefail
old=${1:?usage: scripts/rebase_rooms.sh OLD_BRANCH [BASE]}
base=${2:-main}
result="Rooms: scripts/move_rooms.py's result"
picked() { git log --format=%s "$base"..HEAD | grep -qxF -- "$(git log -1 --format=%s "$1")"; }
pre=() post=() seen_result=0
for c in $(git rev-list --reverse "$base".."$old"); do
  subject=$(git log -1 --format=%s "$c")
  files=$(git diff-tree --no-commit-id --name-only -r "$c")
  if [[ $subject == "$result"* ]]; then
    seen_result=1
  elif (( ! seen_result )) || [[ $files == "scripts/move_rooms.py" ]]; then
    pre+=("$c")
  else
    post+=("$c")
  fi
done
for c in "${pre[@]}"; do picked "$c" || git cherry-pick "$c"; done
if ! git log --format=%s "$base"..HEAD | grep -q "^$result"; then
  python3 scripts/move_rooms.py
  git add -A warpstage tests docs benchmarks scripts examples README.md
  git commit -q -m "$result (git mv + rewritten imports, nothing else), on $(git rev-parse --short "$base")"
fi
for c in "${post[@]}"; do picked "$c" || git cherry-pick "$c"; done
python3 scripts/move_rooms.py --check
echo "done: $(git rev-list --count "$base"..HEAD) commits on $base"
