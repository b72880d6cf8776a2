# Network tests: units without sockets, the server and client over 127.0.0.1, and the real
# idemstored binary as a child process. All bind loopback only and stop their servers.
set(IDEM_NET_TEST_DIR ${CMAKE_CURRENT_SOURCE_DIR}/net)

idem_add_test(net_frame_parser_test net/frame_parser_test.cc LIBS idem_net_internal)
idem_add_test(net_accept_backoff_test net/accept_backoff_test.cc LIBS idem_net_internal)
idem_add_test(net_log_rate_limiter_test net/log_rate_limiter_test.cc LIBS idem_net_internal)
idem_add_test(net_failure_limiter_test net/failure_limiter_test.cc LIBS idem_net_internal)
idem_add_test(net_authenticator_test net/authenticator_test.cc LIBS idem_net_internal)
idem_add_test(net_authorization_test net/authorization_test.cc LIBS idem_net_internal)
idem_add_test(net_auth_server_test net/auth_server_test.cc LIBS idem_net_internal)
idem_add_test(net_credentials_test net/credentials_test.cc LIBS idem_net_internal)
target_compile_definitions(net_credentials_test PRIVATE
  IDEM_SECURITY_DOC="${PROJECT_SOURCE_DIR}/docs/security.md")
idem_add_test(net_commit_queue_test net/commit_queue_test.cc LIBS idem_net_internal
              idem_engine_internal)
idem_add_test(net_request_handler_test net/request_handler_test.cc LIBS idem_net_internal)
idem_add_test(net_gateway_key_test net/gateway_key_test.cc LIBS idem_net_internal)
idem_add_test(net_gateway_stored_response_test net/gateway_stored_response_test.cc
              LIBS idem_net_internal)
# The gateway in front of a real upstream (support/test_upstream.h) on 127.0.0.1.
find_package(Boost 1.74 REQUIRED CONFIG)
add_library(test_upstream STATIC support/test_upstream.cc)
target_include_directories(test_upstream PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_upstream PUBLIC Boost::headers Threads::Threads PRIVATE idem_warnings)
# Boost 1.74's recycled coroutine frames read to GCC 12 as a mismatched new/delete.
target_compile_options(test_upstream PRIVATE -Wno-mismatched-new-delete)
foreach(t net_gateway_replay_test net_gateway_failure_test net_gateway_listener_test)
  string(REPLACE "net_" "net/" source ${t})
  idem_add_test(${t} ${source}.cc LIBS idem_net_internal test_upstream test_certs)
  target_include_directories(${t} PRIVATE ${IDEM_NET_TEST_DIR})
  target_compile_options(${t} PRIVATE -Wno-missing-field-initializers)
endforeach()
idem_add_test(net_protocol_codec_test net/protocol_codec_test.cc LIBS idem_net_internal)
idem_add_test(net_admin_request_test net/admin_request_test.cc LIBS idem_net_internal)
idem_add_test(net_metrics_test net/metrics_test.cc LIBS idem_net_internal)
idem_add_test(net_store_conformance_test net/store_conformance_test.cc
              net/store_conformance_lifecycle_test.cc net/store_conformance_race_test.cc
              net/store_conformance_kinds_test.cc net/store_conformance_checkpoint_test.cc
              net/store_conformance_key_format_test.cc net/store_conformance_remember_test.cc
              net/store_conformance_admin_test.cc LIBS idem_net_internal test_certs)
idem_add_test(net_server_test net/server_test.cc LIBS idem_net_internal)
idem_add_test(net_client_test net/client_test.cc LIBS idem_net_internal)
idem_add_test(net_waiting_lock_test net/waiting_lock_test.cc LIBS idem_net)
# Condition{.status_in = ...} / Update{.status = ...} leave the other members defaulted on
# purpose; that is how the API is meant to be called.
foreach(t net_store_conformance_test net_server_test net_waiting_lock_test)
  target_compile_options(${t} PRIVATE -Wno-missing-field-initializers)
endforeach()
idem_add_test(net_server_metrics_test net/server_metrics_test.cc LIBS idem_net_internal)
# TLS on both listeners and in the Client, with certificates made by the test.
idem_add_test(net_tls_test net/tls_test.cc LIBS idem_net_internal test_certs OpenSSL::SSL)
foreach(t net_request_handler_test net_admin_request_test net_store_conformance_test
        net_server_test net_client_test net_tls_test net_auth_server_test
        net_waiting_lock_test net_metrics_test net_server_metrics_test)
  target_include_directories(${t} PRIVATE ${IDEM_NET_TEST_DIR})
endforeach()

if(TARGET idemstored)
  idem_add_test(net_idemstored_test net/idemstored_test.cc LIBS idem_net)
  target_compile_definitions(net_idemstored_test PRIVATE
    IDEMSTORED_PATH="$<TARGET_FILE:idemstored>")
  add_dependencies(net_idemstored_test idemstored)
  # The same binary on damaged data directories.
  idem_add_test(net_idemstored_damage_test net/idemstored_damage_test.cc LIBS idem_net)
  target_compile_definitions(net_idemstored_damage_test PRIVATE
    IDEMSTORED_PATH="$<TARGET_FILE:idemstored>")
  add_dependencies(net_idemstored_damage_test idemstored)
  # Its log on stderr, in both formats.
  find_package(nlohmann_json 3.11 REQUIRED CONFIG)
  idem_add_test(net_idemstored_log_test net/idemstored_log_test.cc LIBS idem_net
                nlohmann_json::nlohmann_json)
  target_compile_definitions(net_idemstored_log_test PRIVATE
    IDEMSTORED_PATH="$<TARGET_FILE:idemstored>")
  add_dependencies(net_idemstored_log_test idemstored)
endif()

if(TARGET idemstored)
  # The real binary under a 1024 open-files limit and a flood of 1,200 connections.
  idem_add_test(net_idemstored_fd_limit_test net/idemstored_fd_limit_test.cc LIBS idem_net_internal
                idem_server_config)
  target_compile_definitions(net_idemstored_fd_limit_test PRIVATE
    IDEMSTORED_PATH="$<TARGET_FILE:idemstored>")
  target_include_directories(net_idemstored_fd_limit_test PRIVATE ${IDEM_NET_TEST_DIR})
  add_dependencies(net_idemstored_fd_limit_test idemstored)
endif()

# The HTTP/JSON API over a real server, with a real HTTP client (Boost.Beast).
find_package(nlohmann_json 3.11 REQUIRED CONFIG)
idem_add_test(net_http_api_test net/http_api_test.cc LIBS idem_net_internal idem_tool_common
              nlohmann_json::nlohmann_json)
target_include_directories(net_http_api_test PRIVATE ${IDEM_NET_TEST_DIR})
# docs/openapi.yaml: OpenAPI 3.0 that parses, references that resolve, and every served route.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME net_openapi_check
         COMMAND Python3::Interpreter ${IDEM_NET_TEST_DIR}/openapi_check.py ${PROJECT_SOURCE_DIR})
