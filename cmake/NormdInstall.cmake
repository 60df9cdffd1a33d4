# What `cmake --install` puts in place for users of the client library:
#   lib/libnormd_client.a, lib/libnormd_proto.a          the library and its generated messages
#   include/normd/{client,base,kernels}/*.h               the headers, self-contained
#   include/normd/{normd/v1,grpc/health/v1}/*.pb.h       the generated messages and stubs
#   share/normd/proto/                                    the .proto files (for other languages)
#   lib/cmake/normd/normdConfig.cmake                     find_package(normd) -> normd::client
#   bin/normd, bin/normctl                                the server and the command-line tool
#   lib/libnormd_cuda_kernels.so                          the CUDA kernels, when built
# A program outside the tree builds against it in CTest (tests/install).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(NORMD_INSTALL_INCLUDE ${CMAKE_INSTALL_INCLUDEDIR}/normd)
set(NORMD_INSTALL_CMAKE ${CMAKE_INSTALL_LIBDIR}/cmake/normd)

install(TARGETS normd_client normd_proto EXPORT normdTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS normd normctl RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(NORMD_HAVE_CUDA)
  install(TARGETS normd_cuda_kernels LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  # The installed normd finds the kernels' library beside it, wherever the prefix is.
  set_target_properties(normd PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
endif()

# The client's public headers and the headers of ours they include.
install(FILES client/channel.h client/grpc_status.h client/normd_client.h client/region.h
              client/region_session.h client/request.h client/shared_memory.h client/shm_transport.h
              client/stream_session.h client/tensor.h
        DESTINATION ${NORMD_INSTALL_INCLUDE}/client)
install(FILES base/mutex.h base/status_macros.h DESTINATION ${NORMD_INSTALL_INCLUDE}/base)
install(FILES kernels/dtype.h DESTINATION ${NORMD_INSTALL_INCLUDE}/kernels)
install(DIRECTORY ${PROJECT_BINARY_DIR}/proto/gen/ DESTINATION ${NORMD_INSTALL_INCLUDE}
        FILES_MATCHING PATTERN "*.pb.h")
install(DIRECTORY proto/ DESTINATION ${CMAKE_INSTALL_DATADIR}/normd/proto
        FILES_MATCHING PATTERN "*.proto")

install(EXPORT normdTargets NAMESPACE normd:: DESTINATION ${NORMD_INSTALL_CMAKE})
configure_package_config_file(cmake/normdConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/normdConfig.cmake
                              INSTALL_DESTINATION ${NORMD_INSTALL_CMAKE})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/normdConfigVersion.cmake
                                 COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/normdConfig.cmake ${PROJECT_BINARY_DIR}/normdConfigVersion.cmake
        DESTINATION ${NORMD_INSTALL_CMAKE})
