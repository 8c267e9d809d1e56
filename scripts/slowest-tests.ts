// Prints the slowest test files of a vitest JSON report (`--reporter=json --outputFile.json=…`),
// so CI's log shows where the suite's time goes: `tsx scripts/slowest-tests.ts <report> [count]`.
import { readFileSync } from 'node:fs';
import path from 'node:path';

type Report = { testResults: { name: string; startTime: number; endTime: number; status: string }[] };

const [file, count = '10'] = process.argv.slice(2);
if (!file) {
  console.error('usage: tsx scripts/slowest-tests.ts <vitest-report.json> [count]');
  process.exit(2);
}
const report = JSON.parse(readFileSync(file, 'utf8')) as Report;
const files = report.testResults
  .map((f) => ({
    file: path.relative(process.cwd(), f.name),
    seconds: (f.endTime - f.startTime) / 1000,
    status: f.status,
  }))
  .sort((a, b) => b.seconds - a.seconds)
  .slice(0, Number(count));
console.log(`The ${files.length} slowest of ${report.testResults.length} test files:`);
for (const f of files) {
  console.log(`${f.seconds.toFixed(1).padStart(7)} s  ${f.file}${f.status === 'passed' ? '' : ` (${f.status})`}`);
}
