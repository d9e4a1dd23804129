/* Runs on the host: what a sandbox's process does before its program (bwrap) runs.

Built on the host (`musl-gcc -static`, else `cc -static`: termgym.sandbox._static) and
started by `termgym.sandbox._spawn.spawn` in place of the small programs it otherwise execs
one after another (a shell, prlimit, env, nsenter), each a start of its own:

    termgym-spawn [-c CGROUP_PROCS]... [-t TTY] [-n NPROC] [-N NETNS] [-U USERNS] -- PROGRAM ARG...

In this order, as those programs do: -c writes this process's pid into a `cgroup.procs`
file (it joins that cgroup; exit 125 if it cannot, as the shell did); -t opens TTY as its
stdin, which becomes its controlling terminal (it leads a session of its own and has none);
-n sets RLIMIT_NPROC, soft and hard; every signal's disposition is put back to its default
(what this process ignores, its program would inherit); -N joins the network namespace of
the file NETNS, then -U the user namespace of the file USERNS, as that namespace's root (no
supplementary groups, ids 0), as nsenter does; then PROGRAM runs (found on PATH, as nsenter
finds it). A step that fails says which on stderr and exits 125 (a missing program 127, one
that cannot run 126). Nothing here reads a file a sandbox can write.
*/

#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static void fail(const char *what, const char *path) {
    int code = errno;
    dprintf(2, "termgym-spawn: %s%s%s: %s\n", what, *path ? " " : "", path, strerror(code));
    _exit(125);
}

static unsigned long number(const char *text) {
    char *end = NULL;
    errno = 0;
    unsigned long value = strtoul(text, &end, 10);
    if (errno || end == text || *end) {
        errno = EINVAL;
        fail("not a number:", text);
    }
    return value;
}

static void join_cgroup(const char *procs) {
    char pid[32];
    int size = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    int fd = open(procs, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || write(fd, pid, (size_t)size) != size) fail("joining", procs);
    close(fd);
}

static void open_tty(const char *tty) {
    int fd = open(tty, O_RDWR); /* no O_NOCTTY: a session leader's first tty is its own */
    if (fd < 0) fail("opening", tty);
    if (fd != 0) {
        if (dup2(fd, 0) < 0) fail("opening", tty);
        close(fd);
    }
}

static void enter(const char *file, int type) {
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || setns(fd, type) != 0) fail("entering", file);
    close(fd);
}

int main(int argc, char **argv) {
    const char *tty = NULL, *netns = NULL, *userns = NULL, *nproc = NULL;
    int at = 1;
    for (; at < argc && strcmp(argv[at], "--") != 0; at += 2) {
        if (at + 1 >= argc || argv[at][0] != '-' || !argv[at][1] || argv[at][2]) {
            errno = EINVAL;
            fail("expected -c, -t, -n, -N or -U and a value, found", argv[at]);
        }
        const char *value = argv[at + 1];
        switch (argv[at][1]) {
        case 'c': join_cgroup(value); break;
        case 't': tty = value; break;
        case 'n': nproc = value; break;
        case 'N': netns = value; break;
        case 'U': userns = value; break;
        default: errno = EINVAL; fail("unknown step", argv[at]);
        }
    }
    if (at + 1 >= argc) {
        errno = EINVAL;
        fail("expected -- and a program", "");
    }
    if (tty) open_tty(tty);
    if (nproc) {
        struct rlimit limit = {number(nproc), number(nproc)};
        if (setrlimit(RLIMIT_NPROC, &limit) != 0) fail("limiting processes to", nproc);
    }
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++) sigaction(sig, &action, NULL); /* some are refused */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (netns) enter(netns, CLONE_NEWNET);
    if (userns) {
        enter(userns, CLONE_NEWUSER);
        if (setgroups(0, NULL) != 0 && errno != EPERM) fail("dropping groups in", userns);
        if (setgid(0) != 0 || setuid(0) != 0) fail("becoming root of", userns);
    }
    execvp(argv[at + 1], argv + at + 1);
    int code = errno == ENOENT ? 127 : 126;
    dprintf(2, "termgym-spawn: %s: %s\n", argv[at + 1], strerror(errno));
    _exit(code);
}
