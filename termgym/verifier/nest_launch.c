/* Runs inside the verifier: starts one program of the agent's in its nest (termgym_nest).

Built on the host (`musl-gcc -static`, else `cc -static`: termgym.grading) and copied into
each verifier's grading folder as `termgym_nest_launch` (root's, 0700) beside the Python it
stands in for:
`Nest.entry`, the preexec function that joins the nest in a fork of the grader's
interpreter. `termgym_agentexec` starts this program instead where it can, through
`subprocess` without a preexec function (so by vfork: no copy of an interpreter that
imported pytest), executed by descriptor (`/proc/self/fd/N`: no grading path on a command
line):

    termgym-nest-launch USER MNT PID UID CWD CAPS FILTER ERR CLOSE -- PROGRAM ARG...

USER, MNT and PID are descriptors of the nest's user, mount and pid (for children)
namespaces; UID the id the program runs as; CWD its folder, resolved in the nest; CAPS the
capabilities root of the nest keeps ("-": none, else numbers joined by commas; only for
UID 0); FILTER a descriptor of the seccomp program (struct sock_filter[], read with pread;
-1: none); ERR the write end of a pipe that tells the grader why the program did not start
("nest ERRNO what" or "exec ERRNO"), closed on a successful exec; CLOSE descriptors to
close before the exec (comma-separated: this program's own, the ones above).

What it does is what `Nest.entry` does, in the same order: join the three namespaces,
change into CWD, fork; the child drops to UID (no supplementary groups; root keeps only
CAPS), dies with its parent (and leaves at once if the parent is already gone), is first
in line for the out-of-memory killer, applies the filter (no_new_privs) and executes the
program. The parent stays outside the nest as the program's proxy: it closes every
descriptor, passes on the signals it is sent, and ends as the program ended (its exit
status, or the same signal). Nothing here reads a file of the agent's: its arguments and
descriptors come from the grading's root processes, made before any program ran in the nest.

    termgym-nest-init init

is the nest's pid 1 (`termgym_nest._init`, which it stands in for where the maker can start
it: by posix_spawn, so the init is no copy of an interpreter that imported pytest). It makes
itself non-dumpable, closes every descriptor, sets every signal to its default, starts a
session of its own and reaps what the nest's programs leave until it is killed. It holds
no capability (its exec, by an id unmapped in the nest, dropped them) and reads nothing.

    termgym-nest-init make SOCK

is the nest's maker (`termgym_nest.Nest._make`, which it stands in for where the nest has
no root to pivot into: started by posix_spawn, so the maker is no copy of an interpreter
either). SOCK is its end of a SOCK_SEQPACKET pair whose other end the runner holds. It makes
itself non-dumpable and closes every other descriptor but stdio, makes a user namespace and
says "u" and its pid (as /proc names it) on SOCK; the runner maps its ids and answers "m"
and the layout, worked out in the runner (`termgym_nest._layout`): steps "KIND FLAGS
PATH", each followed by a NUL. It makes the mount, pid, IPC and UTS namespaces, makes its
mounts private and takes the steps in order: B binds PATH onto itself (recursively), C
holds a detached copy of the folder PATH (`open_tree`; none where the kernel cannot) and
covers it with an empty read-only tmpfs, R remounts PATH read-only keeping the mount flags
FLAGS (a mount gone or not one is let be), S mounts a fresh tmpfs at PATH (/dev/shm).
Then it forks the nest's init (pid 1, as the init mode) and sends "p", the init's pid, a
space and one character per C step ("1" held, "0" not), with descriptors of its user,
mount and pid (for children) namespaces and of each copy held; or "e" and why it failed.

    termgym-nest-read read UID MODE LIMIT PATH

reads a file of the agent's as the agent's user (`termgym_agentexec.look_as_agent`, in
place of a fork of the runner that becomes that user): it closes every descriptor but its
stdio, drops to UID (no supplementary groups), and is non-dumpable. MODE 1 or 2: PATH is
first stat'ed, and exit status 3 says it does not exist for UID; MODE 2 stops there
(status 0). MODE 0 and 1 then open it (a folder is refused with EISDIR, as Python's open
refuses one) and copy at most LIMIT bytes of it to stdout. A failure exits with status 4
and its errno, in decimal, on stderr (126 if the ids could not be dropped).
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
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <stdint.h>
#include <unistd.h>

/* The kernel's structures this needs (linux/capability.h, linux/filter.h, linux/seccomp.h),
   spelled out: a C library's own headers (musl's, which make the program small) are then
   enough to build it. */
