import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { jobs } from '../../../shared/jobs/registry';
import type { JobDefinition } from '../../../shared/jobs/definition';

const runbook = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'operations.md'), 'utf8');
const HEADING = '### Every job, and what its alarm means';

/** The rows of the first table after `heading`: each row's cells, trimmed. */
function tableAfter(markdown: string, heading: string): string[][] {
  const start = markdown.indexOf(heading);
  if (start < 0) return [];
  const lines = markdown.slice(start).split('\n');
  const first = lines.findIndex((l) => l.startsWith('|'));
  if (first < 0) return [];
  const rows: string[][] = [];
  for (const line of lines.slice(first)) {
    if (!line.startsWith('|')) break;
    rows.push(line.slice(1, -1).split('|').map((c) => c.trim()));
  }
  return rows.slice(2); // header and separator
}

/** How the runbook names a job's kind: `queue`, or `schedule, <its rate>`. */
function kindText(job: JobDefinition): string {
  if (job.kind === 'queue') return 'queue';
  const rate = job.rateMinutes === 1 ? 'every minute' : job.rateMinutes === 60 ? 'hourly' : `every ${job.rateMinutes} minutes`;
  return `schedule, ${rate}`;
}

describe('the runbook (docs/operations.md) lists every job of the registry', () => {
  const rows = tableAfter(runbook, HEADING);
  const documented = new Map(rows.map(([name, kind]) => [name.replace(/`/g, ''), kind]));

  it('has the job table', () => {
    expect(rows.length).toBeGreaterThan(0);
  });

  it.each(jobs.map((job) => [job.name, job] as const))('%s: a row with its kind and rate', (name, job) => {
    expect(documented.has(name)).toBe(true);
    expect(documented.get(name)).toBe(kindText(job));
  });

  it('lists no job that the registry does not have, and each once', () => {
    const names = rows.map(([name]) => name.replace(/`/g, ''));
    expect(new Set(names).size).toBe(names.length);
    expect(names.filter((n) => !jobs.some((job) => job.name === n))).toEqual([]);
  });

  it('does not name a partial list of dead-letter queues in the alarm table', () => {
    const alarmRow = runbook.split('\n').find((l) => l.startsWith('| `<queue> dead letters`'));
    expect(alarmRow).toBeDefined();
    const named = jobs.filter((job) => job.kind === 'queue' && alarmRow!.includes(`\`${job.name}\``));
    // Either it names none (and points to the job table) or every queue job.
    expect([0, jobs.filter((job) => job.kind === 'queue').length]).toContain(named.length);
  });
});
