# Installing, checked from the outside: the installed CMake package builds a project outside
# this tree.
if(IDEM_SANITIZE)
  set(IDEM_CONSUMER_FLAGS "-fsanitize=address,undefined")
endif()
add_test(NAME install_consumer_test
  COMMAND ${CMAKE_COMMAND} -DBUILD_DIR=${PROJECT_BINARY_DIR} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
          -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/install_consumer_test
          -DGENERATOR=${CMAKE_GENERATOR} -DCXX_COMPILER=${CMAKE_CXX_COMPILER}
          -DBUILD_TYPE=${CMAKE_BUILD_TYPE} -DCXX_FLAGS=${IDEM_CONSUMER_FLAGS}
          -P ${CMAKE_CURRENT_SOURCE_DIR}/consumer/run_consumer_test.cmake)
set_tests_properties(install_consumer_test PROPERTIES TIMEOUT 300)

