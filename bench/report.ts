// Benchmark output: a table on stdout and the same table as one `## <title>` section of
// BENCHMARKS.md (other sections are kept).
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';

export type Row = Record<string, string | number>;

export function table(rows: Row[]): string {
  const cols = Object.keys(rows[0] ?? {});
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
  return [line(cols), line(cols.map(() => '---')), ...rows.map((r) => line(cols.map((c) => r[c] ?? '')))].join('\n');
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

export const ms = (v: number) => `${v.toFixed(v < 10 ? 2 : 0)} ms`;

/** Ends every section writeSection writes: text a merge or a hand puts after it survives a rewrite. */
export const SECTION_END = '<!-- end of generated section -->';

/**
 * Replaces `## <title>` in `file` (or appends it). A section ends at its SECTION_END line (older
 * sections without one: at the next heading), so hand-written text below it is kept in place.
 */
export function writeSection(title: string, body: string, file = 'BENCHMARKS.md') {
  const header =
    '# Benchmarks\n\nWritten by `npm run bench:*`; each section is replaced by its own run, up to its ' +
    '`end of generated section` comment (hand-written notes go in sections of their own, titled "(written by hand)"). ' +
    'Ratios compare against a baseline measured in the same run on the same machine.\n';
  const current = existsSync(file) ? readFileSync(file, 'utf8') : header;
  const machine = `${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  const section = `## ${title}\n\n_Run ${new Date().toISOString()} on ${machine}._\n\n${body.trim()}\n\n${SECTION_END}`;
  const heading = `## ${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\n`;
  const ended = new RegExp(`${heading}(?:(?!\\n## )[\\s\\S])*?${SECTION_END}`);
  const legacy = new RegExp(`${heading}[\\s\\S]*?(?=\\n## |$)`);
  const re = ended.test(current) ? ended : legacy;
  const next = re.test(current)
    ? current.replace(re, () => (re === legacy ? `${section}\n` : section))
    : `${current.trimEnd()}\n\n${section}`;
  writeFileSync(file, `${next.trimEnd()}\n`);
}
