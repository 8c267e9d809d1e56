// A Cloud Storage JSON-API emulator for the real @google-cloud/storage client and the real
// `gcloud storage` CLI: buckets (create, list, get, delete when empty), objects (media/multipart/
// resumable uploads, Range downloads, list, delete, compose), generation preconditions, V4
// signed-URL GETs, and injected faults for reliability tests.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { Faults, type FaultSpec } from './faults';
import {
  baseUrlOf,
  generationOf,
  objectResource,
  preconditionsOf,
  readJson,
  sendJson,
  sendJsonError,
  sendMedia,
  sendXmlError,
} from './http';
import { isSignedUrlRequest, SignedUrlVerifier, type TrustedKey } from './signed-url';
import { GcsError, GcsStore, type BucketMeta } from './store';
import { Uploads } from './uploads';

export type { TrustedKey } from './signed-url';

export interface GcsEmulatorOptions {
  port?: number;
  host?: string;
  /** Objects are kept here across restarts; in memory when absent. */
  dataDir?: string;
  /** Service accounts whose V4 signed URLs are accepted. */
  trustedKeys?: TrustedKey[];
}

export interface GcsEmulator {
  /** http://HOST:PORT: the client's apiEndpoint / STORAGE_EMULATOR_HOST. */
  url: string;
  /** HOST:PORT */
  host: string;
  stop(): Promise<void>;
  trustKey(key: TrustedKey): void;
}

function bucketResource(b: BucketMeta) {
  return {
    kind: 'storage#bucket',
    id: b.name,
    name: b.name,
    projectNumber: '0',
    metageneration: b.metageneration,
    location: 'US',
    storageClass: 'STANDARD',
    etag: 'CAE=',
    timeCreated: b.timeCreated,
    updated: b.updated,
  };
}

const safeDecode = (s: string) => {
  try {
    return decodeURIComponent(s);
  } catch {
    throw new GcsError(400, 'Malformed percent-encoding in the request path.', 'invalid');
  }
};

const MAX_SIGNED_READS = 1000;

class GcsHandler {
  readonly store: GcsStore;
  readonly verifier = new SignedUrlVerifier();
  readonly faults = new Faults();
  /** Objects served through signed URLs, newest last: the ML conformance kit checks an ML read a take's audio. */
  readonly signedReads: { bucket: string; object: string; at: string }[] = [];
  private readonly uploads: Uploads;

  constructor(opts: GcsEmulatorOptions) {
    this.store = new GcsStore(opts.dataDir);
    this.uploads = new Uploads(this.store);
    for (const key of opts.trustedKeys ?? []) this.verifier.trust(key);
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const rawUrl = req.url ?? '/';
    const qi = rawUrl.indexOf('?');
    const rawPath = qi < 0 ? rawUrl : rawUrl.slice(0, qi);
    const rawQuery = qi < 0 ? '' : rawUrl.slice(qi + 1);
    if (rawPath === '/_emulator/faults') return this.faultControl(req, res);
    if (rawPath === '/_emulator/signed-reads') return sendJson(res, 200, { reads: this.signedReads });

    let decodedUrl = rawUrl;
    try {
      decodedUrl = decodeURIComponent(rawUrl);
    } catch {
      /* match the raw form only */
    }
    const fault = this.faults.take(rawUrl, decodedUrl);
    if (fault?.kind === 'error503')
      return sendJsonError(
        res,
        503,
        'We encountered an internal error. Please try again. (injected fault)',
        'backendError',
      );
    if (fault?.kind === 'stall') await sleep(fault.ms);

    if (isSignedUrlRequest(rawQuery)) return this.signedGet(req, res, rawPath, rawQuery);
    const q = new URLSearchParams(rawQuery);
    const segs = rawPath.split('/').slice(1);
    // With STORAGE_EMULATOR_HOST the client calls /b/...; with apiEndpoint, /storage/v1/b/...
    if (segs[0] === 'storage' && segs[1] === 'v1') return this.jsonApi(req, res, segs.slice(2), q);
    // gcloud starts resumable uploads under /resumable/upload/...; the rest of the path is the same.
    const uploadSegs = segs[0] === 'resumable' ? segs.slice(1) : segs;
    if (
      uploadSegs[0] === 'upload' &&
      uploadSegs[1] === 'storage' &&
      uploadSegs[2] === 'v1' &&
      uploadSegs[3] === 'b' &&
      uploadSegs[5] === 'o' &&
      uploadSegs.length === 6
    ) {
      return this.uploads.handle(req, res, safeDecode(uploadSegs[4]), q);
    }
    if (segs[0] === 'download' && segs[1] === 'storage' && segs[2] === 'v1')
      return this.jsonApi(req, res, segs.slice(3), q);
    if (segs[0] === 'b') return this.jsonApi(req, res, segs, q);
    sendXmlError(
      res,
      403,
      'AccessDenied',
      'Access denied.',
      'Anonymous caller does not have storage.objects.get access.',
    );
  }

