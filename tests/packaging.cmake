# Installing and packaging, checked from the outside: the installed CMake package builds a
# project outside this tree; the Debian packages hold the expected files, control fields and a
# unit systemd accepts.
if(IDEM_SANITIZE)
  set(IDEM_CONSUMER_FLAGS "-fsanitize=address,undefined")
endif()
add_test(NAME install_consumer_test
  COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
          -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/install_consumer_test
          -DGENERATOR=${CMAKE_GENERATOR} -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
          -DBUILD_TYPE=${CMAKE_BUILD_TYPE} -DCXX_FLAGS=${IDEM_CONSUMER_FLAGS}
          -DLIBDIR=${CMAKE_INSTALL_LIBDIR}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/consumer/run_consumer_test.cmake)
set_tests_properties(install_consumer_test PROPERTIES TIMEOUT 300)

# The Debian packages (packaging/deb.cmake), from this build: cpack, then dpkg-deb and
# systemd-analyze on the result (tools from dpkg, dpkg-dev and systemd; ./dev installs them).
if(IDEM_BUILD_TOOLS AND PROJECT_IS_TOP_LEVEL)
  if(IDEM_ROCKSDB_DIR)
    set(IDEM_ROCKSDB_STATIC 1)
  else()
    set(IDEM_ROCKSDB_STATIC 0)
  endif()
  add_test(NAME deb_package_test
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/packaging/deb_package_test.sh ${CMAKE_CPACK_COMMAND}
            ${PROJECT_BINARY_DIR} ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/deb_package_test
            ${PROJECT_VERSION} ${IDEM_ROCKSDB_STATIC})
  set_tests_properties(deb_package_test PROPERTIES TIMEOUT 300)
endif()
