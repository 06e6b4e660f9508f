# Sourced by the fetch scripts: npm_fetch WHO PKG VERSION SHA256 TGZ fetches
# the npm package PKG@VERSION into the tarball TGZ (kept there as a cache)
# unless it is already there, and checks its sha256; on failure it says so in
# one line, as WHO, removes a tarball that does not match and exits 2.
npm_fetch() {
    local who=$1 pkg=$2 version=$3 sha256=$4 tgz=$5 got
    if [ ! -s "$tgz" ]; then
        echo "fetching $pkg@$version with npm pack ..."
        (cd "$(dirname "$tgz")" && npm pack --silent "$pkg@$version" >/dev/null 2>&1) || {
            echo "$who: error: 'npm pack $pkg@$version' failed (is npm installed and the registry reachable?)" >&2
            exit 2
        }
    fi
    got=$(sha256sum "$tgz" | cut -d' ' -f1)
    if [ "$got" != "$sha256" ]; then
        rm -f "$tgz"
        echo "$who: error: checksum mismatch for $tgz (got $got)" >&2
        exit 2
    fi
}