struct cap_header { uint32_t version; int pid; };
struct cap_data { uint32_t effective, permitted, inheritable; };
#define CAPABILITY_VERSION_3 0x20080522
struct filter_op { uint16_t code; uint8_t jt, jf; uint32_t k; };
struct filter_program { unsigned short len; struct filter_op *filter; };
#define MODE_FILTER 2
#ifndef PR_SET_NO_NEW_PRIVS
#define PR_SET_NO_NEW_PRIVS 38
#endif
#ifndef PR_SET_SECCOMP
#define PR_SET_SECCOMP 22
#endif

#ifndef PR_CAP_AMBIENT
#define PR_CAP_AMBIENT 47
#define PR_CAP_AMBIENT_CLEAR_ALL 4
#endif

static const int FORWARDED[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1,
                                SIGUSR2, SIGALRM, SIGCONT, SIGWINCH};
static pid_t child = 0;
static int err_fd = -1;

static void say(const char *kind, int code, const char *what) {
    char line[512];
    int n = snprintf(line, sizeof line, "%s %d %s", kind, code, what);
    if (err_fd >= 0 && n > 0) {
        ssize_t ignored = write(err_fd, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1));
        (void)ignored;
    }
}

static void fail(const char *what) {
    say("nest", errno, what);
    _exit(126);
}

static long number(const char *text, const char *what) {
    char *end = NULL;
    errno = 0;
    long value = strtol(text, &end, 10);
    if (errno || end == text || *end) {
        errno = EINVAL;
        fail(what);
    }
    return value;
}

static void forward(int signum) {
    if (child > 0) kill(child, signum);
}

static void keep_only(const char *caps) {
    unsigned long long mask = 0;
    if (strcmp(caps, "-") != 0) {
        char *copy = strdup(caps);
        for (char *part = strtok(copy, ","); part; part = strtok(NULL, ","))
            mask |= 1ULL << number(part, "a capability");
        free(copy);
    }
    int last = 40;
    FILE *file = fopen("/proc/sys/kernel/cap_last_cap", "r");
    if (file) {
        if (fscanf(file, "%d", &last) != 1) last = 40;
        fclose(file);
    }
    for (int cap = 0; cap <= last; cap++)
        if (!(mask & (1ULL << cap)) && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0)
            fail("dropping a capability");
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct cap_header header = {CAPABILITY_VERSION_3, 0};
    struct cap_data data[2];
    memset(data, 0, sizeof data);
    data[0].effective = data[0].permitted = (unsigned)(mask & 0xffffffffULL);
    data[1].effective = data[1].permitted = (unsigned)(mask >> 32);
    if (syscall(SYS_capset, &header, data) != 0) fail("capset");
}

static void apply_filter(int fd) {
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size <= 0 || st.st_size % 8 || st.st_size > 65536 * 8) {
        errno = EINVAL;
        fail("the seccomp program");
    }
    struct filter_op *code = malloc((size_t)st.st_size);
    if (!code || pread(fd, code, (size_t)st.st_size, 0) != st.st_size) fail("reading the seccomp program");
    struct filter_program prog = {(unsigned short)(st.st_size / 8), code};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail("no_new_privs");
    if (prctl(PR_SET_SECCOMP, MODE_FILTER, &prog, 0, 0) != 0) fail("seccomp");
}

static void close_listed(const char *list) {
    if (strcmp(list, "-") == 0) return;
    char *copy = strdup(list);
    for (char *part = strtok(copy, ","); part; part = strtok(NULL, ","))
        close((int)number(part, "a descriptor to close"));
    free(copy);
}

static void close_from(int first) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)first, ~0U, 0U) == 0) return;
#endif
    for (int fd = first; fd < 65536; fd++) close(fd);
}

static void proxy(void) {
    close_from(0);
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = forward;
    for (size_t i = 0; i < sizeof FORWARDED / sizeof FORWARDED[0]; i++)
        sigaction(FORWARDED[i], &action, NULL);
    int status = 0;
    for (;;) {
        pid_t got = waitpid(child, &status, 0);
        if (got == child) break;
        if (got < 0 && errno == EINTR) continue;
        status = (128 + SIGKILL) << 8;  /* gone without a status: as killed */
        break;
    }
    if (WIFSIGNALED(status)) {
        int ended = WTERMSIG(status);
        if (ended != SIGKILL && ended != SIGSTOP) {
            signal(ended, SIG_DFL);
            sigset_t set;
            sigemptyset(&set);
            sigaddset(&set, ended);
            sigprocmask(SIG_UNBLOCK, &set, NULL);
        }
        kill(getpid(), ended);
    }
    _exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

static _Noreturn void init(void) {
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    close_from(0);
    for (int signum = 1; signum < NSIG; signum++) signal(signum, SIG_DFL);
    setsid();
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_SETMASK, &set, NULL);
    for (;;) {
        while (waitpid(-1, NULL, WNOHANG) > 0) {
        }
        int got = 0;
        sigwait(&set, &got);  /* an orphan joined, or a child ended */
    }
}

