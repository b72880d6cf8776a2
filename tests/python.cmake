# The Python client (clients/python): its unittest modules, the real idemstored of this build
# for the ones that need a server, run by Debian's /usr/bin/python3, which sees
# python3-flatbuffers (./dev deps; a pyenv or venv python3 first on PATH may not). Not in the
# sanitizer build: they test Python code, and the server's behaviour under ASan is the C++
# suite's business.
set(IDEM_PYTHON /usr/bin/python3 CACHE FILEPATH "the Python that runs the Python client's tests")
set(IDEM_PYTHON_CLIENT_DIR ${PROJECT_SOURCE_DIR}/clients/python)

# One ctest entry per module (explicit: a new module is added here).
set(IDEM_PYTHON_TEST_MODULES
    test_codec           # encoder, decoder, hostile frames (no server)
    test_client          # every outcome, concurrency, pipelining
    test_client_failures # restart, kill mid-call, timeouts, a scripted peer
    test_tls             # TLS and tokens (certificates made with the openssl command)
    test_install         # pip install into a venv, offline
    test_aio             # the asyncio client: the same behaviours, fewer of them
    test_idempotent)     # @idempotent and the Idempotency context managers
set(IDEM_PYTHON_TEST_ENV IDEMSTORED=$<TARGET_FILE:idemstored> IDEMCTL=$<TARGET_FILE:idemctl>
    PYTHONPATH=${IDEM_PYTHON_CLIENT_DIR} PYTHONDONTWRITEBYTECODE=1)
foreach(module ${IDEM_PYTHON_TEST_MODULES})
  add_test(NAME python_${module}
           COMMAND ${IDEM_PYTHON} -m unittest discover -s ${IDEM_PYTHON_CLIENT_DIR}/tests
                   -p ${module}.py -v)
  set_tests_properties(python_${module} PROPERTIES
    TIMEOUT 300
    LABELS python
    ENVIRONMENT "${IDEM_PYTHON_TEST_ENV}")
endforeach()

# The checked-in generated code (clients/python/idemstore/_proto) is what flatc makes of
# net/protocol.fbs now; fails with "run ./dev python-gen" otherwise.
if(TARGET flatbuffers::flatc)
  set(IDEM_PYTHON_FLATC $<TARGET_FILE:flatbuffers::flatc>)
else()
  find_program(IDEM_PYTHON_FLATC flatc REQUIRED)
endif()
add_test(NAME python_proto_current
         COMMAND ${IDEM_PYTHON} ${IDEM_PYTHON_CLIENT_DIR}/gen_proto.py --check
                 --flatc ${IDEM_PYTHON_FLATC})
set_tests_properties(python_proto_current PROPERTIES LABELS python)
