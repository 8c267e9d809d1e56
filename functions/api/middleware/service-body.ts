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

const SCALARS = new Set(['number', 'string', 'boolean', 'bigint', 'enum', 'literal', 'any', 'unknown']);

/** Deletes, in place, the keys that strict objects of `schema` do not declare. */
export function dropUnknownKeys(schema: z.ZodType, value: unknown): void {
  const def = defOf(schema);
  if (def.type === 'object') {
    if (!isRecord(value)) return;
    const strict = def.catchall !== undefined && defOf(def.catchall).type === 'never';
    for (const key of Object.keys(value)) {
      // Own keys only: a body's "__proto__" must not find Object.prototype in the shape.
      const field = Object.hasOwn(def.shape!, key) ? def.shape![key] : undefined;
      if (field) dropUnknownKeys(field, value[key]);
      else if (strict) delete value[key];
    }
  } else if (def.type === 'array') {
    // Arrays of scalars (an embedding's 192 numbers) hold no keys.
    if (!Array.isArray(value) || SCALARS.has(defOf(def.element!).type)) return;
    for (const item of value) dropUnknownKeys(def.element!, item);
  } else {
    // optional, nullable, default, readonly, …: their inner schema; a pipe: its input.
    const inner = def.innerType ?? def.in;
    if (inner) dropUnknownKeys(inner, value);
  }
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
    dropUnknownKeys(schema, body);
    // The route's validator reads the body through c.req.json(): it gets this object (parsed once,
    // a bulk write's megabytes included), not a second parse of the text as sent.
    c.req.json = async <T>() => body as T;
    return next();
  };
}
