idem_add_test(idemctl_test tools/idemctl_test.cc LIBS idemctl_core)
target_compile_definitions(idemctl_test PRIVATE IDEMCTL_PATH="$<TARGET_FILE:idemctl>")
add_dependencies(idemctl_test idemctl)
