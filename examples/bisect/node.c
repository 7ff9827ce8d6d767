/* A node-like server for bisect's fixture: it listens on a Unix socket, and every byte a
 * client sends is one unit of work costing WORK dependent multiply-adds of CPU (WORK is
 * set by the revision, in version.h). Each unit done is one JSON line `{"units": 1}` in
 * its metrics file, so dyno counts the units done inside the measured window exactly
 * (the lines are summed over it) and judges cpu_s_per_unit from the units the node did,
 * not the ones sent: a node starved of CPU by a busy machine is slower, not cheaper. */
#include "version.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static volatile double sink;

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: node SOCKET METRICS.jsonl\n");
        return 2;
    }
    FILE *metrics = fopen(argv[2], "w");
    if (!metrics) {
        perror(argv[2]);
        return 1;
    }
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, argv[1], sizeof addr.sun_path - 1);
    unlink(argv[1]);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    if (s < 0 || bind(s, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(s, 4) < 0) {
        perror(argv[1]);
        return 1;
    }
    printf("node %d listening on %s\n", COMMIT, argv[1]);
    fflush(stdout);
    for (;;) {
        int c = accept(s, 0, 0);
        if (c < 0)
            continue;
        char buf[256];
        ssize_t n;
        while ((n = read(c, buf, sizeof buf)) > 0) {
            for (ssize_t i = 0; i < n; i++) {
                double x = 1.0;
                for (long k = 0; k < WORK; k++)
                    x = x * 1.0000001 + 1e-9;
                sink = x;
                fputs("{\"units\": 1}\n", metrics);
                fflush(metrics);
            }
        }
        close(c);
    }
}