  private async jsonApi(req: IncomingMessage, res: ServerResponse, segs: string[], q: URLSearchParams): Promise<void> {
    const method = req.method ?? 'GET';
    const base = baseUrlOf(req);
    if (segs[0] !== 'b') throw new GcsError(404, 'Not Found', 'notFound');
    if (segs.length === 1) {
      // One project: the `project` parameter of the list is not checked.
      if (method === 'GET')
        return sendJson(res, 200, { kind: 'storage#buckets', items: this.store.listBuckets().map(bucketResource) });
      if (method !== 'POST') throw new GcsError(405, 'Method not allowed.', 'methodNotAllowed');
      const body = await readJson(req);
      return sendJson(res, 200, bucketResource(await this.store.createBucket(String(body.name ?? ''))));
    }
    const bucket = safeDecode(segs[1]);
    if (segs.length === 2) {
      if (method === 'DELETE') {
        await this.store.deleteBucket(bucket);
        res.writeHead(204);
        res.end();
        return;
      }
      if (method !== 'GET') throw new GcsError(405, 'Method not allowed.', 'methodNotAllowed');
      return sendJson(res, 200, bucketResource(this.store.getBucket(bucket)));
    }
    // gcloud storage rm --recursive asks whether folders need deleting too: not in a flat bucket.
    if (segs.length === 3 && segs[2] === 'storageLayout' && method === 'GET') {
      this.store.getBucket(bucket);
      return sendJson(res, 200, {
        kind: 'storage#storageLayout',
        bucket,
        location: 'US',
        locationType: 'multi-region',
        hierarchicalNamespace: { enabled: false },
      });
    }
    // rm --recursive gs://BUCKET lists managed folders (IAM-bearing prefixes) before deleting the bucket: none here.
    if (segs.length === 3 && segs[2] === 'managedFolders' && method === 'GET') {
      this.store.getBucket(bucket);
      return sendJson(res, 200, { kind: 'storage#managedFolders' });
    }
    if (segs[2] !== 'o') throw new GcsError(404, 'Not Found', 'notFound');
    if (segs.length === 3) {
      if (method !== 'GET') throw new GcsError(405, 'Method not allowed.', 'methodNotAllowed');
      const page = this.store.list(bucket, {
        prefix: q.get('prefix') ?? undefined,
        delimiter: q.get('delimiter') || undefined,
        pageToken: q.get('pageToken') ?? undefined,
        maxResults: q.has('maxResults') ? Number(q.get('maxResults')) : undefined,
      });
      return sendJson(res, 200, {
        kind: 'storage#objects',
        ...(page.prefixes.length ? { prefixes: page.prefixes } : {}),
        ...(page.items.length ? { items: page.items.map((m) => objectResource(m, base)) } : {}),
        ...(page.nextPageToken ? { nextPageToken: page.nextPageToken } : {}),
      });
    }
    const name = safeDecode(segs[3]);
    if (segs.length === 5 && segs[4] === 'compose' && method === 'POST') return this.compose(req, res, bucket, name, q);
    if (segs.length !== 4) throw new GcsError(404, 'Not Found', 'notFound');
    if (method === 'GET' || method === 'HEAD') {
      const meta = this.store.getObject(bucket, name, generationOf(q));
      this.store.checkPreconditions(bucket, name, preconditionsOf(q));
      if (q.get('alt') === 'media') return sendMedia(req, res, this.store, meta);
      return sendJson(res, 200, objectResource(meta, base));
    }
    if (method === 'DELETE') {
      await this.store.delete(bucket, name, { ...preconditionsOf(q), generation: generationOf(q) });
      res.writeHead(204);
      res.end();
      return;
    }
    throw new GcsError(405, 'Method not allowed.', 'methodNotAllowed');
  }

