// A transcription as a file: WebVTT, SRT, plain text or JSON, each line with its speaker's name
// (the assigned person's display_name, else the speaker label). Subtitle formats come from the
// `subtitle` library; the cue text is ours: a WebVTT voice span, escaped as the format requires.
import { stringifySync, type NodeList } from 'subtitle';
import type { Queryable } from '../db/pool';
import { DomainError } from '../errors';

export const EXPORT_FORMATS = ['vtt', 'srt', 'txt', 'json'] as const;
export type ExportFormat = (typeof EXPORT_FORMATS)[number];

/** A bound on one export's work: about 80 hours of speech. */
export const EXPORT_MAX_SEGMENTS = 100_000;

export interface ExportLine {
  start_ms: number;
  end_ms: number;
  speaker: string;
  speaker_label: string | null;
  person_id: string | null;
  text: string;
}

export async function exportLines(q: Queryable, transcriptionId: string): Promise<ExportLine[]> {
  const { rows } = await q.query<ExportLine>(
    'transcript.export',
    `SELECT s.start_ms, s.end_ms, coalesce(p.display_name, s.speaker_label, 'Speaker') AS speaker, s.speaker_label, s.person_id, s.text
     FROM transcript_segment s LEFT JOIN person p ON p.id = s.person_id
     WHERE s.transcription_id = $1 ORDER BY s.start_ms, s.id LIMIT $2`,
    [transcriptionId, EXPORT_MAX_SEGMENTS + 1],
  );
  if (rows.length > EXPORT_MAX_SEGMENTS)
    throw new DomainError(
      'too_large',
      `a transcript of more than ${EXPORT_MAX_SEGMENTS} segments cannot be exported at once`,
    );
  return rows.map((l) => ({
    ...l,
    speaker: flatten(l.speaker),
    speaker_label: l.speaker_label && flatten(l.speaker_label),
    text: flatten(l.text),
  }));
}

export const EXPORT_CONTENT_TYPES: Record<ExportFormat, string> = {
  vtt: 'text/vtt; charset=utf-8',
  srt: 'application/x-subrip; charset=utf-8',
  txt: 'text/plain; charset=utf-8',
  json: 'application/json',
};

/** The file's text. */
export function formatTranscript(
  format: ExportFormat,
  lines: ExportLine[],
  meta: { transcription_id: string; meeting_id: string },
): string {
  switch (format) {
    case 'json':
      return JSON.stringify({ ...meta, segments: lines });
    case 'txt':
      return lines.map((l) => `[${clock(l.start_ms)}] ${l.speaker}: ${l.text}\n`).join('');
    case 'vtt':
      // The header node keeps an empty transcript a valid WebVTT file.
      return stringifySync(
        [{ type: 'header', data: 'WEBVTT' }, ...cues(lines, (l) => `<v ${vttEscape(l.speaker)}>${vttEscape(l.text)}`)],
        { format: 'WebVTT' },
      );
    case 'srt':
      return stringifySync(
        cues(lines, (l) => `${l.speaker}: ${l.text}`),
        { format: 'SRT' },
      );
  }
}

// A cue needs an end after its start; segments without one (end_ms 0) last until the next
// segment starts, the last one a second.
function cues(lines: ExportLine[], text: (l: ExportLine) => string): NodeList {
  return lines.map((l, i) => {
    const start = Number(l.start_ms);
    const next = i + 1 < lines.length ? Number(lines[i + 1].start_ms) : start + 1000;
    const end = Number(l.end_ms) > start ? Number(l.end_ms) : Math.max(next, start + 1);
    return { type: 'cue' as const, data: { start: Math.round(start), end: Math.round(end), text: text(l) } };
  });
}

// Every format gets one line per segment: a line break ends a cue (a blank line ends it in both
// subtitle formats) and "-->" reads as a timing line. Any run of control characters (and the
// Unicode line and paragraph separators) becomes one space; "--->" must not leave "-->" behind.
export const flatten = (s: string) => s.replace(/[ \t]*[\p{Cc}\u2028\u2029]+[ \t]*/gu, ' ').replace(/-{2,}>/g, '->');
const vttEscape = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function clock(ms: number): string {
  const total = Math.floor(Number(ms) / 1000);
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(Math.floor(total / 3600))}:${pad(Math.floor(total / 60) % 60)}:${pad(total % 60)}`;
}
