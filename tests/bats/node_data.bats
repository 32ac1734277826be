#!/usr/bin/env bats
# node_data.bats — pohmelfs-node data commands against one node, checked
# against PROTOCOL.md §5 and §10: READ ranges, WRITE truncation, APPEND,
# zero-size writes, CAS, CAS_TIMESTAMP, PREPARE/PLAIN_WRITE/COMMIT,
# timestamps and user flags, checksums, DEL, BULK_READ, ITERATOR (issue 5).

setup() {
	load lib/cluster
	TMP=${BATS_TEST_TMPDIR:-$BATS_TMPDIR}
	cluster_start data --groups 1
}

teardown() {
	cluster_stop
}

c() { node_client 1-1 "$@"; }

# field NAME: the value of NAME=... in $output.
field() { grep -o "$1=[^ ]*" <<<"$output" | head -n 1 | cut -d= -f2; }

@test "write then read back; timestamp and user_flags stored verbatim (0 and all-ones)" {
	printf 'hello world' >"$TMP/v"
	run c --ts 0.0 --user-flags 0 put k "$TMP/v"
	[ "$status" -eq 0 ]
	[ "$(field size)" = 11 ]
	[ "$(field ts)" = 0.000000000 ]
	[ "$(field record_flags)" = 0x140 ]
	run c --ts 18446744073709551615.999999999 --user-flags 0xffffffffffffffff put k2 "$TMP/v"
	[ "$status" -eq 0 ]
	run c get k2
	[ "$status" -eq 0 ]
	[[ $output == *"ts=18446744073709551615.999999999 user_flags=0xffffffffffffffff"* ]]
	[[ $output == *"hello world"* ]]
	run c lookup k
	[ "$status" -eq 0 ]
	[ "$(field ts)" = 0.000000000 ]
	[ "$(field size)" = 11 ]
}

@test "READ: offset/size, size 0 = to the end, past the end -7, checksum of the range" {
	printf '0123456789' >"$TMP/v"
	c put k "$TMP/v" >/dev/null
	run c --offset 3 --size 4 get k
	[ "$status" -eq 0 ]
	[[ $output == *"size=4 offset=3 total_size=10"* ]]
	[[ $output == *3456 ]]
	run c --offset 8 get k
	[[ $output == *89 ]]
	run c --offset 5 --size 100 get k
	[[ $output == *"size=5 "* ]]
	run c --offset 10 get k
	[ "$status" -eq 7 ]
	run c --offset 2 --size 3 --csum get k
	[ "$status" -eq 0 ]
	[[ $output == *"checksum ok"* ]]
	want=$(printf '234' | sha512sum | cut -d' ' -f1)
	[ "$(field parent)" = "$want" ]
	run c get missing
	[ "$status" -eq 2 ]
}

@test "WRITE at an offset truncates to offset+size; APPEND counts from the end" {
	printf 'AAAAAAAAAA' >"$TMP/a"
	printf 'bb' >"$TMP/b"
	c put k "$TMP/a" >/dev/null
	run c --offset 4 put k "$TMP/b"
	[ "$(field size)" = 6 ]
	run c get k
	[[ $output == *AAAAbb ]]
	run c --append put k "$TMP/b"
	[ "$status" -eq 0 ]
	[ "$(field size)" = 2 ]		# §10.3: the chunk's offset+size
	run c lookup k
	[ "$(field size)" = 8 ]
	run c get k
	[[ $output == *AAAAbbbb ]]
	run c --append put newkey "$TMP/b"	# APPEND on a missing key = plain write
	[ "$status" -eq 0 ]
	run c get newkey
	[[ $output == *bb ]]
}

@test "a zero-size write fails -2 on a new key and changes nothing on an existing one" {
	: >"$TMP/empty"
	run c put newkey "$TMP/empty"
	[ "$status" -eq 2 ]
	run c lookup newkey
	[ "$status" -eq 2 ]
	printf 'data' >"$TMP/v"
	c put k "$TMP/v" >/dev/null
	run c put k "$TMP/empty"
	[ "$status" -eq 0 ]
	run c get k
	[[ $output == *data ]]
}

