# Sets RBG_BISHENG to the Ascend C compiler of the CANN toolkit at ASCEND_HOME_PATH (both install layouts),
# or stops with a message. Shared by the _npu module build and the op package.
foreach(candidate ${ASCEND_HOME_PATH}/${CMAKE_HOST_SYSTEM_PROCESSOR}-linux/ccec_compiler/bin/bisheng
                  ${ASCEND_HOME_PATH}/compiler/ccec_compiler/bin/bisheng)
  if(NOT RBG_BISHENG AND EXISTS ${candidate})
    set(RBG_BISHENG ${candidate})
  endif()
endforeach()
if(NOT RBG_BISHENG)
  message(FATAL_ERROR "bisheng not found under ${ASCEND_HOME_PATH}")
endif()
