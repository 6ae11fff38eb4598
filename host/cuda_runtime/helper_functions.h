/* The CUDA samples' helper_functions.h: their programs include it for helpers this
 * machine's programs do not need; it brings the standard headers they expect. */
#ifndef QWENGPU_HELPER_FUNCTIONS_H
#define QWENGPU_HELPER_FUNCTIONS_H
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#endif
