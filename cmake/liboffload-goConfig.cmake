# find_package(liboffload-go): the same package as find_package(Offload), under
# the project's name (the name FetchContent and add_subdirectory users know).
# Targets: offload::offload, Offload::Offload, LLVMOffload (see OffloadConfig.cmake).
# SPDX-License-Identifier: Apache-2.0
include("${CMAKE_CURRENT_LIST_DIR}/../Offload/OffloadConfig.cmake")
