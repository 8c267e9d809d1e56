// Streams a ZIP into object storage (archiver, a resumable upload): entries one at a time, each
// hashed (sha256) and counted as it passes, so memory holds one upload chunk and the ZIP
// library's buffers whatever the entries' sizes. A take's audio is read object by object.
import { createHash } from 'node:crypto';
import { Readable, Transform } from 'node:stream';
import archiver from 'archiver';
import type { ObjectStore } from '../adapters/storage';
import { wavHeader } from '../audio/wav';
import type { ManifestRow } from '../repositories/manifest';
import type { Recording } from '../repositories/recordings';

export interface ArchiveEntry {
  path: string;
  /** Opened only when the entry's turn comes. */
  open: () => Promise<Readable | Buffer>;
  /** Stored as it is (audio: compressing it gains nothing and costs CPU). */
  stored?: boolean;
}

export interface ArchivedFile {
  path: string;
  bytes: number;
  sha256: string;
}

/**
 * Writes the entries, then `last(files)` (the manifest, which lists them), as one ZIP at `dest`.
 * Throws (and leaves no object) when an entry, the upload or `signal` fails it.
 */
export async function writeZip(
  store: ObjectStore,
  dest: string,
  entries: AsyncIterable<ArchiveEntry>,
  last: (files: ArchivedFile[]) => { path: string; body: Buffer },
  signal?: AbortSignal,
): Promise<{ files: ArchivedFile[]; byteCount: number }> {
  const zip = archiver('zip', { zlib: { level: 6 } });
  const uploaded = store.write(dest, zip, { contentType: 'application/zip' });
  // Whatever fails first (the upload, the ZIP library, the abort) fails the whole archive.
  const failed = new Promise<never>((_, reject) => {
    uploaded.catch(reject);
    zip.on('error', reject);
    zip.on('warning', reject);
    signal?.addEventListener('abort', () => reject(signal.reason ?? new Error('archive aborted')), { once: true });
  });
  failed.catch(() => undefined);
  const stop = (err: unknown) => {
    zip.destroy(err instanceof Error ? err : new Error(String(err)));
    return Promise.reject(err);
  };
  const files: ArchivedFile[] = [];
  // One entry at a time: the next is opened once the library has consumed the previous one.
  const add = async (path: string, source: Readable | Buffer, stored: boolean) => {
    const hash = createHash('sha256');
    let bytes = 0;
    const tap = new Transform({
      transform(chunk: Buffer, _enc, cb) {
        hash.update(chunk);
        bytes += chunk.length;
        cb(null, chunk);
      },
    });
    const src = Buffer.isBuffer(source) ? Readable.from([source]) : source;
    src.on('error', (err) => tap.destroy(err));
    tap.on('error', (err) => zip.emit('error', err));
    const consumed = new Promise<void>((resolve) => zip.once('entry', () => resolve()));
    zip.append(src.pipe(tap), { name: path, store: stored });
    await Promise.race([consumed, failed]);
    files.push({ path, bytes, sha256: hash.digest('hex') });
  };
  try {
    for await (const entry of entries) {
      signal?.throwIfAborted();
      await add(entry.path, await Promise.race([entry.open(), failed]), entry.stored ?? false);
    }
    const final = last(files);
    await add(final.path, final.body, false);
    await Promise.race([zip.finalize(), failed]);
    await Promise.race([uploaded, failed]);
  } catch (err) {
    return stop(err);
  }
  return { files: files.slice(0, -1), byteCount: zip.pointer() };
}

/**
 * A live take's audio as one stream, read from the objects finalization composes it from (the
 * manifest's chain of segments and gap uploads): PCM behind a WAV header computed from the
 * chain's length, Opus (WebM) as it is.
 */
export function takeAudioStream(store: ObjectStore, rec: Recording, chain: ManifestRow[]): Readable {
  async function* chunks() {
    if (rec.encoding === 'pcm_s16le') {
      yield wavHeader(
        chain.reduce((n, r) => n + r.byte_count, 0),
        rec.sample_rate,
      );
    }
    for (const row of chain) for await (const chunk of await store.read(row.object_name)) yield chunk as Buffer;
  }
  return Readable.from(chunks(), { objectMode: false });
}

/** The file extension of a take's audio. */
export const takeAudioExtension = (rec: Pick<Recording, 'encoding'>) => (rec.encoding === 'pcm_s16le' ? 'wav' : 'webm');

const UPLOAD_EXTENSIONS: Record<string, string> = {
  'audio/wav': 'wav',
  'audio/x-wav': 'wav',
  'audio/wave': 'wav',
  'audio/webm': 'webm',
  'audio/ogg': 'ogg',
  'audio/mpeg': 'mp3',
  'audio/mp4': 'm4a',
  'audio/x-m4a': 'm4a',
  'audio/aac': 'aac',
  'audio/flac': 'flac',
};

/** An upload's extension from its stored content type (bin when unknown). */
export const uploadExtension = (contentType: string | undefined) =>
  UPLOAD_EXTENSIONS[(contentType ?? '').split(';')[0].trim().toLowerCase()] ?? 'bin';
