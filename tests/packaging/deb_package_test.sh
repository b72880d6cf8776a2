#!/bin/sh
# deb_package_test: builds the Debian packages from BUILD_DIR with cpack into WORK_DIR and checks
# them from the outside, never installing anything into the system:
#   - the server package's file list, control fields (Depends from dpkg-shlibdeps, Release
#     RocksDB linked statically when ROCKSDB_STATIC=1), conffiles and maintainer scripts;
#   - extracted with dpkg-deb -x: the programs run (--help), the shipped configuration is
#     packaging/idemstored.conf, the unit has the required settings and systemd-analyze verify
#     accepts it with the extracted tree as its root (so ExecStart must resolve there);
#   - the dev package holds the public headers and the CMake package, no internal header.
# Usage: deb_package_test.sh CPACK BUILD_DIR SOURCE_DIR WORK_DIR VERSION ROCKSDB_STATIC
set -eu
cpack=$1 build_dir=$2 source_dir=$3 work=$4 version=$5 rocksdb_static=$6

fail() { echo "deb_package_test: $*" >&2; exit 1; }
# expect_line TEXT REGEX WHAT: TEXT has a line matching REGEX (extended).
expect_line() { printf '%s\n' "$1" | grep -Eq -e "$2" || fail "$3: no line matches '$2' in:
$1"; }
expect_no_line() { ! printf '%s\n' "$1" | grep -Eq -e "$2" || fail "$3: a line matches '$2' in:
$1"; }

rm -rf "$work"
mkdir -p "$work"
"$cpack" --config "$build_dir/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log"; fail "cpack failed"; }
arch=$(dpkg --print-architecture)
deb="$work/out/idemstore_${version}_${arch}.deb"
dev_deb="$work/out/idemstore-dev_${version}_${arch}.deb"
[ -f "$deb" ] || fail "no $deb; cpack wrote: $(ls "$work/out")"
[ -f "$dev_deb" ] || fail "no $dev_deb; cpack wrote: $(ls "$work/out")"

# --- the server package's contents
files=$(dpkg-deb -c "$deb" | awk '{print $NF}')
for f in ./usr/bin/idemstored ./usr/bin/idemctl ./usr/bin/idem-retention \
         ./etc/idemstore/idemstored.conf ./lib/systemd/system/idemstored.service; do
  expect_line "$files" "^$f\$" "file list"
done
expect_no_line "$files" '^\./usr/(include|lib)/|^\./usr/local/|idem-bench' "file list"

# --- control fields and scripts
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = idemstore ] || fail "Package: $(field Package)"
[ "$(field Version)" = "$version" ] || fail "Version: $(field Version)"
[ "$(field Architecture)" = "$arch" ] || fail "Architecture: $(field Architecture)"
depends=$(field Depends | tr ',' '\n' | sed 's/^ *//')
expect_line "$depends" '^adduser$' "Depends"
expect_line "$depends" '^procps$' "Depends (the unit's ExecReload runs /bin/kill)"
expect_line "$depends" '^libc6 \(>= ' "Depends (dpkg-shlibdeps)"
expect_line "$depends" '^libstdc\+\+6 \(>= ' "Depends (dpkg-shlibdeps)"
expect_line "$depends" '^libssl3 \(>= ' "Depends (dpkg-shlibdeps: TLS)"
if [ "$rocksdb_static" = 1 ]; then
  expect_no_line "$depends" '^librocksdb' "Depends (RocksDB linked statically)"
else
  expect_line "$depends" '^librocksdb7\.8 ' "Depends (Debian's librocksdb, linked dynamically)"
fi
dpkg-deb -e "$deb" "$work/control"
[ "$(cat "$work/control/conffiles")" = /etc/idemstore/idemstored.conf ] ||
  fail "conffiles: $(cat "$work/control/conffiles")"
for s in postinst prerm postrm; do
  [ -x "$work/control/$s" ] || fail "no executable $s"
  sh -n "$work/control/$s" || fail "$s: shell syntax"
done
grep -q 'adduser --system' "$work/control/postinst" || fail "postinst creates no system user"
grep -q 'purge' "$work/control/postrm" || fail "postrm does nothing on purge"

# --- the extracted tree
root="$work/root"
dpkg-deb -x "$deb" "$root"
cmp "$root/etc/idemstore/idemstored.conf" "$source_dir/packaging/idemstored.conf" ||
  fail "the shipped configuration is not packaging/idemstored.conf"