@test "CAS: matches sha512 of the data, -77 otherwise, a missing key passes" {
	printf 'v1' >"$TMP/v1"
	printf 'v2' >"$TMP/v2"
	run c --cas --parent-of "$TMP/v2" put k "$TMP/v1"	# missing key: passes
	[ "$status" -eq 0 ]
	run c --cas --parent-of "$TMP/v2" put k "$TMP/v2"	# stored is v1: mismatch
	[ "$status" -eq 77 ]
	run c --cas --parent-of "$TMP/v1" put k "$TMP/v2"
	[ "$status" -eq 0 ]
	run c get k
	[[ $output == *v2 ]]
	run c --checksum lookup k
	[ "$(field csum)" = "$(printf v2 | sha512sum | cut -d' ' -f1)" ]
	# A zero-length object compares equal to 64 zero bytes.
	: >"$TMP/empty"
	run c --prepare --plain --commit --num 0 put z "$TMP/empty"
	[ "$status" -eq 0 ]
	run c --cas --parent "$(printf '0%.0s' $(seq 128))" put z "$TMP/v1"
	[ "$status" -eq 0 ]
}

@test "CAS_TIMESTAMP: only a timestamp >= the stored one may write" {
	printf 'x' >"$TMP/v"
	run c --cas-ts --ts 100.5 put k "$TMP/v"
	[ "$status" -eq 0 ]
	run c --cas-ts --ts 100.4 put k "$TMP/v"
	[ "$status" -eq 77 ]
	run c --cas-ts --ts 100.5 put k "$TMP/v"
	[ "$status" -eq 0 ]
	run c --cas-ts --ts 101.0 put k "$TMP/v"
	[ "$status" -eq 0 ]
	run c lookup k
	[ "$(field ts)" = 101.000000000 ]
}

@test "PREPARE/PLAIN_WRITE/COMMIT: invisible until commit, hides the old object, -7 beyond the reservation" {
	printf 'old' >"$TMP/old"
	printf 'AAAA' >"$TMP/a"
	printf 'BBBB' >"$TMP/b"
	c put k "$TMP/old" >/dev/null
	run c --prepare --plain --num 8 put k "$TMP/a"
	[ "$status" -eq 0 ]
	[ "$(field size)" = 0 ]
	[ "$(field record_flags)" = 0x1c0 ]
	run c get k
	[ "$status" -eq 2 ]
	run c lookup k
	[ "$status" -eq 2 ]
	run c --plain --commit --offset 4 --num 8 put k "$TMP/b"
	[ "$status" -eq 0 ]
	[ "$(field size)" = 8 ]
	run c get k
	[[ $output == *AAAABBBB ]]
	# PLAIN_WRITE on a committed record is refused.
	run c --plain --offset 0 put k "$TMP/a"
	[ "$status" -eq 1 ]
	# COMMIT beyond the reservation: -7 and the record stays invisible.
	c --prepare --plain --num 4 put k2 "$TMP/a" >/dev/null
	run c --plain --commit --offset 4 --num 100 put k2 "$TMP/b"
	[ "$status" -eq 7 ]
	run c get k2
	[ "$status" -eq 2 ]
}

@test "COMMIT's chunk CRCs noted as pieces land: unaligned, overlapping, rewritten pieces and a hole read back whole" {
	# 600 KiB in 64 KiB record chunks; chunks 6-7 are never written (zeros).
	total=614400
	: >"$TMP/want"
	truncate -s $total "$TMP/want"
	# piece OFFSET SIZE FLAGS...: random bytes at OFFSET, sent and put into want.
	piece() {
		local off=$1 size=$2
		shift 2
		head -c "$size" /dev/urandom >"$TMP/p"
		dd if="$TMP/p" of="$TMP/want" bs=1 seek="$off" conv=notrunc status=none
		c "$@" --offset "$off" --num $total put k "$TMP/p" >/dev/null
	}
	piece 0 65536 --prepare --plain
	piece 196608 131072 --plain		# chunks 3-4 whole
	piece 100000 50000 --plain		# inside chunk 1, a partial chunk 2
	piece 141072 200000 --plain		# enters chunk 2 mid-way, rewrites 3-4, part of 5
	piece 0 65536 --plain			# chunk 0 again, other bytes
	piece 540000 74400 --plain --commit	# inside chunk 8, the short last chunk 9
	c --csum --out "$TMP/back" get k
	cmp "$TMP/want" "$TMP/back"
	run c --csum lookup k
	[ "$status" -eq 0 ]
	[ "$(field size)" = $total ]
}

@test "an empty object: LOOKUP -2, READ size 0, READ with checksum -29" {
	: >"$TMP/empty"
	run c --prepare --plain --commit --num 0 put z "$TMP/empty"
	[ "$status" -eq 0 ]
	run c lookup z
	[ "$status" -eq 2 ]
	run c get z
	[ "$status" -eq 0 ]
	[[ $output == *"size=0 offset=0 total_size=0"* ]]
	run c --csum get z
	[ "$status" -eq 29 ]
}

