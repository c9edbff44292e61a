# check_layout.cmake — the layout stays what docs/DESIGN.md's map says (cmake -DROOT=DIR -P).
#
# 1. Includes follow the layers, data flowing actor -> analyzer -> learner -> weights: a
#    folder includes only its own headers and those of the folders below it, so no role
#    includes another role's headers (what they share lives in roles/).
# 2. Every folder with a CMakeLists.txt at the top level, under tests/ and under bench/ is
#    named in its parent's folder list, so none is added (or dropped) without a word.
# Each breach is printed as FILE:LINE (or the folder) with the rule; any breach fails.
cmake_minimum_required(VERSION 3.20)
if(NOT ROOT)
  message(FATAL_ERROR "usage: cmake -DROOT=<source tree> -P check_layout.cmake")
endif()

# What each folder may include besides itself. common/ -> envs/ is the one upward edge: the
# job check refuses env names the registry does not know (common/job.c: env_lookup).
set(allow_common envs)
set(allow_proto common)
set(allow_model common)
set(allow_envs common proto)
set(allow_roles common proto model envs)
set(allow_actor common proto model envs roles)
set(allow_analyzer common proto model envs roles)
set(allow_learner common proto model envs roles)
set(allow_deploy common proto model envs roles)
set(layers common proto model envs roles actor analyzer learner deploy)

set(breaches 0)
foreach(dir ${layers})
  file(GLOB_RECURSE srcs RELATIVE ${ROOT} ${ROOT}/${dir}/*.c ${ROOT}/${dir}/*.h
       ${ROOT}/${dir}/*.cu ${ROOT}/${dir}/*.cuh)
  list(SORT srcs)
  foreach(src ${srcs})
    file(STRINGS ${ROOT}/${src} lines)
    set(n 0)
    foreach(line IN LISTS lines)
      math(EXPR n "${n} + 1")
      if(line MATCHES "^[ \t]*#[ \t]*include[ \t]+\"([A-Za-z0-9_]+)/")
        set(to ${CMAKE_MATCH_1})
        if(NOT to STREQUAL dir AND NOT to IN_LIST allow_${dir} AND to IN_LIST layers)
          string(REPLACE ";" "/ " may "${allow_${dir}}")
          message("${src}:${n} includes ${to}/: ${dir}/ may include only ${dir}/ ${may}/")
          math(EXPR breaches "${breaches} + 1")
        endif()
      endif()
    endforeach()
  endforeach()
endforeach()

foreach(parent "." tests bench)
  set(list_file ${ROOT}/${parent}/CMakeLists.txt)
  if(NOT EXISTS ${list_file})
    continue()
  endif()
  file(READ ${list_file} text)
  string(REGEX MATCH "foreach\\((dir|d)[ \t\r\n]+([^)]*)\\)" m "${text}")
  string(REGEX REPLACE "[ \t\r\n]+" ";" listed "${CMAKE_MATCH_2}")
  file(GLOB subs RELATIVE ${ROOT}/${parent} ${ROOT}/${parent}/*/CMakeLists.txt)
  foreach(sub ${subs})
    get_filename_component(name ${sub} DIRECTORY)
    if(NOT name IN_LIST listed)
      message("${parent}/${name}/ has a CMakeLists.txt but ${parent}/CMakeLists.txt does not "
              "list it: it would not be built")
      math(EXPR breaches "${breaches} + 1")
    endif()
  endforeach()
endforeach()

if(breaches GREATER 0)
  message(FATAL_ERROR "layout: ${breaches} breach(es) above")
endif()
message(STATUS "layout: includes follow the layers; every folder is listed")
