# toolchain.cmake: cross-compiles the kit for aarch64 Linux on an x86-64 host,
# against the arm64 Debian root that `make check-arm64` makes (staff/arm64.py):
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=staff/arm64/toolchain.cmake -DKIT_ARM64_ROOT=ROOT
# Debian's cross compiler (g++-aarch64-linux-gnu) runs on the host at full
# speed; headers and libraries come from the root, where the binaries then
# run under qemu.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
if(NOT KIT_ARM64_ROOT)
  set(KIT_ARM64_ROOT $ENV{KIT_ARM64_ROOT})
endif()
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES KIT_ARM64_ROOT)  # CMake's test projects read this file too
if(NOT KIT_ARM64_ROOT)
  message(FATAL_ERROR "name the arm64 root: -DKIT_ARM64_ROOT=DIR (staff/arm64.py makes one)")
endif()
set(CMAKE_SYSROOT ${KIT_ARM64_ROOT})
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH ${KIT_ARM64_ROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# Open MPI's wrapper of the root, asked for its flags through qemu.
set(MPI_CXX_COMPILER ${CMAKE_CURRENT_LIST_DIR}/mpicxx CACHE FILEPATH "the arm64 root's Open MPI wrapper")
