#!/usr/bin/env bash
# gpu-bundle.sh: prepare .gpubundle/, everything scripts/gpu-e2e.sh needs on a GPU host
# that has no Go, no PostgreSQL and no network (Ubuntu 24.04): a stripped cuzk binary
# and Debian 12's PostgreSQL 15, packed with xz, plus optionally a prebuilt CUDA
# library. Run by `make gpu-bundle`; needs Go, apt-get download and dpkg (Debian 12).
#
# Environment:
#   CUZK_PREBUILT_LIB=path   copy this CUDA library in as .gpubundle/libcuzkgpu.so
#                            (without it, a library left by an earlier run is removed:
#                            the bundle is always what this tree builds)
#   CUZK_BUNDLE_CACHE=dir    where the downloaded .deb files are kept
#                            (default /tmp/cuzk-gpubundle-debs)
set -euo pipefail
cd "$(dirname "$0")/.."
BUNDLE=$PWD/.gpubundle
CACHE=${CUZK_BUNDLE_CACHE:-/tmp/cuzk-gpubundle-debs}
GO=${GO:-go}
PGV=15
# Debian 12 packages; the libraries Ubuntu 24.04 lacks come from the last four.
PKGS="postgresql-$PGV postgresql-client-$PGV libpq5 libicu72 libldap-2.5-0 libunistring2"
# The only shared libraries bundled: anything more (libc.so.6, libm.so.6) shadows the
# host's own and makes every program on it crash.
EXTRA_LIBS="libicudata.so.72 libicui18n.so.72 libicuuc.so.72 libldap-2.5.so.0 liblber-2.5.so.0 libpq.so.5 libunistring.so.2"
PG_BINS="postgres initdb pg_ctl psql pg_isready"

mkdir -p "$BUNDLE" "$CACHE"
STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/b"

echo "gpu-bundle: building cuzk"
CGO_ENABLED=1 CGO_CFLAGS=${CGO_CFLAGS:--O2 -g -Wno-deprecated-declarations} \
	"$GO" build -trimpath -ldflags "-s -w" -o "$STAGE/b/cuzk" ./cmd/cuzk

# newest PKG: the cached .deb of PKG with the highest version.
newest() { printf '%s\n' "$CACHE/$1"_*.deb | sort -V | tail -1; }
missing=()
for p in $PKGS; do
	compgen -G "$CACHE/${p}_*.deb" >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "gpu-bundle: downloading ${missing[*]}"
	# As root, apt's _apt sandbox user cannot write into the cache: download as root.
	(cd "$CACHE" && apt-get download -o APT::Sandbox::User=root "${missing[@]}")
fi

for p in $PKGS; do
	dpkg -x "$(newest "$p")" "$STAGE/x"
done

# Layout kept as the packages have it (usr/lib/postgresql/15, usr/share/postgresql/15):
# PostgreSQL finds its share and lib directories relative to its binaries.
X=$STAGE/x/usr
P=$STAGE/b/pg/usr
mkdir -p "$P/lib/postgresql/$PGV/bin" "$P/lib/postgresql/$PGV/lib" "$P/share/postgresql" "$STAGE/b/pg/extralib"
for b in $PG_BINS; do
	cp -a "$X/lib/postgresql/$PGV/bin/$b" "$P/lib/postgresql/$PGV/bin/"
done
# initdb loads plpgsql and dict_snowball; encoding conversions are loaded on use and small.
cp -a "$X/lib/postgresql/$PGV/lib/"{plpgsql.so,dict_snowball.so} "$X/lib/postgresql/$PGV/lib/"*_and_*.so \
	"$P/lib/postgresql/$PGV/lib/"
cp -a "$X/share/postgresql/$PGV" "$P/share/postgresql/"
rm -rf "$P/share/postgresql/$PGV/man"
for l in $EXTRA_LIBS; do
	cp -a "$X/lib/x86_64-linux-gnu/$l"* "$STAGE/b/pg/extralib/"
done

# Fail here, not on the GPU host, if the bundled server cannot start its binaries.
LD_LIBRARY_PATH=$STAGE/b/pg/extralib "$P/lib/postgresql/$PGV/bin/postgres" --version >/dev/null
LD_LIBRARY_PATH=$STAGE/b/pg/extralib "$P/lib/postgresql/$PGV/bin/psql" --version >/dev/null

rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD 2>/dev/null || rev="$rev+dirty"
{
	echo "cuzk $rev built $(date -u +%Y-%m-%dT%H:%M:%SZ) with $("$GO" env GOVERSION)"
	for p in $PKGS; do basename "$(newest "$p")"; done
} >"$STAGE/b/MANIFEST"

echo "gpu-bundle: packing"
tar -C "$STAGE/b" --sort=name --owner=0 --group=0 --numeric-owner -cf - . | xz -T0 -6 >"$STAGE/bundle.tar.xz"
mv "$STAGE/bundle.tar.xz" "$BUNDLE/bundle.tar.xz"
cp "$STAGE/b/MANIFEST" "$BUNDLE/MANIFEST"

if [ -n "${CUZK_PREBUILT_LIB:-}" ]; then
	cp "$CUZK_PREBUILT_LIB" "$BUNDLE/libcuzkgpu.so"
	echo "libcuzkgpu.so from $CUZK_PREBUILT_LIB ($(sha256sum <"$BUNDLE/libcuzkgpu.so" | cut -c1-16))" >>"$BUNDLE/MANIFEST"
else
	rm -f "$BUNDLE/libcuzkgpu.so"
fi

size=$(du -sb "$BUNDLE" | cut -f1)
echo "gpu-bundle: $BUNDLE holds $(cd "$BUNDLE" && echo *) ($((size / 1048576)) MiB)"
if [ "$size" -ge $((60 << 20)) ]; then
	echo "gpu-bundle: over 60 MiB" >&2
	exit 1
fi
