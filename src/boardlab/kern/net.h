/* io.net's sink, reachable from main.c as `boardlab-kern net-sink`. */
#ifndef BK_NET_H
#define BK_NET_H

#include "core.h"

BK_HIDDEN int bk_net_sink_main(int argc, char **argv);

#endif
