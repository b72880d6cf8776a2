# idem-bench's units: the latency histogram, the key distributions, the flag parsing and the
# reading of the server's CPU from /proc.
if(TARGET idem_bench_core)
  idem_add_test(perf_histogram_test perf/histogram_test.cc LIBS idem_bench_core)
  idem_add_test(perf_key_distribution_test perf/key_distribution_test.cc LIBS idem_bench_core)
  idem_add_test(perf_bench_config_test perf/bench_config_test.cc LIBS idem_bench_core)
  idem_add_test(perf_proc_cpu_test perf/proc_cpu_test.cc LIBS idem_bench_core)
endif()
