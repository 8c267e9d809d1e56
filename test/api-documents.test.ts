// The API documents clients build on: /openapi.json passes Redocly's recommended rules and
// Spectral's spectral:oas without errors, every operation is described and tagged, and the
// WebSocket protocol's AsyncAPI document parses without errors and names every message.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Parser } from '@asyncapi/parser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EventBodySchemas } from '@mi/lib/events/catalogue';
import { buildDocument } from '../client/scripts/document';
import { asyncApiDocument } from '../run-services/live/asyncapi';
import { ServerMessageSchemas } from '../run-services/live/server-messages';
import { TAGS } from '../functions/api/docs';

const run = promisify(execFile);
const bin = (name: string) => path.resolve('node_modules/.bin', name);
let dir: string;
let doc: Record<string, any>;
let file: string;

beforeAll(async () => {
  doc = await buildDocument();
  dir = mkdtempSync(path.join(tmpdir(), 'api-docs-'));
  file = path.join(dir, 'openapi.json');
  writeFileSync(file, JSON.stringify(doc));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs a linter; its exit code is not the verdict (warnings exit non-zero too), its report is. */
async function lint(cmd: string, args: string[]): Promise<string> {
  const out = await run(cmd, args, { maxBuffer: 64 * 1024 * 1024 }).catch(
    (e: { stdout?: string; stderr?: string }) => ({ stdout: e.stdout ?? '', stderr: e.stderr ?? '' }),
  );
  return out.stdout;
}

describe('OpenAPI document', () => {
  it('should pass redocly lint with the recommended rules without errors', async () => {
    const report = JSON.parse(
      await lint(bin('redocly'), ['lint', file, '--extends', 'recommended', '--format', 'json']),
    ) as { problems: { severity: string; ruleId: string; message: string }[] };
    expect(report.problems.filter((p) => p.severity === 'error')).toEqual([]);
  }, 120_000);

  it("should pass Spectral's spectral:oas without errors", async () => {
    const report = JSON.parse(
      await lint(bin('spectral'), ['lint', file, '--ruleset', '.spectral.yaml', '--format', 'json', '--quiet']),
    ) as { severity: number; code: string; path: string[] }[];
    expect(report.filter((p) => p.severity === 0).map((p) => `${p.code} at ${p.path.join('.')}`)).toEqual([]);
  }, 120_000);

  it('should describe every operation and tag it with a documented tag', () => {
    const tags = new Set(TAGS.map((t) => t.name));
    expect(doc.tags.map((t: { name: string }) => t.name)).toEqual([...tags]);
    const ops = Object.values(doc.paths).flatMap((item: any) => Object.values(item)) as {
      operationId: string;
      description?: string;
      tags?: string[];
    }[];
    expect(ops.filter((o) => !o.description?.trim()).map((o) => o.operationId)).toEqual([]);
    expect(ops.filter((o) => !o.tags?.length || !o.tags.every((t) => tags.has(t))).map((o) => o.operationId)).toEqual(
      [],
    );
  });

  it('should close its tuples (items: false beside prefixItems)', () => {
    const open: string[] = [];
    const walk = (node: unknown, at: string) => {
      if (!node || typeof node !== 'object') return;
      const n = node as Record<string, unknown>;
      if (Array.isArray(n.prefixItems) && n.items !== false) open.push(at);
      for (const [k, v] of Object.entries(n)) walk(v, `${at}.${k}`);
    };
    walk(doc, '$');
    expect(open).toEqual([]);
  });
});

describe('AsyncAPI document', () => {
  const asyncapi = asyncApiDocument({ host: 'live.example.test', protocol: 'wss' });

  it('should parse with the AsyncAPI parser without errors', async () => {
    const { document, diagnostics } = await new Parser().parse(JSON.stringify(asyncapi));
    // Severity 0 is an error; warnings and hints do not make the document invalid.
    expect(
      diagnostics.filter((d) => d.severity === 0).map((d) => `${d.code}: ${d.message} at ${d.path.join('.')}`),
    ).toEqual([]);
    expect(document?.version()).toBe('3.0.0');
  });

  it('should name every client command, server message and event', () => {
    const names = Object.keys(asyncapi.channels.live.messages);
    expect(names).toEqual(
      expect.arrayContaining([
        'hello',
        'StartRecordingCommand',
        'ResumeRecordingCommand',
        'StopRecordingCommand',
        'AudioFrame',
        ...Object.keys(ServerMessageSchemas),
        ...Object.keys(EventBodySchemas),
      ]),
    );
  });
});
