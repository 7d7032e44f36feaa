/* boardlab-kern launch: the campaign runner's program launcher (launch.c). */
#ifndef BK_LAUNCH_H
#define BK_LAUNCH_H

#include "core.h"

BK_HIDDEN int bk_launch_main(int argc, char **argv);

#endif
