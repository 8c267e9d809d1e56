// A TCP proxy in front of the test database, to make it unreachable on demand: `hang()` cuts every
// open connection and accepts new ones without ever answering (a database that hangs), and
// `forward()` serves again.
import { connect, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  /** `url` with its host and port replaced by the proxy's. */
  url: string;
  hang(): void;
  forward(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  let hanging = false;
  const open = new Set<Socket>();
  const track = (s: Socket) => {
    open.add(s);
    s.on('close', () => open.delete(s)).on('error', () => s.destroy());
  };
  const server = createServer((client) => {
    track(client);
    if (hanging) return;
    const upstream = connect(Number(target.port), target.hostname);
    track(upstream);
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String((server.address() as AddressInfo).port);
  return {
    url: url.toString(),
    hang() {
      hanging = true;
      for (const s of open) s.destroy();
    },
    forward() {
      hanging = false;
      for (const s of open) s.destroy(); // the hung ones: their clients reconnect
    },
    close: () => {
      for (const s of open) s.destroy();
      return new Promise((r) => server.close(() => r()));
    },
  };
}
