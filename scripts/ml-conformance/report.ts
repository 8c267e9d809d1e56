// The run's table: one row per check, pass or FAIL with the reason.
import type { Check } from './run';

export function formatReport(checks: Check[]): string {
  const width = Math.max(...checks.map((c) => c.name.length), 5);
  const rows = checks.map((c) => {
    const reason = c.reason.replace(/\s+/g, ' ').slice(0, 400);
    return `${c.name.padEnd(width)}  ${c.pass ? 'pass' : 'FAIL'}  ${reason}`;
  });
  const failed = checks.filter((c) => !c.pass).length;
  const summary = failed ? `${failed} of ${checks.length} checks failed` : `all ${checks.length} checks passed`;
  return [`${'check'.padEnd(width)}  result  reason`, ...rows, '', summary, ''].join('\n');
}
