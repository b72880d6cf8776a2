# The Debian packages, made by `cpack` in a build directory (./dev package: build-release):
#   idemstore_VERSION_ARCH.deb      the server component: /usr/bin/idemstored, idemctl,
#                                   idem-retention, /etc/idemstore/idemstored.conf (a conffile),
#                                   /lib/systemd/system/idemstored.service, the idemstore user
#   idemstore-dev_VERSION_ARCH.deb  the dev component: static libraries, headers, CMake package
# Depends come from dpkg-shlibdeps. Built against the Release RocksDB (IDEM_ROCKSDB_DIR), the
# programs link it statically and the server package does not depend on Debian's librocksdb.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME idemstore)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_VENDOR idemstore)
set(CPACK_PACKAGE_CONTACT "idemstore maintainers <idemstore@localhost>")
# Where `cpack` writes the packages (the test passes its own -B).
set(CPACK_PACKAGE_DIRECTORY ${PROJECT_BINARY_DIR})
# Installed with DESTDIR and the real prefix, whatever the build's CMAKE_INSTALL_PREFIX, so that
# install_system_files.cmake sees /usr (and puts the unit and the configuration in /lib, /etc).
set(CPACK_SET_DESTDIR ON)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)  # the programs; CMake never strips static libraries

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL server dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)

set(CPACK_DEBIAN_SERVER_PACKAGE_NAME idemstore)
set(CPACK_DEBIAN_SERVER_PACKAGE_SECTION database)
set(CPACK_DEBIAN_SERVER_DESCRIPTION "Idempotency store on RocksDB: server and command-line client
idemstored serves idempotency keys, request leases with fencing tokens, locks and one-shot
tokens over a binary protocol and an HTTP/JSON API; idemctl queries and administers it.")
# postinst runs adduser; the rest comes from dpkg-shlibdeps.
set(CPACK_DEBIAN_SERVER_PACKAGE_DEPENDS adduser)
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_SOURCE_DIR}/debian/conffiles ${CMAKE_CURRENT_SOURCE_DIR}/debian/postinst
    ${CMAKE_CURRENT_SOURCE_DIR}/debian/prerm ${CMAKE_CURRENT_SOURCE_DIR}/debian/postrm)
set(CPACK_DEBIAN_SERVER_PACKAGE_CONTROL_STRICT_PERMISSION TRUE)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME idemstore-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION "Idempotency store on RocksDB: static libraries and headers
find_package(idemstore CONFIG) with the targets idemstore::engine (embedded) and
idemstore::client (network client and server).")
# What idemstoreConfig.cmake finds: RocksDB's CMake package (and, through it, its codecs) and
# OpenSSL (libcrypto, linked by idemstore::client).
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "librocksdb-dev (>= 7.8.3), libssl-dev")

include(CPack)
