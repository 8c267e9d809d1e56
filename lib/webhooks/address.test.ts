import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkWebhookUrl, isPublicAddress, type Resolve } from './address';
import { sendWebhook } from './send';

const SECRET = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
const resolvesTo =
  (...addresses: string[]): Resolve =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

describe('webhook addresses', () => {
  it('should accept only public unicast addresses', () => {
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111']) expect(isPublicAddress(a), a).toBe(true);
    const refused = [
      '127.0.0.1',
      '10.1.2.3',
      '172.16.0.1',
      '192.168.1.1',
      '169.254.169.254',
      '100.64.0.1',
      '0.0.0.0',
      '255.255.255.255',
      '224.0.0.1',
      '::1',
      '::',
      'fe80::1',
      'fd00:ec2::254',
      '::ffff:10.0.0.1',
      '::ffff:127.0.0.1',
      'not-an-ip',
    ];
    for (const a of refused) expect(isPublicAddress(a), a).toBe(false);
  });

  it('should refuse in production what is not https or resolves to a private, loopback, link-local or metadata address', async () => {
    await expect(
      checkWebhookUrl('https://hooks.example.com/x', 'production', resolvesTo('93.184.216.34')),
    ).resolves.toBeUndefined();
    const cases: [string, Resolve][] = [
      ['http://hooks.example.com/x', resolvesTo('93.184.216.34')],
      ['http://localhost:8080/x', resolvesTo('127.0.0.1')],
      ['https://localhost/x', resolvesTo('127.0.0.1')],
      ['https://metadata.google.internal/x', resolvesTo('169.254.169.254')],
      ['https://169.254.169.254/x', resolvesTo()],
      ['https://[::1]/x', resolvesTo()],
      ['https://internal.example.com/x', resolvesTo('93.184.216.34', '10.0.0.5')], // any private answer refuses
      ['https://nowhere.invalid/x', async () => Promise.reject(new Error('ENOTFOUND'))],
    ];
    for (const [url, resolve] of cases) {
      const err = await checkWebhookUrl(url, 'staging', resolve).then(
        () => null,
        (e) => e,
      );
      expect(err?.code, url).toBe('unprocessable');
      expect(err.errors[0].path).toBe('url');
    }
  });

  it('should allow http only to localhost and 127.0.0.1 in development and test, without address checks', async () => {
    for (const env of ['development', 'test'] as const) {
      await expect(checkWebhookUrl('http://localhost:9/x', env)).resolves.toBeUndefined();
      await expect(checkWebhookUrl('http://127.0.0.1:9/x', env)).resolves.toBeUndefined();
      await expect(checkWebhookUrl('http://example.com/x', env)).rejects.toMatchObject({ code: 'unprocessable' });
    }
  });
});

describe('sending', () => {
  let server: Server;
  let hits = 0;
  let url = '';
  let answer: (res: import('node:http').ServerResponse) => void = (res) => res.writeHead(200).end();
  beforeAll(async () => {
    server = createServer((req, res) => {
      hits++;
      req.resume();
      answer(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  });
  afterAll(() => new Promise((r) => server.close(r)));

  it('should check the address again at delivery: a host rebound to a private address gets no request', async () => {
    hits = 0;
    const target = { url: 'https://rebinding.example.com/hook', secret: SECRET };
    const result = await sendWebhook(
      target,
      { id: 'msg_1', body: '{}' },
      { env: 'production', resolve: resolvesTo('127.0.0.1') },
    );
    expect(result).toMatchObject({ status_code: null, error: expect.stringMatching(/resolves to 127\.0\.0\.1/) });
    const literal = await sendWebhook(
      { url: url.replace('http:', 'https:'), secret: SECRET },
      { id: 'msg_2', body: '{}' },
      { env: 'production', resolve: resolvesTo() },
    );
    expect(literal.error).toMatch(/private, loopback/);
    expect(hits).toBe(0);
  });

  it('should not follow redirects: a 3xx is the answer, and a failure', async () => {
    answer = (res) => res.writeHead(307, { location: 'http://169.254.169.254/' }).end();
    hits = 0;
    const result = await sendWebhook(
      { url, secret: SECRET },
      { id: 'msg_3', body: '{}' },
      { env: 'test', resolve: resolvesTo() },
    );
    expect(result).toMatchObject({ status_code: 307, error: null });
    expect(hits).toBe(1);
  });

  it('should read at most 64 KiB of an endless answer', async () => {
    let written = 0;
    answer = (res) => {
      res.writeHead(200);
      const chunk = Buffer.alloc(16 * 1024, 97);
      const more = () => {
        while (!res.destroyed && res.write(chunk)) written += chunk.length;
        if (!res.destroyed) res.once('drain', more);
      };
      more();
    };
    const result = await sendWebhook(
      { url, secret: SECRET },
      { id: 'msg_4', body: '{}' },
      { env: 'test', resolve: resolvesTo() },
    );
    expect(result).toMatchObject({ status_code: 200, error: null });
    expect(written).toBeLessThan(16 * 1024 * 1024);
  });
});
