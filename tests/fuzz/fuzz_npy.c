/*
 * fuzz_npy.c - libFuzzer target for the .npy reader: the bytes become an
 * in-memory file (memfd) read through the same path a user's file takes;
 * whatever it accepts is written back and read again, which must give the
 * same tensor.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fgrt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], err[FGRT_ERRLEN], tmp[] = "/tmp/fuzz_npy_XXXXXX";
	FgrtNpy t, back;
	int fd = memfd_create("fuzz.npy", 0);

	if (fd < 0 || write(fd, data, size) != (ssize_t)size) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	if (fgrt_npy_read(path, 1u << 26, &t, err) == 0) {
		if (mkdtemp(tmp)) {
			char out[128];
			snprintf(out, sizeof out, "%s/t.npy", tmp);
			if (fgrt_npy_write(out, &t, err) != 0 || fgrt_npy_read(out, 0, &back, err) != 0)
				abort();
			if (back.nbytes != t.nbytes || back.rank != t.rank || back.type != t.type ||
			    (t.nbytes && memcmp(back.data, t.data, t.nbytes) != 0))
				abort();
			fgrt_npy_free(&back);
			unlink(out);
			rmdir(tmp);
		}
		fgrt_npy_free(&t);
	}
	close(fd);
	return 0;
}
