#!/usr/bin/env bash
# Re-fetch the charting library of the HTML explorer (factprobe report --html) from the npm
# registry at pinned versions, and check the files against SHA256SUMS.
#
# Why vendored: the page must open from disk with no network (no CDN), so Vega, Vega-Lite and
# vega-embed ship inside the package (package data) and are copied beside each index.html.
# Vega-Lite was chosen over Plotly's standalone build for size (~0.85 MB minified for the three
# against ~3.5 MB). Bump a version here, run this script, check the page (tests/test_report_html.py)
# and commit the new files with their SHA256SUMS (`UPDATE=1 fetch.sh` rewrites it).
set -euo pipefail
cd "$(dirname "$0")"
VERSIONS=(vega@6.4.0 vega-lite@6.5.0 vega-embed@7.3.0)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for spec in "${VERSIONS[@]}"; do
    name=${spec%@*}
    (cd "$tmp" && npm pack --silent "$spec" >/dev/null)
    mkdir -p "$tmp/$name"
    tar xzf "$tmp/$name-${spec#*@}.tgz" -C "$tmp/$name"
    cp "$tmp/$name/package/build/$name.min.js" "$name.min.js"
    cp "$tmp/$name/package/LICENSE" "LICENSE-$name"
done
if [ "${UPDATE:-0}" = 1 ]; then
    sha256sum ./*.min.js ./LICENSE-* > SHA256SUMS
fi
sha256sum -c --quiet SHA256SUMS
echo "vendored: ${VERSIONS[*]}"
