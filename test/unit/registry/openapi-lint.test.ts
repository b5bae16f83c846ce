import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

// Both linters run offline from node_modules, each once over the real document and a broken
// copy (which proves they report). Measured: Redocly ~3–6 s, Spectral ~6–18 s on a loaded
// machine, run side by side; the timeout leaves room. registry.test.ts keeps the document current.
const run = promisify(execFile);
const root = join(__dirname, '..', '..', '..');
const bin = (name: string) => join(root, 'node_modules', '.bin', name);
const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' };
const TIMEOUT = 180_000;

interface Finding {
  file: string;
  rule: string;
  severity: string;
  where: string;
  message: string;
}

async function redocly(files: string[]): Promise<Finding[]> {
  const { stdout } = await run(bin('redocly'), ['lint', ...files, '--config', join(root, 'redocly.yaml'), '--format=json'], { cwd: root, env, maxBuffer: 64 << 20 });
  // One pretty-printed report per file, in order, back to back: `}{` at the start of a line splits them.
  const reports = stdout.slice(stdout.indexOf('{')).split(/(?<=^\})(?=\{)/m).map((r) => JSON.parse(r));
  expect(reports).toHaveLength(files.length);
  return reports.flatMap((report, i) =>
    report.problems.map((p: { ruleId: string; severity: string; message: string; location: { pointer: string }[] }) => ({
      file: files[i],
      rule: p.ruleId,
      severity: p.severity,
      where: p.location?.[0]?.pointer,
      message: p.message,
    })),
  );
}

async function spectral(files: string[], dir: string): Promise<Finding[]> {
  const out = join(dir, 'spectral.json');
  // Exit status 1 means findings at the fail severity (any, here); the report says which.
  await run(bin('spectral'), ['lint', '-r', join(root, '.spectral.yaml'), ...files, '-f', 'json', '-o', out, '--fail-severity', 'hint'], { cwd: root, env }).catch((err) => {
    if (err.code !== 1) throw err;
  });
  const severities = ['error', 'warning', 'info', 'hint'];
  return JSON.parse(readFileSync(out, 'utf8')).map((r: { source: string; code: string; severity: number; message: string; path: string[] }) => ({
    file: resolve(root, r.source),
    rule: r.code,
    severity: severities[r.severity],
    where: r.path.join('.'),
    message: r.message,
  }));
}

describe('docs/openapi.json lints clean', () => {
  const file = join(root, 'docs', 'openapi.json');
  const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
  const broken = join(dir, 'broken.json');
  let found: { redocly: Finding[]; spectral: Finding[] };

  beforeAll(async () => {
    const doc = JSON.parse(readFileSync(file, 'utf8'));
    delete doc.info.license;
    delete doc.paths['/api/v1/agents'].get.description;
    writeFileSync(broken, JSON.stringify(doc, null, 2));
    const [r, s] = await Promise.all([redocly([file, broken]), spectral([file, broken], dir)]);
    found = { redocly: r, spectral: s };
  }, TIMEOUT);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('under Redocly\'s recommended rules: no error, no warning', () => {
    expect(found.redocly.filter((f) => f.file === file)).toEqual([]);
  });

  it('under Spectral\'s spectral:oas rules: no error, no warning', () => {
    expect(found.spectral.filter((f) => f.file === file)).toEqual([]);
  });

  it('is checked by linters that do report problems (a copy without license and a description)', () => {
    expect(found.redocly.filter((f) => f.file === broken).map((f) => f.rule)).toContain('info-license');
    expect(found.spectral.filter((f) => f.file === broken).map((f) => f.rule)).toContain('operation-description');
  });
});