/* The maker (make mode, the comment at the top). */
#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef SYS_open_tree
#define SYS_open_tree 428
#endif
#define MAX_HELD 64
#define STEPS_SIZE (1 << 20)

static int maker_sock = -1;

static _Noreturn void make_failed(const char *what, const char *path) {
    char line[1024];
    int code = errno;
    int n = snprintf(line, sizeof line, "e[Errno %d] %s%s%s: %s", code, what, path ? " " : "",
                     path ? path : "", strerror(code));
    if (n > 0) send(maker_sock, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1), 0);
    _exit(1);
}

static void make_mount(const char *source, const char *target, const char *type,
                       unsigned long flags, const char *data, const char *what) {
    if (mount(source, target, type, flags, data) != 0) make_failed(what, target);
}

static _Noreturn void make(char **argv) {
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    int sock = (int)number(argv[2], "the maker's socket");
    if (sock != 3) {
        if (dup2(sock, 3) != 3) _exit(126);
        close(sock);
    }
    maker_sock = 3;
    close_from(4);
    if (unshare(CLONE_NEWUSER) != 0) make_failed("unshare(user)", NULL);
    char self[64], line[80];
    ssize_t got = readlink("/proc/self", self, sizeof self - 1);
    if (got <= 0) make_failed("readlink /proc/self", NULL);
    self[got] = 0;
    int n = snprintf(line, sizeof line, "u%s\n", self);
    if (send(maker_sock, line, (size_t)n, 0) != n) _exit(1);
    char *steps = malloc(STEPS_SIZE + 1);
    if (!steps) _exit(1);
    struct iovec part = {steps, STEPS_SIZE};
    struct msghdr message;
    memset(&message, 0, sizeof message);
    message.msg_iov = &part;
    message.msg_iovlen = 1;
    ssize_t size = recvmsg(maker_sock, &message, 0);
    if (size < 1 || steps[0] != 'm') _exit(0);  /* the runner gave up */
    if (message.msg_flags & MSG_TRUNC) {
        errno = E2BIG;
        make_failed("the nest's layout", NULL);
    }
    steps[size] = 0;
    if (unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS) != 0)
        make_failed("unshare(mount, pid, ipc, uts)", NULL);
    make_mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL, "mount");
    int fds[3 + MAX_HELD];
    char marks[MAX_HELD + 1];
    int held = 0, covers = 0;
    for (char *step = steps + 1; step < steps + size; step += strlen(step) + 1) {
        char kind = step[0];
        char *end = NULL;
        if (!kind || step[1] != ' ') {
            errno = EINVAL;
            make_failed("a step of the layout", step);
        }
        unsigned long flags = strtoul(step + 2, &end, 10);
        if (!end || *end != ' ') {
            errno = EINVAL;
            make_failed("a step of the layout", step);
        }
        const char *path = end + 1;
        if (kind == 'B') {
            make_mount(path, path, NULL, MS_BIND | MS_REC, NULL, "mount (bind)");
        } else if (kind == 'C') {
            if (covers >= MAX_HELD) {
                errno = E2BIG;
                make_failed("the folders to cover", path);
            }
            long tree = syscall(SYS_open_tree, AT_FDCWD, path,
                                OPEN_TREE_CLONE | AT_RECURSIVE | O_CLOEXEC);
            marks[covers++] = tree >= 0 ? '1' : '0';  /* no new mount API: nothing held */
            if (tree >= 0) fds[3 + held++] = (int)tree;
            make_mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_RDONLY,
                       "size=64k,mode=0755", "mount tmpfs on");
        } else if (kind == 'R') {
            if (mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | flags, NULL) != 0 &&
                errno != EINVAL && errno != ENOENT && errno != EACCES)
                make_failed("mount (read-only)", path);
        } else if (kind == 'S') {
            make_mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777",
                       "mount tmpfs on");
        } else {
            errno = EINVAL;
            make_failed("a step of the layout", step);
        }
    }
    marks[covers] = 0;
    pid_t first = fork();
    if (first < 0) make_failed("fork", NULL);
    if (first == 0) init();
    static const char *const kinds[] = {"/proc/self/ns/user", "/proc/self/ns/mnt",
                                        "/proc/self/ns/pid_for_children"};
    for (int i = 0; i < 3; i++) {
        fds[i] = open(kinds[i], O_RDONLY | O_CLOEXEC);
        if (fds[i] < 0) make_failed("open", kinds[i]);
    }
    char status[128];
    n = snprintf(status, sizeof status, "p%d %s", (int)first, marks);
    struct iovec out = {status, (size_t)n};
    union {
        char buffer[CMSG_SPACE(sizeof fds)];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr reply;
    memset(&reply, 0, sizeof reply);
    reply.msg_iov = &out;
    reply.msg_iovlen = 1;
    reply.msg_control = control.buffer;
    reply.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)(3 + held));
    struct cmsghdr *rights = CMSG_FIRSTHDR(&reply);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)(3 + held));
    memcpy(CMSG_DATA(rights), fds, sizeof(int) * (size_t)(3 + held));
    if (sendmsg(maker_sock, &reply, 0) != n) _exit(1);
    _exit(0);
}

