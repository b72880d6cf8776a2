# Runs at install time (cmake --install, cpack): installs idemstored.conf and idemstored.service
# where the prefix being installed to puts them, the way GNUInstallDirs places sysconfdir:
#   prefix /usr (the Debian package)  /etc/idemstore/, /lib/systemd/system/
#   any other prefix P                P/etc/idemstore/, P/lib/systemd/system/
# with the unit's ExecStart naming PREFIX/bin/idemstored and that idemstored.conf.
# In: IDEM_PACKAGING_DIR (this directory), CMAKE_INSTALL_PREFIX, $DESTDIR.
set(idem_root "${CMAKE_INSTALL_PREFIX}")
if(idem_root STREQUAL "/usr")
  set(idem_root "")
endif()
# file(INSTALL) adds $DESTDIR itself.
file(INSTALL DESTINATION "${idem_root}/etc/idemstore" TYPE FILE
     FILES "${IDEM_PACKAGING_DIR}/idemstored.conf")

# The unit is configured straight into its destination (no shared intermediate file, so that
# concurrent installs of one build do not race).
set(IDEM_BINDIR "${CMAKE_INSTALL_PREFIX}/bin")
set(IDEM_CONFIG_FILE "${idem_root}/etc/idemstore/idemstored.conf")
set(unit "$ENV{DESTDIR}${idem_root}/lib/systemd/system/idemstored.service")
message(STATUS "Installing: ${unit}")
configure_file("${IDEM_PACKAGING_DIR}/idemstored.service.in" "${unit}" @ONLY)
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${idem_root}/lib/systemd/system/idemstored.service")
