/* version.c - the C core's ABI version, checked by the Python wrapper at import. */
#include <stdint.h>

#include "gdev_core.h"

int gdev_core_version(void)
{
	return 1;
}
