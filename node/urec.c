/*
 * urec.c — the .u record header (urec.h), decoded with the pohm_rd cursor.
 */
#include "urec.h"

#include <errno.h>
#include <string.h>

#include "wire.h"
#include "crc32c.h"

#define UREC_MAGIC	"PohmRec\1"

/* See urec.h. */
void urec_hdr_encode(uint8_t *out, const struct urec_hdr *h)
{
	memset(out, 0, UREC_HDR);
	memcpy(out, UREC_MAGIC, 8);
	pohm_st32(out + 8, 1);
	pohm_st32(out + 12, UREC_HDR);
	pohm_st64(out + 16, h->flags);
	pohm_st64(out + 24, h->size);
	pohm_st64(out + 32, h->tsec);
	pohm_st64(out + 40, h->tnsec);
	pohm_st64(out + 48, h->user_flags);
	pohm_st64(out + 56, h->reserve);
	pohm_st32(out + 64, h->chunk);
	pohm_st32(out + 120, node_crc32c(0, out, 120));
}

/* See urec.h. */
int urec_hdr_decode(struct urec_hdr *h, const uint8_t *p, size_t n, uint64_t max_size)
{
	struct pohm_rd r = pohm_rd_make(p, n);
	const uint8_t *magic = pohm_rd_take(&r, 8);
	uint32_t version = pohm_rd_u32(&r), hsize = pohm_rd_u32(&r);

	memset(h, 0, sizeof(*h));
	h->flags = pohm_rd_u64(&r);
	h->size = pohm_rd_u64(&r);
	h->tsec = pohm_rd_u64(&r);
	h->tnsec = pohm_rd_u64(&r);
	h->user_flags = pohm_rd_u64(&r);
	h->reserve = pohm_rd_u64(&r);
	h->chunk = pohm_rd_u32(&r);
	pohm_rd_take(&r, 120 - 68);	/* reserved */
	if (r.err || memcmp(magic, UREC_MAGIC, 8) || version != 1 || hsize != UREC_HDR ||
	    pohm_rd_u32(&r) != node_crc32c(0, p, 120) || !pohm_rd_take(&r, 4))
		return -EILSEQ;
	if (!h->chunk || h->size > max_size)
		return -EILSEQ;
	return 0;
}
