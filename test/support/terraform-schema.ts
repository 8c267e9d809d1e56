// The Google provider's schema, as @cdktf/provider-google carries it: its jsii assembly describes,
// for every resource and data source of the provider version it was generated from, each argument
// (its Terraform name is the anchor of the registry link in its docs), whether it is required,
// and which nested blocks it has. `terraform init` cannot download the provider here, so the
// Terraform is checked against this instead: resource types, argument and block names, required
// arguments.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

interface JsiiType {
  fqn?: string;
  primitive?: string;
  collection?: { kind: 'array' | 'map'; elementtype: JsiiType };
  union?: { types: JsiiType[] };
}
interface JsiiProperty {
  name: string;
  optional?: boolean;
  type: JsiiType;
  docs?: { remarks?: string; summary?: string };
}
interface JsiiStruct {
  fqn: string;
  name: string;
  datatype?: boolean;
  interfaces?: string[];
  properties?: JsiiProperty[];
}

export interface Argument {
  required: boolean;
  /** The nested block's schema when the argument is a block. */
  block?: () => BlockSchema;
}
export type BlockSchema = Map<string, Argument>;

export interface ProviderSchema {
  /** The provider version the bindings were generated from (from the registry links). */
  version: string;
  resources: Map<string, BlockSchema>;
  dataSources: Map<string, BlockSchema>;
}

const META_ARGUMENTS = new Set([
  'count',
  'for_each',
  'depends_on',
  'lifecycle',
  'provider',
  'provisioner',
  'connection',
]);
const LINK =
  /registry\.terraform\.io\/providers\/hashicorp\/google\/([\d.]+)\/docs\/(resources|data-sources)\/(\w+)#(\w+)/;
const snake = (camel: string) => camel.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The struct a property's type names when it is a block (one, or a list of them). */
function blockFqn(t: JsiiType): string | undefined {
  if (t.fqn && !t.fqn.startsWith('cdktf.')) return t.fqn;
  if (t.collection?.kind === 'array') return blockFqn(t.collection.elementtype);
  return t.union?.types.map(blockFqn).find(Boolean);
}

export function loadProviderSchema(): ProviderSchema {
  const require = createRequire(import.meta.url);
  const assembly = JSON.parse(
    readFileSync(join(dirname(require.resolve('@cdktf/provider-google')), '..', '.jsii'), 'utf8'),
  );
  const types: Record<string, JsiiStruct> = assembly.types;
  const cache = new Map<string, BlockSchema>();
  const schemaOf = (fqn: string): BlockSchema => {
    let schema = cache.get(fqn);
    if (schema) return schema;
    schema = new Map();
    cache.set(fqn, schema);
    for (const p of types[fqn]?.properties ?? []) {
      const name = LINK.exec(p.docs?.remarks ?? '')?.[4] ?? snake(p.name);
      const nested = blockFqn(p.type);
      schema.set(name, {
        required: !p.optional,
        ...(nested && types[nested]?.datatype ? { block: () => schemaOf(nested) } : {}),
      });
    }
    return schema;
  };
  const resources = new Map<string, BlockSchema>();
  const dataSources = new Map<string, BlockSchema>();
  let version = '';
  for (const t of Object.values(types)) {
    // A resource's or data source's configuration: `<Class>Config`, with Terraform's meta-arguments.
    if (!t.datatype || !t.name.endsWith('Config') || !t.interfaces?.includes('cdktf.TerraformMetaArguments')) continue;
    const link = t.properties?.map((p) => LINK.exec(p.docs?.remarks ?? '')).find(Boolean);
    if (!link) continue;
    version = link[1];
    (link[2] === 'resources' ? resources : dataSources).set(`google_${link[3]}`, schemaOf(t.fqn));
  }
  return { version, resources, dataSources };
}

type Obj = Record<string, unknown>;
const isBlockList = (v: unknown): v is Obj[] =>
  Array.isArray(v) && v.every((x) => x && typeof x === 'object' && !Array.isArray(x));

/** Problems of one block body (as @cdktf/hcl2json parses it) against its schema. */
function checkBlock(where: string, body: Obj, schema: BlockSchema, problems: string[], topLevel: boolean): void {
  const dynamic = (body.dynamic ?? {}) as Record<string, Obj[]>;
  for (const [key, value] of Object.entries(body)) {
    if (key === 'dynamic' || (topLevel && META_ARGUMENTS.has(key))) continue;
    const arg = schema.get(key);
    if (!arg) {
      problems.push(`${where}: unknown argument or block "${key}"`);
      continue;
    }
    if (arg.block && isBlockList(value)) {
      for (const b of value) checkBlock(`${where}.${key}`, b, arg.block!(), problems, false);
    }
  }
  for (const [key, generators] of Object.entries(dynamic)) {
    const arg = schema.get(key);
    if (!arg?.block) {
      problems.push(`${where}: dynamic "${key}" is not a block of this schema`);
      continue;
    }
    for (const g of generators) {
      for (const content of (g.content as Obj[] | undefined) ?? [])
        checkBlock(`${where}.${key}`, content, arg.block(), problems, false);
    }
  }
  for (const [key, arg] of schema) {
    if (arg.required && !(key in body) && !(key in dynamic))
      problems.push(`${where}: missing required argument "${key}"`);
  }
}

/**
 * Problems of a parsed Terraform module (its `resource` and `data` blocks) against the provider
 * schema. Types of other providers (random, …) are not this schema's to judge.
 */
export function checkModule(file: string, hcl: Obj, schema: ProviderSchema): string[] {
  const problems: string[] = [];
  for (const [kind, known] of [
    ['resource', schema.resources],
    ['data', schema.dataSources],
  ] as const) {
    for (const [type, byName] of Object.entries((hcl[kind] ?? {}) as Record<string, Record<string, Obj[]>>)) {
      if (!type.startsWith('google_')) continue;
      const blockSchema = known.get(type);
      for (const [name, bodies] of Object.entries(byName)) {
        const where = `${file}: ${kind === 'data' ? 'data.' : ''}${type}.${name}`;
        if (!blockSchema) problems.push(`${where}: the google provider ${schema.version} has no ${kind} type ${type}`);
        else for (const body of bodies) checkBlock(where, body, blockSchema, problems, true);
      }
    }
  }
  return problems;
}
