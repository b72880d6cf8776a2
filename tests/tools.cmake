# The tools' own units: durations as typed, base64, JSON text, the command line every program
# shares, idemstored's flags and its descriptor budget.
idem_add_test(duration_test tools/duration_test.cc LIBS idem_tool_common)
idem_add_test(base64_test tools/base64_test.cc LIBS idem_tool_common)
idem_add_test(json_writer_test tools/json_writer_test.cc LIBS idem_tool_common)
idem_add_test(cli_app_test tools/cli_app_test.cc LIBS idem_tool_cli)
idem_add_test(server_flags_test tools/server_flags_test.cc LIBS idem_server_config)
# The example configuration file the package installs must parse and list every option.
target_compile_definitions(server_flags_test PRIVATE
  IDEM_EXAMPLE_CONFIG="${PROJECT_SOURCE_DIR}/packaging/idemstored.conf")
idem_add_test(fd_budget_test tools/fd_budget_test.cc LIBS idem_server_config)

idem_add_test(idemctl_test tools/idemctl_test.cc LIBS idemctl_core idem_net_internal)
target_compile_definitions(idemctl_test PRIVATE IDEMCTL_PATH="$<TARGET_FILE:idemctl>")
add_dependencies(idemctl_test idemctl)

# The recipe examples, each run embedded and against a real idemstored.
idem_add_test(examples_test tools/examples_test.cc LIBS idem_engine)
target_compile_definitions(examples_test PRIVATE
  IDEMSTORED_PATH="$<TARGET_FILE:idemstored>"
  EXAMPLES_DIR="$<TARGET_FILE_DIR:example_order_handler>")
add_dependencies(examples_test idemstored example_order_handler example_payment_callback
                 example_queue_consumer example_form_token example_resumable_job)
idem_add_test(idemctl_repair_test tools/idemctl_repair_test.cc LIBS idem_engine_internal)
target_compile_definitions(idemctl_repair_test PRIVATE IDEMCTL_PATH="$<TARGET_FILE:idemctl>")
add_dependencies(idemctl_repair_test idemctl)
idem_add_test(idemctl_backup_test tools/idemctl_backup_test.cc LIBS idem_net)
target_compile_definitions(idemctl_backup_test PRIVATE IDEMCTL_PATH="$<TARGET_FILE:idemctl>"
                                                      IDEMSTORED_PATH="$<TARGET_FILE:idemstored>")
add_dependencies(idemctl_backup_test idemctl idemstored)
idem_add_test(idemctl_admin_test tools/idemctl_admin_test.cc LIBS idem_engine)
target_compile_definitions(idemctl_admin_test PRIVATE IDEMCTL_PATH="$<TARGET_FILE:idemctl>"
                                                      IDEMSTORED_PATH="$<TARGET_FILE:idemstored>")
add_dependencies(idemctl_admin_test idemctl idemstored)
# TLS between the real programs: idemstored with --tls-cert/--tls-key, idemctl and idem-bench
# with --tls-ca, certificates made by the test; SIGHUP reloads them.
idem_add_test(idem_tls_programs_test tools/tls_programs_test.cc LIBS idem_engine test_certs)
target_compile_definitions(idem_tls_programs_test PRIVATE IDEMCTL_PATH="$<TARGET_FILE:idemctl>"
                           IDEMSTORED_PATH="$<TARGET_FILE:idemstored>"
                           IDEM_BENCH_PATH="$<TARGET_FILE:idem-bench>")
add_dependencies(idem_tls_programs_test idemctl idemstored idem-bench)
idem_add_test(idemctl_auth_test tools/idemctl_auth_test.cc LIBS idem_net_internal)
target_compile_definitions(idemctl_auth_test PRIVATE IDEMCTL_PATH="$<TARGET_FILE:idemctl>"
                                                     IDEMSTORED_PATH="$<TARGET_FILE:idemstored>")
add_dependencies(idemctl_auth_test idemctl idemstored)
