// Steps on a take's stored objects: composing its audio at finalize, recognising a resent gap,
// deleting the objects no manifest row references.
import type { ObjectStore } from '../adapters/storage';
import { wavHeader } from '../audio/wav';
import type { ManifestRow } from '../repositories/manifest';
import type { Recording } from '../repositories/recordings';
import type { Logger } from '../telemetry/log';
import { gapPrefix, segmentPrefix, takeAudioPath, takePrefix } from './take-objects';

/** Composes the audio object of a claimed take; null when it stored no frame. */
export async function composeAudio(store: ObjectStore, rec: Recording, chain: ManifestRow[]): Promise<string | null> {
  if (!chain.length) return null;
  const prefix = takePrefix(rec.meeting_id, rec.audio_version);
  const dest = takeAudioPath(rec);
  if (rec.encoding !== 'pcm_s16le') {
    await store.compose(
      chain.map((r) => r.object_name),
      dest,
      { contentType: 'audio/webm' },
    );
    return dest;
  }
  const header = `${prefix}header.wav`;
  const dataBytes = chain.reduce((n, r) => n + r.byte_count, 0);
  await store.write(header, wavHeader(dataBytes, rec.sample_rate), { contentType: 'audio/wav' });
  await store.compose([header, ...chain.map((r) => r.object_name)], dest, { contentType: 'audio/wav' });
  await store.delete(header).catch(() => undefined);
  return dest;
}

/** Whether a stored row holds these bytes (the identical range resent). */
export async function sameBytes(store: ObjectStore, row: ManifestRow, sha: string, bytes: Buffer): Promise<boolean> {
  if (row.byte_count !== bytes.length) return false;
  if (row.sha256) return row.sha256 === sha;
  return (await store.readAll(row.object_name)).equals(bytes); // a live segment: no sha256 stored
}

/**
 * Segment and gap objects of the take that no manifest row references: left by a writer that
 * died between writing its object and committing its row. The take is finalized, so nothing can
 * reference them any more (a late writer's commit is refused, and it deletes its own object).
 */
export async function deleteUnreferenced(
  deps: { store: ObjectStore; log: Logger },
  rec: Recording,
  rows: ManifestRow[],
): Promise<void> {
  const referenced = new Set(rows.map((r) => r.object_name));
  const listed = await Promise.all(
    [segmentPrefix(rec.meeting_id, rec.audio_version), gapPrefix(rec.meeting_id, rec.audio_version)].map((p) =>
      deps.store.list(p),
    ),
  );
  const strays = listed.flat().filter((o) => !referenced.has(o.name));
  await Promise.all(strays.map((o) => deps.store.delete(o.name)));
  if (strays.length)
    deps.log.info(
      { take: `${rec.meeting_id}/${rec.audio_version}`, objects: strays.length },
      'deleted objects no manifest row references',
    );
}
