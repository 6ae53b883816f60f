/*
 * report.h - what the report's files share (compiler/report.c: the text
 * and JSON reports; report_dot.c: the Graphviz picture; report_plans.c:
 * one value explained, two plans compared, a binary's timings read back):
 * the plan being reported with its names and readers, and the helpers
 * that put its facts into words.
 */
#ifndef FG_REPORT_H
#define FG_REPORT_H

#include <stdio.h>

#include "fg.h"

typedef struct Report {
	FILE *f;
	const FgPlan *plan;
	const FgGraph *g;
	const char **names;     /* per node */
	int *owner;             /* per group: the group whose kernels it runs,
				   or -1 (fg_cuda_kernel_owners) */
	int owners;             /* groups that run kernels of their own */
	int kernels;            /* groups with kernels */
	int *readers;           /* per node: the groups reading it across a
				   boundary (count_readers) */
} Report;

/* Which groups hold each node: a node may be recomputed in several. */
typedef struct Members {
	int *first;             /* per node: its slice of `group` */
	int *group;
} Members;

/* The plan to report into f; kernels: ask the CUDA backend which groups
 * share kernels. */
Report report_open(FILE *f, const FgPlan *plan, int kernels);
/* Which groups hold each node (a node may be recomputed in several). */
Members members_of(const FgPlan *plan);
int is_member(const Members *m, int gi, int id);
/* Names and numbers in words. */
const char *graph_name(const FgGraph *g);
const char *kind_name(FgGroupKind k);
const char *reason_name(FgReason why);
char *human_bytes(char *buf, size_t n, int64_t b);    /* 32.0 MiB */
char *loc_str(char *buf, size_t n, FgLoc loc);        /* 12:7 */
/* s on one line: control characters as spaces. */
void put_oneline(FILE *f, const char *s);
/* The op as the text report shows it: a constant with its value. */
const char *op_label(char *buf, size_t n, const FgNode *node);
/* The name a merged value had, or its op where it had none. */
const char *merged_name(const FgMerged *m);
/* The length of the valid UTF-8 sequence at s, or 0. */
int utf8_len(const unsigned char *s);

#endif
