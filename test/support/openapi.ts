// Reading the API's own OpenAPI document: its operations, and minimal valid values generated
// from its JSON schemas, so the security and fuzz tests cover every endpoint without a list.
import type { ApiHarness } from '../harness';

export type Schema = Record<string, any>;
export type Doc = {
  openapi: string;
  info: { title: string; version: string };
  paths: Record<string, Record<string, any>>;
  components: { schemas: Record<string, Schema> };
};

export interface Param {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: Schema;
}

export interface Operation {
  operationId: string;
  method: string;
  /** OpenAPI template, e.g. /meetings/{id}. */
  path: string;
  /** Accepted schemes as the app names them: bearer (user JWT), service. Empty = no auth. */
  schemes: ('bearer' | 'service')[];
  params: Param[];
  /** Required header Idempotency-Key. */
  idempotent: boolean;
  body?: { contentType: string; schema: Schema; required: boolean };
}

const SCHEME_NAMES: Record<string, 'bearer' | 'service'> = { bearerAuth: 'bearer', serviceAuth: 'service' };
const METHODS = ['get', 'put', 'post', 'patch', 'delete'];

export async function fetchDoc(api: ApiHarness): Promise<Doc> {
  const res = await api.request('GET', '/openapi.json');
  if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
  return res.body;
}

export function operations(doc: Doc): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const o = item[method];
      if (!o) continue;
      const schemes = (o.security ?? [])
        .flatMap((s: Record<string, unknown>) => Object.keys(s))
        .map((n: string) => {
          if (!SCHEME_NAMES[n]) throw new Error(`${o.operationId}: unknown security scheme ${n}`);
          return SCHEME_NAMES[n];
        });
      const params: Param[] = [...(item.parameters ?? []), ...(o.parameters ?? [])].map((p: any) => ({
        name: p.name,
        in: p.in,
        required: !!p.required,
        schema: p.schema ?? {},
      }));
      const content = o.requestBody?.content as Record<string, { schema?: Schema }> | undefined;
      const contentType = content ? Object.keys(content)[0] : undefined;
      ops.push({
        operationId: o.operationId ?? `${method} ${path}`,
        method: method.toUpperCase(),
        path,
        schemes,
        params,
        idempotent: params.some((p) => p.in === 'header' && p.name.toLowerCase() === 'idempotency-key' && p.required),
        body: contentType
          ? { contentType, schema: content![contentType].schema ?? {}, required: !!o.requestBody.required }
          : undefined,
      });
    }
  }
  return ops;
}

/** Follows $ref and folds allOf (used by the generator to add descriptions) into one schema. */
export function resolve(doc: Doc, schema: Schema): Schema {
  if (schema.$ref) {
    const name = String(schema.$ref).replace('#/components/schemas/', '');
    const target = doc.components.schemas[name];
    if (!target) throw new Error(`unresolvable ${schema.$ref}`);
    const { $ref: _r, ...rest } = schema;
    return resolve(doc, { ...target, ...rest });
  }
  if (schema.allOf) {
    const { allOf, ...rest } = schema;
    return Object.assign(rest, ...(allOf as Schema[]).map((s) => resolve(doc, s)));
  }
  return schema;
}

export function types(s: Schema): string[] {
  if (Array.isArray(s.type)) return s.type;
  if (s.type) return [s.type];
  if (s.enum) return [typeof s.enum[0]];
  return [];
}

/** Answers the value a uuid field refers to (a fixture id), or undefined when unknown. */
export type RefResolver = (field: string, siblings: Record<string, unknown>) => string | undefined;

export interface GenContext {
  doc: Doc;
  ref: RefResolver;
  /** Ids of the records the request addresses (path): a body never points at them (no self-reference). */
  exclude: Set<string>;
  /** Every member, optional ones too (richer bases for fuzzing). */
  full?: boolean;
}

let unique = 0;
/** A string no other generated value repeats (unique names such as display_name). */
export function uniqueText(prefix = 's'): string {
  return `${prefix}-${process.pid}-${++unique}`;
}

const isUuid = (s: Schema) =>
  s.format === 'uuid' || (types(s).includes('array') && s.items && s.items.format === 'uuid');

/**
 * A minimal valid value for a schema: required members, plus optional members that reference
 * other records (so "another user's id in the body" is exercised), the `*_type` member that
 * goes with such a reference, and one member when an object requires none (PATCH bodies).
 */
export function exampleFor(ctx: GenContext, raw: Schema, field = '', siblings: Record<string, unknown> = {}): unknown {
  const s = resolve(ctx.doc, raw);
  const t = types(s);
  if (t.includes('array') && s.items && resolve(ctx.doc, s.items).format === 'uuid') {
    const id = ctx.ref(field, siblings);
    return id && !ctx.exclude.has(id) ? [id] : [];
  }
  if (s.format === 'uuid') {
    const id = ctx.ref(field, siblings);
    if (id === undefined)
      throw new Error(
        `no fixture for the uuid field "${field}": add it to the reference map in test/support/fixtures.ts`,
      );
    return id;
  }
  if (s.example !== undefined) return s.example;
  if (s.enum) return s.enum[0];
  if (s.default !== undefined) return s.default;
  if (t.includes('object') || s.properties) return objectExample(ctx, s);
  if (t.includes('array')) {
    const n = s.minItems ?? 1;
    const items = resolve(ctx.doc, s.items ?? {});
    if (types(items).includes('number')) return Array.from({ length: n }, (_, i) => (i + 1) / n);
    return Array.from({ length: n }, () => exampleFor(ctx, items, field));
  }
  if (t.includes('string')) {
    if (s.format === 'date-time') return new Date().toISOString();
    if (s.format === 'date') return '2026-12-01';
    const v = uniqueText();
    return v.padEnd(s.minLength ?? 0, 'x').slice(0, s.maxLength ?? v.length);
  }
  if (t.includes('integer') || t.includes('number')) return s.minimum ?? 0;
  if (t.includes('boolean')) return true;
  if (t.includes('null')) return null;
  return []; // "any JSON value"
}

function objectExample(ctx: GenContext, s: Schema): Record<string, unknown> {
  const props: Record<string, Schema> = s.properties ?? {};
  const required = new Set<string>(s.required ?? []);
  const out: Record<string, unknown> = {};
  const wanted = Object.keys(props).filter((k) => ctx.full || required.has(k) || isUuid(resolve(ctx.doc, props[k])));
  // A reference like subject_id needs its subject_type beside it (and goes without it when absent).
  const companions = new Map<string, string>();
  for (const k of [...wanted]) {
    const typeKey = k.replace(/_id$/, '_type');
    if (typeKey !== k && props[typeKey] && !wanted.includes(typeKey)) {
      wanted.unshift(typeKey);
      if (!required.has(typeKey)) companions.set(k, typeKey);
    }
  }
  if (!wanted.length && Object.keys(props).length) wanted.push(Object.keys(props)[0]);
  for (const k of wanted) {
    const prop = resolve(ctx.doc, props[k]);
    if (!required.has(k) && prop.format === 'uuid') {
      const id = ctx.ref(k, out);
      if (id === undefined || ctx.exclude.has(id)) {
        if (companions.has(k)) delete out[companions.get(k)!];
        continue;
      }
    }
    out[k] = exampleFor(ctx, prop, k, out);
  }
  return out;
}

/** Fills an OpenAPI path template. */
export function fillPath(template: string, values: Record<string, string>): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => {
    if (values[name] === undefined) throw new Error(`no value for path parameter {${name}} of ${template}`);
    return encodeURIComponent(values[name]);
  });
}
