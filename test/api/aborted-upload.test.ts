// A client that goes away mid-body is a client abort, logged at info, not an unhandled error;
// nothing of the partial body is stored.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startApi, type ApiHarness } from '../harness';

const lines: any[] = [];
let api: ApiHarness;
let alice: string;

beforeAll(async () => {
  api = await startApi(
    { LOG_LEVEL: 'info' },
    { logDestination: { write: (line: string) => void lines.push(JSON.parse(line)) } },
  );
  alice = await api.token('alice');
});
afterAll(() => api?.close());

/** Sends half of a declared body, then drops the connection. */
function abortMidBody(path: string, headers: Record<string, string>, declared: number): Promise<void> {
  return new Promise((resolve) => {
    const url = new URL(api.url + path);
    const req = http.request({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: 'PUT',
      headers: { ...headers, 'content-length': String(declared) },
    });
    req.on('error', () => resolve());
    // A slow peer: half the body, a pause, then gone.
    req.write(Buffer.alloc(declared / 2, 1), () => setTimeout(() => (req.destroy(), resolve()), 300));
  });
}

describe('a client gone mid-body', () => {
  it('should be logged at info as a client abort, with no error line and nothing stored', async () => {
    const m = await api.meeting(alice, 'upload');
    await abortMidBody(
      `/meetings/${m}/audio`,
      { authorization: `Bearer ${alice}`, 'content-type': 'audio/wav' },
      1_000_000,
    );
    await vi.waitFor(() => expect(lines.some((l) => l.message === 'client aborted the request')).toBe(true), {
      timeout: 20_000,
    });
    expect(lines.filter((l) => ['ERROR', 'CRITICAL'].includes(l.severity)).map((l) => l.message)).toEqual([]);
    expect(lines.find((l) => l.message === 'client aborted the request')).toMatchObject({
      severity: 'INFO',
      method: 'PUT',
      path: `/meetings/${m}/audio`,
    });
    expect((await api.request('GET', `/meetings/${m}/audio-url`, { token: alice })).status).toBe(404);
  });
});
