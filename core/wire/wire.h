/*
 * wire.h — layer core/wire, the bytes on the wire: its whole interface.
 *
 * What it does: encodes and decodes the Elliptics wire format byte by byte,
 * bounds-checked (proto.h), builds packets in a growable buffer and reads
 * records with a bounds-checked cursor (buf.h), computes SHA-512, our
 * own, for key ids and data checksums (sha512.h), the one string hash,
 * FNV-1a (fnv.h), and a keyed polynomial hash that tells cheaply whether
 * bytes are still the ones hashed before (polyhash.h).
 * Main types: struct pohm_buf and struct pohm_rd (buf.h); struct pohm_cmd,
 * pohm_io_attr, pohm_id and the other wire structures (proto.h); struct
 * pohm_sha512.
 * Relies on: nothing but libc and the library's allocator; no system call.
 * Rules for callers: decoders return -EPROTO for a malformed packet and
 * never over-read; nothing is ever cast onto a buffer; buffer memory is the
 * library's, never hand it to the host.  Shared by the client and
 * pohmelfs-node.
 *
 * Parts (include this header, not them, from outside core/wire):
 * buf.h, fnv.h, polyhash.h, proto.h, sha512.h.
 */
#ifndef POHM_CORE_WIRE_H
#define POHM_CORE_WIRE_H

#include "buf.h"
#include "fnv.h"
#include "polyhash.h"
#include "proto.h"
#include "sha512.h"

#endif
