// A TCP proxy in front of a live instance, so a test can cut the network under a client (every
// WebSocket's sockets destroyed, as a lost Wi-Fi would) and point the same URL at a restarted
// instance. Bytes pass through untouched: the client talks to the real service.
import net from 'node:net';
import type { AddressInfo } from 'node:net';

export interface TcpProxy {
  url: string;
  wsUrl: string;
  /** Where new connections go (http://127.0.0.1:port of an instance). */
  target: string;
  /** Destroys every proxied WebSocket connection (HTTP connections stay). */
  dropWebSockets(): number;
  close(): Promise<void>;
}

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const sockets = new Set<{ client: net.Socket; upstream: net.Socket; ws: boolean }>();
  const proxy: TcpProxy = {
    url: '',
    wsUrl: '',
    target,
    dropWebSockets() {
      let n = 0;
      for (const p of sockets) if (p.ws) p.client.destroy(), p.upstream.destroy(), n++;
      return n;
    },
    close: () =>
      new Promise((r) => {
        for (const p of sockets) p.client.destroy(), p.upstream.destroy();
        server.close(() => r());
      }),
  };
  const server = net.createServer((client) => {
    const port = Number(new URL(proxy.target).port);
    const upstream = net.connect(port, '127.0.0.1');
    const pair = { client, upstream, ws: false };
    sockets.add(pair);
    client.once('data', (first: Buffer) => (pair.ws = /^GET \/ws[ ?]/.test(first.toString('latin1', 0, 16))));
    client.pipe(upstream).pipe(client);
    const end = () => {
      sockets.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.wsUrl = `${proxy.url.replace('http', 'ws')}/ws`;
  return proxy;
}
