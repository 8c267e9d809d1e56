// The witness: the core's REST API passed through on a port of the kit's, so that the kit sees what
// the ML sent the core and what the core answered. With the ML's core URL pointed at it, a failing
// row quotes the core's refusal (status, problem type, detail) instead of only missing its effect,
// and the segment checks see every segment the ML posted, also those the core refused.
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface WitnessedCall {
  method: string;
  /** Path and query, as the ML sent them. */
  path: string;
  status: number;
  /** The request's JSON body, when it had one. */
  body: unknown;
  /** problem+json answers: `type: detail`. */
  problem: string | null;
}

export interface Witness {
  url: string;
  /** The core the calls go to (settable: a test may start the witness before its core). */
  coreUrl: string;
  calls(): WitnessedCall[];
  close(): Promise<void>;
}

// Not passed on: hop-by-hop headers, and the encoding (fetch decodes the core's answer).
const HOP_BY_HOP = ['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'host', 'content-length'];
const ENCODING = ['accept-encoding', 'content-encoding'];
const dropped = (name: string) => HOP_BY_HOP.includes(name) || ENCODING.includes(name);

function forwardable(headers: IncomingHttpHeaders): Headers {
  const out = new Headers();
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || dropped(name)) continue;
    for (const v of Array.isArray(value) ? value : [value]) out.append(name, v);
  }
  return out;
}

function parse(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

/** How a reply reads in a row: `422 …/validation: segments.0.end_ms: …` (or the body's start). */
export function describeReply(status: number, body: unknown): string {
  const p = body as { type?: unknown; title?: unknown; detail?: unknown } | null;
  if (p && typeof p === 'object' && (p.type || p.detail)) {
    return `${status} ${String(p.type ?? p.title ?? '')}: ${String(p.detail ?? p.title ?? '')}`;
  }
  return `${status} ${JSON.stringify(body ?? '')?.slice(0, 200)}`;
}

export async function startWitness(coreUrl: string, port = 0): Promise<Witness> {
  const calls: WitnessedCall[] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const payload = Buffer.concat(chunks);
    const path = req.url ?? '/';
    try {
      const method = req.method ?? 'GET';
      const upstream = await fetch(`${witness.coreUrl.replace(/\/$/, '')}${path}`, {
        method,
        headers: forwardable(req.headers),
        body: payload.length && method !== 'GET' && method !== 'HEAD' ? payload : undefined,
        redirect: 'manual',
      });
      const answer = Buffer.from(await upstream.arrayBuffer());
      const problem = upstream.headers.get('content-type')?.includes('problem+json')
        ? describeReply(upstream.status, parse(answer.toString('utf8'))).replace(/^\d+ /, '')
        : null;
      calls.push({ method, path, status: upstream.status, body: parse(payload.toString('utf8')), problem });
      const headers = Object.fromEntries([...upstream.headers].filter(([n]) => !dropped(n)));
      res.writeHead(upstream.status, headers).end(answer);
    } catch (err) {
      res.writeHead(502, { 'content-type': 'text/plain' }).end(`the witness could not reach the core: ${err}`);
    }
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const witness: Witness = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    coreUrl,
    calls: () => [...calls],
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
  return witness;
}