  private async compose(
    req: IncomingMessage,
    res: ServerResponse,
    bucket: string,
    destination: string,
    q: URLSearchParams,
  ): Promise<void> {
    const body = await readJson(req);
    const sources: { name?: unknown; generation?: unknown; objectPreconditions?: { ifGenerationMatch?: unknown } }[] =
      Array.isArray(body.sourceObjects) ? body.sourceObjects : [];
    const parsed = sources.map((s) => {
      if (typeof s.name !== 'string' || !s.name) throw new GcsError(400, 'Required', 'required');
      const gen = s.generation ?? s.objectPreconditions?.ifGenerationMatch;
      return { name: s.name, generation: gen === undefined ? undefined : String(gen) };
    });
    const meta = await this.store.compose(
      bucket,
      destination,
      parsed,
      { contentType: body.destination?.contentType, metadata: body.destination?.metadata },
      preconditionsOf(q),
    );
    sendJson(res, 200, objectResource(meta, baseUrlOf(req)));
  }

  /** GET/HEAD /BUCKET/OBJECT?X-Goog-Signature=...: the XML-API path the client signs. */
  private async signedGet(req: IncomingMessage, res: ServerResponse, rawPath: string, rawQuery: string): Promise<void> {
    let check: ReturnType<typeof this.verifier.check>;
    try {
      check = this.verifier.check({ method: req.method ?? 'GET', rawPath, rawQuery, headers: req.headers });
    } catch {
      return sendXmlError(res, 400, 'InvalidArgument', 'Invalid argument.', 'Malformed signed URL.');
    }
    if (!check.ok) return sendXmlError(res, check.status, check.code, check.message, check.details);
    if (req.method !== 'GET' && req.method !== 'HEAD')
      return sendXmlError(res, 405, 'MethodNotAllowed', 'Method not allowed.', '');
    const [bucketSeg, ...nameSegs] = rawPath.split('/').slice(1);
    const bucket = safeDecode(bucketSeg ?? '');
    const name = nameSegs.map(safeDecode).join('/');
    try {
      const object = this.store.getObject(bucket, name);
      if (req.method === 'GET') {
        this.signedReads.push({ bucket, object: name, at: new Date().toISOString() });
        this.signedReads.splice(0, this.signedReads.length - MAX_SIGNED_READS);
      }
      return await sendMedia(req, res, this.store, object);
    } catch (err) {
      if (err instanceof GcsError && err.status === 404)
        return sendXmlError(
          res,
          404,
          'NoSuchKey',
          'The specified key does not exist.',
          `No such object: ${bucket}/${name}`,
        );
      throw err;
    }
  }

  private async faultControl(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method === 'DELETE') this.faults.clear();
    else if (req.method === 'POST') {
      try {
        this.faults.add((await readJson(req)) as FaultSpec);
      } catch (err) {
        return sendJsonError(res, 400, (err as Error).message, 'invalid');
      }
    } else if (req.method !== 'GET') return sendJsonError(res, 405, 'Method not allowed.', 'methodNotAllowed');
    sendJson(res, 200, { faults: this.faults.list() });
  }
}

export async function startGcsEmulator(opts: GcsEmulatorOptions = {}): Promise<GcsEmulator> {
  const handler = new GcsHandler(opts);
  const server = createServer((req, res) => {
    handler.handle(req, res).catch((err: unknown) => {
      // A fully read request is destroyed too; only a closed socket means nobody listens.
      if (res.headersSent || req.socket?.destroyed !== false) {
        res.destroy();
        return;
      }
      if (err instanceof GcsError) sendJsonError(res, err.status, err.message, err.reason);
      else sendJsonError(res, 500, 'Internal error.', 'backendError');
    });
  });
  const listenHost = opts.host ?? '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, listenHost, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = `${listenHost.includes(':') ? `[${listenHost}]` : listenHost}:${port}`;
  let stopped: Promise<void> | undefined;
  return {
    url: `http://${host}`,
    host,
    trustKey: (key) => handler.verifier.trust(key),
    stop: () =>
      (stopped ??= new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      })),
  };
}
