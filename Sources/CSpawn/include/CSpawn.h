#ifndef DATA4HELP_CSPAWN_H
#define DATA4HELP_CSPAWN_H
#include <spawn.h>

/// glibc's GNU extensions to posix_spawn, which Swift's Glibc module does not expose
/// (they are declared only under _GNU_SOURCE).
int data4help_spawn_addclosefrom(posix_spawn_file_actions_t *actions, int from);
int data4help_spawn_addchdir(posix_spawn_file_actions_t *actions, const char *path);

#endif
