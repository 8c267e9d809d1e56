// A real webhook receiver for tests: an HTTP server that verifies every request's signature with
// the Standard Webhooks specification's own library and records what it got. It can answer with a
// status, hang (never answer), or be down (not listening) for a while, on the same port.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { sleep } from '@mi/lib/async';

export interface Received {
  id: string;
  body: any;
  verified: boolean;
  status: number;
  /** The request as sent, to verify it again with other secrets. */
  raw: string;
  headers: Record<string, string>;
}

export type Mode = { status: number } | 'hang';

export class Receiver {
  readonly received: Received[] = [];
  /** Requests being answered now, and the most there ever were at once. */
  inFlight = 0;
  maxInFlight = 0;
  /** Requests held unanswered now (mode 'hang'), and the most there ever were at once. */
  hanging = 0;
  maxHanging = 0;
  mode: Mode = { status: 200 };
  /** Milliseconds before answering. */
  delayMs = 0;
  /** Requests answered 500 before `mode` applies (a receiver that recovers, however fast retries come). */
  failures = 0;
  private server: Server | null = null;
  private port = 0;

  /** `secret` gives the signing secret of the webhook that posts to a path. */
  constructor(private readonly secret: (path: string) => string) {}

  get url() {
    return `http://127.0.0.1:${this.port}/hook`;
  }

  /** The webhook-ids answered with a 2xx, in arrival order. */
  ids() {
    return this.received.filter((r) => r.status < 300).map((r) => r.id);
  }

  async start(): Promise<this> {
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', async () => {
        this.inFlight++;
        this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
        const text = Buffer.concat(chunks).toString('utf8');
        let verified = true;
        try {
          new Webhook(this.secret(req.url ?? '/')).verify(text, req.headers as Record<string, string>);
        } catch {
          verified = false;
        }
        if (this.delayMs) await sleep(this.delayMs);
        this.inFlight--;
        const mode = this.failures > 0 ? (this.failures--, { status: 500 }) : this.mode;
        if (mode === 'hang') {
          // Never answered; the sender's timeout or stop() closes the connection.
          this.hanging++;
          this.maxHanging = Math.max(this.maxHanging, this.hanging);
          res.on('close', () => this.hanging--);
          return;
        }
        this.received.push({
          id: String(req.headers['webhook-id']),
          body: JSON.parse(text),
          verified,
          status: mode.status,
          raw: text,
          headers: req.headers as Record<string, string>,
        });
        res.writeHead(mode.status).end('ok');
      });
    });
    await new Promise<void>((resolve) => server.listen(this.port, '127.0.0.1', resolve));
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  /** Stops listening (connections are refused) until start() again. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}
