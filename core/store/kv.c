/*
 * kv.c — what every pohm_kv backend shares: the "absent" and "new" expect values and
 * the value destructor (kv.h).  Kept apart from the backends so the library
 * links without the in-memory test store.
 */
#include <stdlib.h>

#include "kv.h"

const uint8_t pohm_kv_absent[POHM_KV_CSUM] = {
	0x70, 0x6f, 0x68, 0x6d, 0x2d, 0x61, 0x62, 0x73, 0x65, 0x6e, 0x74, 0x21,	/* "pohm-absent!" */
};

const uint8_t pohm_kv_new[POHM_KV_CSUM] = {
	0x70, 0x6f, 0x68, 0x6d, 0x2d, 0x6e, 0x65, 0x77, 0x2d, 0x6b, 0x65, 0x79,	/* "pohm-new-key" */
};

void pohm_kv_val_free(struct pohm_kv_val *v)
{
	free(v->data);
	v->data = NULL;
	v->len = 0;
}
