# Sets RBG_BISHENG to the Ascend C compiler of the CANN toolkit at ASCEND_HOME_PATH, or stops with a message. Both
# install layouts: <toolkit>/<host arch>-linux/ccec_compiler/bin/bisheng, then <toolkit>/compiler/ccec_compiler/bin.
# Shared by the _npu module build (which includes it before project(), where CMAKE_HOST_SYSTEM_PROCESSOR is not set
# yet: the host arch then comes from uname) and the op package. Run alone, it prints what it found:
#   cmake -DASCEND_HOME_PATH=/usr/local/Ascend/ascend-toolkit/latest -P csrc/npu/find_bisheng.cmake
set(_rbg_host_arch ${CMAKE_HOST_SYSTEM_PROCESSOR})
if(NOT _rbg_host_arch)
  execute_process(COMMAND uname -m OUTPUT_VARIABLE _rbg_host_arch OUTPUT_STRIP_TRAILING_WHITESPACE)
endif()
foreach(candidate ${ASCEND_HOME_PATH}/${_rbg_host_arch}-linux/ccec_compiler/bin/bisheng
                  ${ASCEND_HOME_PATH}/compiler/ccec_compiler/bin/bisheng)
  if(NOT RBG_BISHENG AND EXISTS ${candidate} AND NOT IS_DIRECTORY ${candidate})
    set(RBG_BISHENG ${candidate})
  endif()
endforeach()
if(NOT RBG_BISHENG)
  message(FATAL_ERROR "bisheng not found under ${ASCEND_HOME_PATH} (looked in ${_rbg_host_arch}-linux/ccec_compiler/bin "
                      "and compiler/ccec_compiler/bin)")
endif()
if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  message("${RBG_BISHENG}")
endif()
