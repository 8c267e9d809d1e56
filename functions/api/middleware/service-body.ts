// Bodies the ML service sends ignore fields the core does not know, so the ML can ship a field
// before the core reads it; a user's body stays strict, an unknown field answered 422 (decisions.md
// section 8). One rule, added by op() to every operation that takes service credentials and a JSON
// body: for a service principal, the keys its (strict) schema does not declare are dropped before
// the route's validator reads the body.
import type { MiddlewareHandler } from 'hono';
import type { z } from 'zod';
import type { AppEnv } from '../env';

/** The parts of a zod 4 schema's definition the walk reads. */
interface Def {
  type: string;
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  element?: z.ZodType;
  innerType?: z.ZodType;
  in?: z.ZodType;
}

const defOf = (schema: z.ZodType) => (schema as unknown as { _zod: { def: Def } })._zod.def;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Deletes, in place, the keys that strict objects of `schema` do not declare; true when any went. */
export function dropUnknownKeys(schema: z.ZodType, value: unknown): boolean {
  const def = defOf(schema);
  if (def.type === 'object') {
    if (!isRecord(value)) return false;
    const strict = def.catchall !== undefined && defOf(def.catchall).type === 'never';
    let dropped = false;
    for (const key of Object.keys(value)) {
      const field = def.shape![key];
      if (field) dropped = dropUnknownKeys(field, value[key]) || dropped;
      else if (strict) dropped = delete value[key];
    }
    return dropped;
  }
  if (def.type === 'array') {
    if (!Array.isArray(value) || !['object', 'array'].includes(defOf(def.element!).type)) return false;
    return value.reduce((dropped: boolean, item) => dropUnknownKeys(def.element!, item) || dropped, false);
  }
  // optional, nullable, default, readonly, …: their inner schema; a pipe: its input.
  const inner = def.innerType ?? def.in;
  return inner ? dropUnknownKeys(inner, value) : false;
}

export function ignoreUnknownFieldsOfService(schema: z.ZodType): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    if (c.var.principal.kind !== 'service') return next();
    let body: unknown;
    try {
      body = await c.req.json();
    } catch {
      return next(); // not JSON: the validator answers it
    }
    // The validator parses the body again from Hono's cached text (a promise, though typed as a string).
    if (dropUnknownKeys(schema, body))
      (c.req.bodyCache as { text?: Promise<string> }).text = Promise.resolve(JSON.stringify(body));
    return next();
  };
}
