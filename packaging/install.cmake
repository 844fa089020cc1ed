# Installs the deployment files; run by `cmake --install` (the top
# CMakeLists.txt sets GROUPCOORD_PACKAGING_DIR, GROUPCOORD_PACKAGING_WORK,
# GROUPCOORD_BINDIR, GROUPCOORD_SYSCONFDIR and GROUPCOORD_DOCDIR, then
# includes this file). It runs at install time so that the paths written into
# the systemd unit are those of the prefix actually installed to
# (`cmake --install build --prefix P`), not the one configured.
#
#   <prefix>/lib/systemd/system/groupcoordd.service   ExecStart and --config point into <prefix>
#   <prefix>/lib/sysusers.d/groupcoord.conf           the groupcoord system user
#   <docdir>/groupcoordd.properties                   the example, every option with its default
#   <sysconfdir>/groupcoord/groupcoordd.properties    the same, unless a file is there already
#
# <sysconfdir> is /etc for the prefix /usr, else <prefix>/etc (unless
# CMAKE_INSTALL_SYSCONFDIR was configured as an absolute path).

function(groupcoord_full_dir out dir)
  if(IS_ABSOLUTE "${dir}")
    set(${out} "${dir}" PARENT_SCOPE)
  else()
    set(${out} "${CMAKE_INSTALL_PREFIX}/${dir}" PARENT_SCOPE)
  endif()
endfunction()

groupcoord_full_dir(bindir "${GROUPCOORD_BINDIR}")
groupcoord_full_dir(docdir "${GROUPCOORD_DOCDIR}")
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr" AND NOT IS_ABSOLUTE "${GROUPCOORD_SYSCONFDIR}")
  set(confdir "/etc/groupcoord")
else()
  groupcoord_full_dir(confdir "${GROUPCOORD_SYSCONFDIR}")
  set(confdir "${confdir}/groupcoord")
endif()

# The unit in packaging/ names the paths of a /usr install; make them this
# prefix's.
file(READ "${GROUPCOORD_PACKAGING_DIR}/groupcoordd.service" unit)
string(REPLACE "/usr/bin/groupcoordd" "${bindir}/groupcoordd" unit "${unit}")
string(REPLACE "/etc/groupcoord/" "${confdir}/" unit "${unit}")
string(REPLACE "/usr/share/doc/groupcoord/" "${docdir}/" unit "${unit}")
file(MAKE_DIRECTORY "${GROUPCOORD_PACKAGING_WORK}")
file(WRITE "${GROUPCOORD_PACKAGING_WORK}/groupcoordd.service" "${unit}")

file(INSTALL "${GROUPCOORD_PACKAGING_WORK}/groupcoordd.service"
  DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system"
  FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(INSTALL "${GROUPCOORD_PACKAGING_DIR}/groupcoord.sysusers"
  DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/sysusers.d" RENAME groupcoord.conf
  FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
file(INSTALL "${GROUPCOORD_PACKAGING_DIR}/groupcoordd.properties"
  DESTINATION "${docdir}"
  FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
# Never overwrite an operator's configuration.
if(EXISTS "$ENV{DESTDIR}${confdir}/groupcoordd.properties")
  message(STATUS "Keeping: $ENV{DESTDIR}${confdir}/groupcoordd.properties (the example is in ${docdir})")
else()
  file(INSTALL "${GROUPCOORD_PACKAGING_DIR}/groupcoordd.properties"
    DESTINATION "${confdir}"
    FILE_PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ)
endif()
