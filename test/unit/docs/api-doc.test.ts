import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EVENT_TYPES } from '../../../shared/domain/events/types';
import { urlDocId } from '../../../shared/domain/rag/service';
import { normalizeUrl } from '../../../shared/adapters/crawler/url';
import { scheduleDefaults } from '../../../shared/domain/campaigns/schemas';
import { simulatedCallOutcome } from '../../../shared/adapters/telephony/simulated';

const api = readFileSync(join(__dirname, '..', '..', '..', 'docs', 'api.md'), 'utf8');

/** The table rows (cells trimmed) of the first table after `heading`. */
function tableAfter(heading: string, from = 0): string[][] {
  const start = api.indexOf(heading, from);
  if (start < 0) return [];
  const lines = api.slice(start).split('\n').map((l) => l.trim());
  const first = lines.findIndex((l) => l.startsWith('|'));
  const rows: string[][] = [];
  for (const line of lines.slice(first)) {
    if (!line.startsWith('|')) break;
    rows.push(line.slice(1, -1).split('|').map((c) => c.trim()));
  }
  return rows.slice(2);
}

/** docs/api.md says what the code does (issue 22, point 5). */
describe('docs/api.md', () => {
  it('points to no section of an operations.md outside the repository, and promises nothing for later', () => {
    const stale = api.split('\n').filter((line) => /(?<!docs\/)operations\.md/.test(line));
    expect(stale).toEqual([]);
    expect(api).not.toMatch(/reserved for later|later issues?|Emitted today/i);
  });

  it('lists every event kind in its events table, and no other', () => {
    const kinds = tableAfter('### Events').map(([kind]) => kind.replace(/`/g, ''));
    expect([...kinds].sort()).toEqual([...EVENT_TYPES].sort());
  });

  it("gives a URL document's id as the code makes it", () => {
    const m = /in knowledge base `([^`]+)`, `([^`]+)` is\s+`([^`]+)` and gets `(url-[0-9a-f]+)`/.exec(api);
    expect(m).not.toBeNull();
    const [, kbId, raw, normalized, id] = m!;
    expect(normalizeUrl(raw)).toBe(normalized);
    expect(urlDocId(kbId, normalized)).toBe(id);
  });

  it("gives every campaign schedule member's default", () => {
    const rows = tableAfter('**The schedule**');
    const documented = Object.fromEntries(rows.map(([member, def]) => [member.replace(/`/g, ''), JSON.parse(def.replace(/`/g, ''))]));
    expect(documented).toEqual(scheduleDefaults);
  });

  it("gives the simulated carrier's test digits as it dials them", () => {
    const rows = tableAfter('**The simulated carrier**');
    expect(rows.map(([digit]) => digit)).toEqual(['0–5', '6', '7', '8', '9']);
    const ending: Record<string, string> = { completed: 'completed', 'no-answer': 'no_answer', busy: 'busy', failed: 'failed' };
    for (const [digits, , reason] of rows) {
      const [low, high] = digits.split('–').map(Number);
      for (let d = low; d <= (high ?? low); d++) {
        const outcome = simulatedCallOutcome(`+1555010000${d}`);
        const expected = outcome.answeredBy === 'machine_end_beep' ? 'voicemail' : ending[outcome.status];
        expect(`${d}: ${reason.replace(/`/g, '')}`).toBe(`${d}: ${expected}`);
      }
    }
  });
});
