# idem-retention (tools/retention): workload models, trace reader, simulator on real engines,
# reports, command line. The whole suite runs in well under a minute.
idem_add_test(retention_delay_models_test retention/delay_models_test.cc LIBS idem_retention)
idem_add_test(retention_workload_test retention/workload_test.cc LIBS idem_retention)
idem_add_test(retention_trace_reader_test retention/trace_reader_test.cc LIBS idem_retention)
idem_add_test(retention_simulator_test retention/simulator_test.cc LIBS idem_retention)
idem_add_test(retention_quick_run_test retention/quick_run_test.cc LIBS idem_retention)
idem_add_test(retention_report_test retention/report_test.cc LIBS idem_retention)
idem_add_test(retention_cli_test retention/cli_test.cc LIBS idem_retention)
# The CLI test also runs the binary, for exit codes.
target_compile_definitions(retention_cli_test PRIVATE
  IDEM_RETENTION_BINARY="$<TARGET_FILE:idem-retention>")
add_dependencies(retention_cli_test idem-retention)
