/* termgym's model-gateway relay: inside an agent's sandbox, 127.0.0.1:PORT relayed to the
 * gateway's unix socket (termgym/sandbox/_gateway.py; docs/security.md, "The model gateway").
 *
 *   relay PORT SOCKET [-- PROGRAM ARG...]
 *
 * Binds 127.0.0.1:PORT in the calling process's network namespace. Where it could, a
 * daemon (detached: its own session, stdio on /dev/null, no other descriptor) accepts
 * connections there and relays each, in a process of its own, to the unix socket SOCKET.
 * Then PROGRAM runs in this process (exec), whether or not the port was free: a relay
 * already listening there (an earlier shell's, on docker) serves it as well.
 *
 * It holds no secret and can reach nothing but SOCKET: the agent may kill it or bind the
 * port itself, and gains nothing by it (the gateway checks every request's token).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_all(int fd, const char *buf, ssize_t len) {
    while (len > 0) {
        ssize_t done = write(fd, buf, (size_t)len);
        if (done < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        buf += done;
        len -= done;
    }
    return 0;
}

/* Copy both ways until both sides have ended; an end on one side is passed on as a
 * half-close on the other. */
static void pump(int a, int b) {
    char buf[65536];
    int open_a = 1, open_b = 1;
    while (open_a || open_b) {
        struct pollfd fds[2] = {{a, open_a ? POLLIN : 0, 0}, {b, open_b ? POLLIN : 0, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            return;
        }
        for (int i = 0; i < 2; i++) {
            int from = i ? b : a, to = i ? a : b;
            if (!fds[i].revents) continue;
            ssize_t got = read(from, buf, sizeof buf);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) {
                shutdown(to, SHUT_WR);
                if (i) open_b = 0; else open_a = 0;
                continue;
            }
            if (write_all(to, buf, got) < 0) return;
        }
    }
}

static void serve(int listener, const char *path) {
    struct sockaddr_un target;
    memset(&target, 0, sizeof target);
    target.sun_family = AF_UNIX;
    strncpy(target.sun_path, path, sizeof target.sun_path - 1);
    for (;;) {
        int client = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
        if (client < 0) {
            if (errno != EINTR && errno != ECONNABORTED) usleep(10000);
            continue;
        }
        int one = 1; /* what the gateway wrote goes on at once: no wait for the agent's ack */
        setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pid_t child = fork();
        if (child == 0) {
            close(listener);
            int up = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
            if (up >= 0 && connect(up, (struct sockaddr *)&target, sizeof target) == 0)
                pump(client, up);
            _exit(0);
        }
        close(client);
    }
}

static int listen_on(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(fd, 64) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static void daemonize(int listener, const char *path) {
    pid_t first = fork();
    if (first < 0) return;
    if (first > 0) {
        waitpid(first, NULL, 0);
        return;
    }
    setsid();
    if (fork() != 0) _exit(0); /* the relay is reparented to the sandbox's init */
    int null = open("/dev/null", O_RDWR);
    for (int fd = 0; fd < 3; fd++) dup2(null, fd);
    int keep = dup2(listener, 3);
    long most = sysconf(_SC_OPEN_MAX);
    if (most < 0 || most > 65536) most = 65536;
    for (int fd = 4; fd < most; fd++) close(fd);
    signal(SIGCHLD, SIG_IGN); /* connection processes are reaped by the kernel */
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    serve(keep, path);
    _exit(0);
}

int main(int argc, char **argv) {
    if (argc < 3 || (argc > 3 && strcmp(argv[3], "--") != 0)) {
        fprintf(stderr, "usage: %s PORT SOCKET [-- PROGRAM ARG...]\n", argv[0]);
        return 2;
    }
    int port = atoi(argv[1]);
    if (port <= 0 || port > 65535 || strlen(argv[2]) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        fprintf(stderr, "%s: expected a port (1-65535) and a socket path\n", argv[0]);
        return 2;
    }
    int listener = listen_on(port);
    if (listener >= 0) {
        daemonize(listener, argv[2]);
        close(listener);
    }
    if (argc > 4) {
        execvp(argv[4], argv + 4);
        fprintf(stderr, "%s: cannot run %s: %s\n", argv[0], argv[4], strerror(errno));
        return 127;
    }
    return listener >= 0 ? 0 : 1;
}
