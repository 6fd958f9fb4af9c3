/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Helpers shared by the unit suites (tests/unit/helpers.c is linked into
 * every test_*.c executable; see tests/README.md):
 *  - th_run: runs a Check suite (each test forked) and says how many failed;
 *  - th_sh: a shell command's exit status;
 *  - th_pod_json, th_node_json: objects decoded from JSON in the test;
 *  - live containers (suites that need root and cgroups): th_need_root_cgroups
 *    (exit 77 if not), th_live_setup (a private root dir with a busybox rootfs
 *    and a private cgroup parent, named in th_root, th_rootfs, th_cgparent),
 *    th_base_config (a runnable rt_container_config), th_wait_exit (the exit
 *    fd, no sleeps) and th_sweep (what a failed test left: containers,
 *    processes, the cgroup parent, the root dir).
 */
#ifndef CUBELET_TESTS_UNIT_HELPERS_H
#define CUBELET_TESTS_UNIT_HELPERS_H

#include <check.h>
#include <stddef.h>

#include "agent/k8s/k8s.h"
#include "runtime/container.h"

/* Runs SUITE, each test forked (unless CK_FORK=no is in the environment);
 * returns the number of failed tests. */
int th_run(Suite *suite);

/* A pod (a node) decoded from JSON TEXT; asserts that it parses and decodes. */
struct k8s_pod *th_pod_json(const char *text);
struct k8s_node *th_node_json(const char *text);

/* system() of the formatted command: its exit status, -1 if it was killed. */
int th_sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- live containers ---- */
extern char th_root[256];    /* --root-dir of the runtime: /tmp/cubelet-TAG-<pid> */
extern char th_rootfs[300];  /* th_root/rootfs: busybox-static, /etc/passwd, /etc/group */
extern char th_cgparent[64]; /* the cgroup parent: cubelet-TAGtest-<pid> */

/* 0 when root with cgroups; else prints "NAME: ..., skipping" and returns 77. */
int th_need_root_cgroups(const char *name);
/* Names and makes th_root (with logs/), th_rootfs and th_cgparent for TAG;
 * 0, or -1 after printing why (as NAME) and sweeping. */
int th_live_setup(const char *name, const char *tag);
/* A config for container ID running ARGV in th_rootfs: the runtime's default
 * capabilities and seccomp, no_new_privs, cgroup th_cgparent/ID, the log
 * th_root/logs/ID.log, cwd "/", PATH and HOME in the environment, hostname
 * "ctest". The cgroup and log path live in static buffers (one config at a
 * time). */
void th_base_config(struct rt_container_config *c, const char *id, const char *const *argv);
/* Waits up to TIMEOUT_MS on ID's exit fd; asserts it exited and fills ST. */
void th_wait_exit(const char *id, struct rt_container_state *st, int timeout_ms);
/* Kills and removes every container under th_root, the processes in
 * th_cgparent, the cgroup parent itself and th_root. */
void th_sweep(void);

#endif
