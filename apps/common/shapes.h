/* The grid shapes of the darray thesis's routing study (section 5.2.1), shared by
 * darray_bench and scale_model: six dimensions whose product is P, named by how
 * their sizes run, and its locality route (a hypercube between nodes). */
#ifndef COURIER_APPS_SHAPES_H
#define COURIER_APPS_SHAPES_H

#include <stddef.h>

/* The names app_shape_spec knows: increase, decrease, hourglass, inverse-hourglass,
 * locality. */
extern const char *const app_shape_names[];

/* Writes the grid route of shape `name` for p ranks ("grid:2x2x2x4x8x16" for
 * increase at 4096) into spec. At P = 4096 the thesis's shapes: increase
 * 2x2x2x4x8x16, decrease its reverse, hourglass 8x4x2x2x4x8, inverse-hourglass
 * 2x4x8x8x4x2 (the thesis names it without sizes; this is its mirror of the
 * hourglass). For another power of two 2^e (e >= 6) each dimension's exponent is
 * the thesis's scaled by e/12, rounded so that they add up to e, each at least 1.
 * Returns 0, or -1 with a one-line reason in spec if p is not a power of two of at
 * least 64 or the name is unknown. locality: a hypercube between groups of 16
 * consecutive ranks, then one exchange within the group ("grid:2x2x2x2x2x2x2x2x16"
 * at 4096; the thesis's groups divide its 48-core nodes), for a power of two of at
 * least 32. */
int app_shape_spec(const char *name, int p, char *spec, size_t len);

#endif
