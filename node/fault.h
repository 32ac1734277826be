/*
 * fault.h — fault injection switched at run time through the file
 * DIR/faults (DIR = --data).  The file is re-read whenever it changes
 * (checked at most once a millisecond, on request arrival).  One directive
 * per line, '#' starts a comment; a missing or empty file means no faults:
 *
 *   drop              close the connection instead of answering any request
 *   hang              read requests but never answer them
 *   delay MS          wait MS milliseconds before answering each request
 *   refuse-writes     WRITE and DEL fail with -EROFS (-30)
 *   corrupt all|HEX   READ replies carry flipped data bytes for every key, or
 *                     for keys whose id starts with HEX; io.parent (the
 *                     IO CHECKSUM) still covers the true data, so a client
 *                     that checks sums detects it
 *   corrupt-disk HEX  flip one stored data byte of each record whose id starts
 *                     with HEX (once: a record already corrupt is left alone),
 *                     so the node itself answers -84 (EILSEQ)
 *
 * Write the file atomically (temp file + rename) to avoid a half-read file.
 */
#ifndef POHM_NODE_FAULT_H
#define POHM_NODE_FAULT_H

#include <stdint.h>

struct node_faults;
struct node_store;

/* What applies to one request. */
struct node_fault_state {
	int drop;
	int hang;
	int refuse_writes;
	unsigned delay_ms;
	int corrupt;			/* some "corrupt" rule exists */
};

/* Watch dir/faults; corrupt-disk rules act on store. NULL on ENOMEM. */
struct node_faults *node_faults_new(const char *dir, struct node_store *store);
void node_faults_free(struct node_faults *f);
/* The current faults (re-reading the file if it changed). */
void node_faults_get(struct node_faults *f, struct node_fault_state *st);
/* 1 if a "corrupt" rule covers this 64-byte id. */
int node_faults_corrupts(struct node_faults *f, const uint8_t *id);

#endif
