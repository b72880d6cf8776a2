# install_consumer_test: installs the dev component of the build in BUILD_DIR into a scratch
# prefix, checks that only the public headers were installed, builds tests/consumer against
# that prefix alone and runs it. Fails (a CMake error naming the step) on any difference.
# In (-D): BUILD_DIR, SOURCE_DIR (the repository), WORK_DIR (scratch, emptied first),
#          GENERATOR, CXX_COMPILER, BUILD_TYPE, CXX_FLAGS (the sanitizer flags of the build),
#          LIBDIR (the build's CMAKE_INSTALL_LIBDIR).
file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")

function(run step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${step} failed (${rc}):\n${out}")
  endif()
  message(STATUS "${step}: ok")
  set(run_output "${out}" PARENT_SCOPE)
endfunction()

run("install" ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}" --component dev)

# The installed headers are exactly the public ones: engine/include and net/include.
file(GLOB_RECURSE installed RELATIVE "${prefix}/include" "${prefix}/include/*")
file(GLOB public RELATIVE "${SOURCE_DIR}/engine/include" "${SOURCE_DIR}/engine/include/idem/*")
file(GLOB net_public RELATIVE "${SOURCE_DIR}/net/include" "${SOURCE_DIR}/net/include/idem/*")
list(APPEND public ${net_public})
list(SORT installed)
list(SORT public)
if(NOT installed STREQUAL public)
  message(FATAL_ERROR "installed headers:\n  ${installed}\nexpected the public ones:\n  ${public}")
endif()
foreach(f ${LIBDIR}/cmake/idemstore/idemstoreConfig.cmake
          ${LIBDIR}/cmake/idemstore/idemstoreConfigVersion.cmake ${LIBDIR}/libidem_engine.a)
  if(NOT EXISTS "${prefix}/${f}")
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()

run("configure the consumer" ${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/consumer"
    -B "${WORK_DIR}/build" -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}"
    "-DCMAKE_BUILD_TYPE=${BUILD_TYPE}" "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}"
    "-DCMAKE_PREFIX_PATH=${prefix}")
run("build the consumer" ${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run("run the consumer" "${WORK_DIR}/build/consumer" "${WORK_DIR}/data")
if(NOT run_output MATCHES "consumer: ok")
  message(FATAL_ERROR "the consumer printed:\n${run_output}")
endif()
