/* The paced load of bisect's fixture: connects to the node's Unix socket and sends RATE
 * bytes a second (one unit of work each), evenly spaced, for SECONDS. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: load SOCKET RATE SECONDS\n");
        return 2;
    }
    double rate = atof(argv[2]), seconds = atof(argv[3]);
    struct sockaddr_un addr;
    memset(&addr, 0, sizeof addr);
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, argv[1], sizeof addr.sun_path - 1);
    int s = -1;
    for (int tries = 0; tries < 100; tries++) {
        s = socket(AF_UNIX, SOCK_STREAM, 0);
        if (connect(s, (struct sockaddr *)&addr, sizeof addr) == 0)
            break;
        close(s);
        s = -1;
        usleep(20000);
    }
    if (s < 0) {
        perror(argv[1]);
        return 1;
    }
    struct timespec start, next;
    clock_gettime(CLOCK_MONOTONIC, &start);
    long total = (long)(rate * seconds);
    for (long i = 0; i < total; i++) {
        double at = i / rate;
        next.tv_sec = start.tv_sec + (time_t)at;
        next.tv_nsec = start.tv_nsec + (long)((at - (long)at) * 1e9);
        if (next.tv_nsec >= 1000000000L) {
            next.tv_sec++;
            next.tv_nsec -= 1000000000L;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, 0);
        if (write(s, "u", 1) != 1)
            return 0;
    }
    return 0;
}