help=$("$root/usr/bin/idemstored" --help 2>&1) || fail "idemstored --help failed: $help"
expect_line "$help" '--data' "idemstored --help"
# The unit starts idemstored on the shipped configuration: it must read as the default one.
config=$("$root/usr/bin/idemstored" --config "$root/etc/idemstore/idemstored.conf" \
  --print-config 2>&1) || fail "idemstored refuses the shipped configuration: $config"
default_config=$("$root/usr/bin/idemstored" --print-config 2>&1) || fail "--print-config: $default_config"
[ "$config" = "$default_config" ] || {
  printf '%s\n' "$default_config" >"$work/default.conf"; printf '%s\n' "$config" >"$work/shipped.conf"
  fail "the shipped configuration is not the default one: $(diff "$work/default.conf" "$work/shipped.conf")"
}
help=$("$root/usr/bin/idemctl" --help 2>&1) || fail "idemctl --help failed: $help"
expect_line "$help" '--server' "idemctl --help"

unit_file="$root/lib/systemd/system/idemstored.service"
unit=$(grep -v '^#' "$unit_file")
for setting in '^ExecStart=/usr/bin/idemstored --config /etc/idemstore/idemstored.conf$' '^User=idemstore$' '^Group=idemstore$' \
    '^StateDirectory=idemstore$' '^Restart=on-failure$' '^LimitNOFILE=[0-9]+$' \
    '^ExecReload=/bin/kill -HUP \$MAINPID$' '^NoNewPrivileges=yes$' '^ReadWritePaths=-/var/backups/idemstore$' '^ProtectSystem=strict$' '^ProtectHome=yes$' '^PrivateTmp=yes$' \
    '^WantedBy=multi-user.target$'; do
  expect_line "$unit" "$setting" "idemstored.service"
done
# The descriptors for the default limits (max-connections 1024 + http-max-connections 256 + 352).
nofile=$(printf '%s\n' "$unit" | sed -n 's/^LimitNOFILE=//p')
[ "$nofile" -ge 1632 ] || fail "LimitNOFILE=$nofile is below the default limits' 1632"

# systemd-analyze verify with the extracted tree as its root: ExecStart must name a file there.
# The targets the unit's default dependencies pull in (sysinit.target, ...) come from the host, and
# so does ExecReload's /bin/kill (procps, a dependency of the package).
cp /lib/systemd/system/*.target "$root/lib/systemd/system/"
mkdir -p "$root/bin"
cp /bin/kill "$root/bin/kill"
verify=$(systemd-analyze verify --man=no --generators=no --root="$root" "$unit_file" 2>&1) ||
  fail "systemd-analyze verify failed: $verify"
[ -z "$verify" ] || fail "systemd-analyze verify warns: $verify"

# --- the dev package
dev_files=$(dpkg-deb -c "$dev_deb" | awk '{print $NF}')
expect_line "$dev_files" '^\./usr/include/idem/store\.h$' "dev file list"
expect_line "$dev_files" '^\./usr/include/idem/client\.h$' "dev file list"
expect_line "$dev_files" '^\./usr/lib/([a-z0-9_-]+/)?libidem_engine\.a$' "dev file list"
expect_line "$dev_files" '^\./usr/lib/([a-z0-9_-]+/)?cmake/idemstore/idemstoreConfig\.cmake$' \
  "dev file list"
# Every installed header is a public one (engine/include/idem, net/include/idem), and all are.
printf '%s\n' "$dev_files" | sed -n 's#^\./usr/include/##p' | grep -v -e '/$' -e '^$' | sort >"$work/headers"
(cd "$source_dir/engine/include" && ls idem/*.h; cd "$source_dir/net/include" && ls idem/*.h) |
  sort >"$work/public"
diff "$work/public" "$work/headers" >"$work/headers.diff" ||
  fail "dev headers (>) differ from the public ones (<): $(cat "$work/headers.diff")"
[ "$(dpkg-deb -f "$dev_deb" Package)" = idemstore-dev ] || fail "dev Package"
dev_depends=$(dpkg-deb -f "$dev_deb" Depends | tr ',' '\n' | sed 's/^ *//')
expect_line "$dev_depends" '^libssl-dev$' "dev Depends (OpenSSL for idemstore::client)"
echo "deb_package_test: ok ($(basename "$deb"), $(basename "$dev_deb"))"