@test "WRITE reply: file info with CHECKSUM, bare ack with WRITE_NO_FILE_INFO" {
	printf 'payload' >"$TMP/v"
	run c --checksum put k "$TMP/v"
	[ "$status" -eq 0 ]
	[ "$(field csum)" = "$(printf payload | sha512sum | cut -d' ' -f1)" ]
	[[ $(field path) == blob/data-0.* ]]	# the blob file, as eblob reports it
	run c --no-file-info put k "$TMP/v"
	[ "$status" -eq 0 ]
	[ "$output" = ack ]
}

@test "DEL: 0 then -2; without NEED_ACK a success sends nothing" {
	printf 'v' >"$TMP/v"
	c put k "$TMP/v" >/dev/null
	run c del k
	[ "$status" -eq 0 ]
	run c del k
	[ "$status" -eq 2 ]
	c put k "$TMP/v" >/dev/null
	run c --noack del k
	[ "$status" -eq 0 ]
	run c lookup k
	[ "$status" -eq 2 ]
}

@test "BULK_READ: a reply per found key, an error ack per missing key, then the final ack" {
	printf 'one' >"$TMP/1"
	printf 'two' >"$TMP/2"
	c put a "$TMP/1" >/dev/null
	c put b "$TMP/2" >/dev/null
	run c bulk-get a missing b
	[ "$status" -eq 0 ]
	[ "$(grep -c 'status=0 flags=0x20a.*size=' <<<"$output")" -eq 2 ]
	[[ $output == *"data=one"* ]]
	[[ $output == *"data=two"* ]]
	[ "$(grep -c 'status=-2 flags=0x20a' <<<"$output")" -eq 1 ]
	[ "$(tail -n 1 <<<"$output")" = "$(grep 'status=0 flags=0x208' <<<"$output")" ]
}

@test "ITERATOR: every key once with size and timestamp, data on request, then an ack" {
	for i in 1 2 3 4 5; do
		printf "value$i" >"$TMP/v"
		c --ts "$i.0" put "it-$i" "$TMP/v" >/dev/null
	done
	run c iterate
	[ "$status" -eq 0 ]
	[ "$(grep -c '^key ' <<<"$output")" -eq 5 ]
	[ "$(grep -c 'status=0 size=6 .*total=5 data=0' <<<"$output")" -eq 5 ]
	run c --ioflags 1 iterate
	[ "$(grep -c 'data=6' <<<"$output")" -eq 5 ]
	[[ $(tail -n 1 <<<"$output") == *"flags=0x208 size=0"* ]]
}

@test "STATUS with the RO bit makes writes fail -30; clearing it restores them" {
	printf 'v' >"$TMP/v"
	printf '\xff\xff\xff\xff\x02\x00\x00\x00\xff\xff\xff\xff' >"$TMP/ro"
	printf '\xff\xff\xff\xff\x00\x00\x00\x00\xff\xff\xff\xff' >"$TMP/rw"
	run c cmd 13 "$TMP/ro"
	[ "$status" -eq 0 ]
	run c put k "$TMP/v"
	[ "$status" -eq 30 ]
	run c del k
	[ "$status" -eq 30 ]
	run c cmd 13 "$TMP/rw"
	run c put k "$TMP/v"
	[ "$status" -eq 0 ]
}

@test "a 64 MiB object in one packet round-trips with its checksum" {
	head -c $((64 << 20)) /dev/urandom >"$TMP/big"
	run c put big "$TMP/big"
	[ "$status" -eq 0 ]
	c --csum --out "$TMP/back" get big 2>/dev/null
	cmp "$TMP/big" "$TMP/back"
	c --offset $((40 << 20)) --size 4096 --out "$TMP/piece" get big 2>/dev/null
	cmp "$TMP/piece" <(tail -c +$(((40 << 20) + 1)) "$TMP/big" | head -c 4096)
}

@test "offsets beyond the object size limit get -27 (EFBIG) and leave the record intact" {
	printf 'keep me' >"$TMP/v"
	c put k "$TMP/v" >/dev/null
	run c --append --offset 18446744073709551600 put k "$TMP/v"
	[ "$status" -eq 27 ]
	run c --offset 1099511627776 put k "$TMP/v"
	[ "$status" -eq 27 ]
	run c --csum get k
	[ "$status" -eq 0 ]
	[[ $output == *"keep me" ]]
}

@test "the record CRC's fast path (three lanes of the crc32 instruction) equals the portable table" {
	run "$NODE_BIN" --self-test
	[ "$status" -eq 0 ]
	[[ $output == "crc32c: ok"* ]]
	[[ $output == *"index: ok"* ]]	# the store's hash index against a plain array
}