static _Noreturn void failed(int code) {
    char line[32];
    int n = snprintf(line, sizeof line, "%d", errno);
    if (n > 0) {
        ssize_t ignored = write(2, line, (size_t)n);
        (void)ignored;
    }
    _exit(code);
}

static void write_all(const char *data, size_t size) {
    while (size > 0) {
        ssize_t n = write(1, data, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) failed(4);
        data += n;
        size -= (size_t)n;
    }
}

static _Noreturn void read_as(char **argv) {
    close_from(3);
    uid_t uid = (uid_t)number(argv[2], "the user id");  /* exits 126 on a bad number */
    long mode = number(argv[3], "the mode");
    long left = number(argv[4], "the limit");
    if (setgroups(0, NULL) != 0) failed(126);
    if (setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) != 0) failed(126);
    if (setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0) failed(126);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    const char *path = argv[5];
    struct stat st;
    if (mode != 0 && stat(path, &st) != 0) _exit(3);
    if (mode == 2) _exit(0);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) failed(4);
    if (fstat(fd, &st) != 0) failed(4);
    if (S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        failed(4);
    }
    static char buffer[65536];
    while (left > 0) {
        ssize_t n = read(fd, buffer, left < (long)sizeof buffer ? (size_t)left : sizeof buffer);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) failed(4);
        if (n == 0) break;
        write_all(buffer, (size_t)n);
        left -= n;
    }
    _exit(0);
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "init") == 0) init();
    if (argc == 6 && strcmp(argv[1], "read") == 0) read_as(argv);
    if (argc == 3 && strcmp(argv[1], "make") == 0) make(argv);
    if (argc < 12 || strcmp(argv[10], "--") != 0) {
        fprintf(stderr, "termgym: the nest launcher expected USER MNT PID UID CWD CAPS FILTER ERR CLOSE -- PROGRAM...\n");
        return 126;
    }
    err_fd = (int)number(argv[8], "the error descriptor");
    int user = (int)number(argv[1], "the user namespace");
    int mnt = (int)number(argv[2], "the mount namespace");
    int pid = (int)number(argv[3], "the pid namespace");
    uid_t uid = (uid_t)number(argv[4], "the user id");
    const char *cwd = argv[5], *caps = argv[6];
    int filter = (int)number(argv[7], "the seccomp program");
    if (setns(user, CLONE_NEWUSER) != 0) fail("setns(user)");
    if (setns(mnt, CLONE_NEWNS) != 0) fail("setns(mnt)");
    if (setns(pid, CLONE_NEWPID) != 0) fail("setns(pid)");
    if (chdir(cwd) != 0) fail("chdir");
    child = fork();
    if (child < 0) fail("fork");
    if (child > 0) proxy();
    close(user);
    close(mnt);
    close(pid);
    close_listed(argv[9]);
    if (setgroups(0, NULL) != 0) fail("setgroups");
    if (setresgid(uid, uid, uid) != 0) fail("setresgid");
    if (setresuid(uid, uid, uid) != 0) fail("setresuid");
    if (uid == 0) keep_only(caps);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) fail("pdeathsig");
    if (getppid() == 1) _exit(128 + SIGKILL);  /* the proxy (outside: 0) is gone already */
    int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (oom >= 0) {
        ssize_t ignored = write(oom, "1000", 4);
        (void)ignored;
        close(oom);
    }
    if (filter >= 0) {
        apply_filter(filter);
        close(filter);
    }
    if (fcntl(err_fd, F_SETFD, FD_CLOEXEC) != 0) fail("the error descriptor");
    execvp(argv[11], argv + 11);
    say("exec", errno, argv[11]);
    _exit(127);
}
