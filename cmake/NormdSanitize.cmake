# Applies NORMD_SANITIZE to every target: "address" (AddressSanitizer + UndefinedBehaviorSanitizer) or
# "thread" (ThreadSanitizer). Host code only; CUDA device code is checked with compute-sanitizer instead.
if(NORMD_SANITIZE STREQUAL "address")
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=undefined>)
  add_link_options(-fsanitize=address,undefined)
elseif(NORMD_SANITIZE STREQUAL "thread")
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread>)
  add_link_options(-fsanitize=thread)
elseif(NOT NORMD_SANITIZE STREQUAL "")
  message(FATAL_ERROR "NORMD_SANITIZE must be address, thread or empty, not '${NORMD_SANITIZE}'")
endif()
