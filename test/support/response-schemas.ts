// Every 2xx JSON body the tests receive is checked against the response schema its operation
// declares in /openapi.json: a handler whose answer drifts from the document fails the test that
// called it, whichever test that is.
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { Doc } from './openapi';

interface Route {
  method: string;
  pattern: RegExp;
  /** By status: the compiled schema of its application/json content. */
  schemas: Map<number, ValidateFunction>;
}

export type ResponseChecker = (method: string, path: string, status: number, body: unknown) => void;

export function responseChecker(doc: Doc): ResponseChecker {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  (addFormats as unknown as (a: Ajv2020) => void)(ajv);
  // Component references resolve against this schema.
  ajv.addSchema({ $id: 'doc', components: doc.components });
  const routes: Route[] = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    // /meetings/{id}/audio/{range}: each parameter is one path segment.
    const pattern = new RegExp(
      `^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{[^}]+\\?\}|\{[^}]+\}/g, '[^/]+')}$`,
    );
    for (const [method, op] of Object.entries(item as Record<string, any>)) {
      const schemas = new Map<number, ValidateFunction>();
      for (const [status, response] of Object.entries((op.responses ?? {}) as Record<string, any>)) {
        const schema = response.content?.['application/json']?.schema;
        if (!schema || !/^2\d\d$/.test(status)) continue;
        schemas.set(Number(status), ajv.compile(rebase(schema) as object));
      }
      routes.push({ method: method.toUpperCase(), pattern, schemas });
    }
  }
  // Literal paths win over templated ones (/people/me before /people/{id}).
  routes.sort(
    (a, b) => b.pattern.source.replace(/\[\^\/\]\+/g, '').length - a.pattern.source.replace(/\[\^\/\]\+/g, '').length,
  );

  return (method, path, status, body) => {
    if (status < 200 || status > 299 || body === undefined) return;
    const route = routes.find((r) => r.method === method.toUpperCase() && r.pattern.test(path.split('?')[0]));
    const validate = route?.schemas.get(status);
    if (!validate) return; // not a documented JSON answer (e.g. audio, exports, the document itself)
    if (!validate(body)) {
      const errors = (validate.errors ?? []).map((e) => `${e.instancePath || '(body)'} ${e.message}`).join('; ');
      throw new Error(`${method} ${path} answered ${status} with a body its OpenAPI schema rejects: ${errors}`);
    }
  };
}

/** `#/components/...` references point into the document's components (schema `doc`). */
function rebase(schema: unknown): unknown {
  return JSON.parse(JSON.stringify(schema).replace(/"\$ref":"#\/components\//g, '"$ref":"doc#/components/'));
}
