# `cmake --install` layout for embedding FlashIR (find_package(FlashIR)):
# headers (+ generated .inc and the .td files), the libraries as
# FlashIR::<Name> targets, FlashIRConfig.cmake and its version file. The
# runtime targets never depend on MLIR; with the compiler, the config finds
# the same MLIR this build used.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(FLASHIR_EXPORTED_TARGETS)
function(flashir_export target name)
  if(NOT TARGET ${target})
    return()
  endif()
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name})
  target_include_directories(${target} INTERFACE
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  install(TARGETS ${target} EXPORT FlashIRTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endfunction()

flashir_export(FlashIRABI ABI)
flashir_export(FlashIRRuntime Runtime)
flashir_export(FlashIRReference Reference)
flashir_export(FlashIRTarget Target)
flashir_export(flashir_c RuntimeC)
if(FLASHIR_ENABLE_COMPILER)
  flashir_export(FlashIRAttnDialect AttnDialect)
  flashir_export(FlashIRAttnTransforms AttnTransforms)
  flashir_export(FlashIRAttnToLoops AttnToLoops)
  flashir_export(FlashIRAttnToGPU AttnToGPU)
  flashir_export(FlashIRPipelines Pipelines)
  flashir_export(FlashIRCAPIAttn CAPIAttn)
endif()

install(DIRECTORY ${FLASHIR_SOURCE_DIR}/include/flashir
                  ${FLASHIR_SOURCE_DIR}/include/flashir-c
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h" PATTERN "*.td")
if(FLASHIR_ENABLE_COMPILER)
  install(DIRECTORY ${FLASHIR_BINARY_DIR}/include/flashir
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
    FILES_MATCHING PATTERN "*.inc" PATTERN "CMakeFiles" EXCLUDE)
endif()

set(FLASHIR_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/FlashIR)
install(EXPORT FlashIRTargets NAMESPACE FlashIR::
  DESTINATION ${FLASHIR_INSTALL_CMAKEDIR})
set(FLASHIR_CONFIG_MLIR_DIR "")
if(FLASHIR_ENABLE_COMPILER)
  set(FLASHIR_CONFIG_MLIR_DIR "${MLIR_DIR}")
endif()
configure_package_config_file(
  ${FLASHIR_SOURCE_DIR}/cmake/FlashIRConfig.cmake.in
  ${FLASHIR_BINARY_DIR}/FlashIRConfig.cmake
  INSTALL_DESTINATION ${FLASHIR_INSTALL_CMAKEDIR})
write_basic_package_version_file(
  ${FLASHIR_BINARY_DIR}/FlashIRConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${FLASHIR_BINARY_DIR}/FlashIRConfig.cmake
              ${FLASHIR_BINARY_DIR}/FlashIRConfigVersion.cmake
  DESTINATION ${FLASHIR_INSTALL_CMAKEDIR})
