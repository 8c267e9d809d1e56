// Query parameters the repositories share: a jsonb value and the SET list of a PATCH.

/** A jsonb parameter: the value as JSON text, SQL NULL for null or undefined. */
export const jsonParam = (v: unknown) => (v === undefined || v === null ? null : JSON.stringify(v));

/**
 * The SET list of a PATCH: `field = $n` for each of `fields` present in `patch` (null or undefined
 * clears the column), its value appended to `params`, `jsonb` fields as JSON. Empty when nothing
 * is patched.
 */
export function patchSet<P extends object>(
  patch: P,
  fields: readonly (keyof P & string)[],
  params: unknown[],
  jsonb: readonly (keyof P & string)[] = [],
): string {
  const sets: string[] = [];
  for (const field of fields) {
    if (!(field in patch)) continue;
    params.push(jsonb.includes(field) ? jsonParam(patch[field]) : (patch[field] ?? null));
    sets.push(`${field} = $${params.length}`);
  }
  return sets.join(', ');
}
