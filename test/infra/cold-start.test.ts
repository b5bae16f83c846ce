import { readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';
import type { Metafile } from 'esbuild';
import { bundleEntries, staticallyLoaded } from '../../lib/bundle';
import { ROOT_DIR } from '../../lib/stack';
import { operations } from '../../shared/http/registry';
import { jobs } from '../../shared/jobs/registry';

/**
 * What each function loads at cold start, read from esbuild's metafile (no timing here: the
 * figures are in `npm run bench`, section (b)). "Loaded at start" is everything reachable from
 * the entry through static imports; a module reached only through a dynamic `import()` runs (and,
 * external, is read) only when its path does. Built with the AWS SDK external, which keeps the
 * build quick and shows each SDK client as an import of its own kind; which modules our code
 * reaches statically does not depend on that setting.
 *
 * The output files are checked too, built as the stack builds them (SDK bundled, split per
 * function): what Node reads at start is `index.mjs` and the chunks it imports statically.
 */
const outDir = path.join(ROOT_DIR, '.build', 'test-cold-start');
const splitDir = path.join(ROOT_DIR, '.build', 'test-cold-start-split');
const splitNames = ['getAgent', 'getContact', 'createKbUpload', 'job-api-key-usage', 'cancelCampaign', 'sendWidgetChatMessage'];
const representative = [
  'getAgent', // the foundation: auth, rate limit, one GetItem
  'getContact', // contacts: phone and time-zone fields in sibling operations' schemas
  'createContact', // validates a phone number and a time zone
  'getKnowledgeBase', // knowledge base, never touches S3
  'createKbUpload', // knowledge base, presigns an S3 upload
  'getEvent', // validates instants only
  'getCall', // calls: phone fields in sibling operations' schemas
  'discoverUrls', // crawls: parses HTML, but only once robots.txt is fetched
  'buyPhoneNumber', // the carrier adapters check numbers on some paths
  'getAppointment', // appointments: reads one, no dates in a zone
  'getAvailability', // computes dates in a zone on every request
  'cancelCampaign', // fails pending contacts inline; the engine (calls, S3) is not its to load
  'getAgentTest', // agent tests: the criteria's schemas name the pattern engine
  'createAgentTest', // checks a reply_matches pattern when one is written
  'publishAgentVersion', // agents: its area's schemas include the tests'
  'sendWidgetChatMessage', // a chat turn, the heaviest start: the conversation engine and its lazily loaded parts
];
const entries = [
  ...representative.map((id) => {
    const op = operations.find((o) => o.operationId === id);
    if (!op) throw new Error(`No operation ${id}`);
    return { name: id, entry: op.entry };
  }),
  { name: 'job-api-key-usage', entry: jobs.find((j) => j.name === 'api-key-usage')!.entry },
];

let metafile: Metafile;
let split: Metafile;
beforeAll(() => {
  bundleEntries(entries, { rootDir: ROOT_DIR, outDir, externalAwsSdk: true });
  metafile = JSON.parse(readFileSync(path.join(outDir, 'metafile.json'), 'utf8')) as Metafile;
  bundleEntries(entries.filter((e) => splitNames.includes(e.name)), { rootDir: ROOT_DIR, outDir: splitDir });
  split = JSON.parse(readFileSync(path.join(splitDir, 'metafile.json'), 'utf8')) as Metafile;
});

/** The module paths (inputs and external packages) reachable from `entry` through imports of the given kinds. */
function reachable(entry: string, followDynamic: boolean): Set<string> {
  const seen = new Set<string>();
  const stack = [entry];
  while (stack.length) {
    const file = stack.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const imported of metafile.inputs[file]?.imports ?? []) {
      if (imported.kind === 'dynamic-import' && !followDynamic) continue;
      stack.push(imported.path);
    }
  }
  return seen;
}
const entryOf = (name: string) => entries.find((e) => e.name === name)!.entry;
const atStart = (name: string) => [...reachable(entryOf(name), false)];
const anywhere = (name: string) => [...reachable(entryOf(name), true)];
const pkg = (name: string) => (file: string) => file === name || file.startsWith(`${name}/`) || file.includes(`node_modules/${name}/`);

describe('what a function loads at cold start', () => {
  it('the usage stamp\'s SQS client is not loaded until a stamp is sent', () => {
    for (const name of ['getAgent', 'getContact', 'getKnowledgeBase']) {
      expect(atStart(name).filter(pkg('@aws-sdk/client-sqs'))).toEqual([]);
      // It is still there, behind the dynamic import (or the test would prove nothing).
      expect(anywhere(name).filter(pkg('@aws-sdk/client-sqs'))).not.toEqual([]);
    }
  });

  it('the linear-time pattern engine (re2js) loads only when a pattern is checked or matched', () => {
    for (const name of ['getAgentTest', 'createAgentTest', 'publishAgentVersion']) expect([name, atStart(name).filter(pkg('re2js'))]).toEqual([name, []]);
    // Behind the dynamic import where a pattern is checked (or the test would prove nothing).
    expect(anywhere('createAgentTest').filter(pkg('re2js'))).not.toEqual([]);
  });

  it("schema declarations a function never uses are dropped from its bundle (named() and lazy() calls are marked pure)", () => {
    // getCall names a few agent fields through the calls' schemas; the agents' area declares some
    // fifty schemas it never reads (6.8 KB of getCall's code at start when the calls were not pure).
    const bytesOf = (name: string, input: string) =>
      Object.entries(metafile.outputs).filter(([file]) => file.includes(`/${name}/`)).reduce((sum, [, out]) => sum + (out.inputs[input]?.bytesInOutput ?? 0), 0);
    expect(bytesOf('getCall', 'shared/domain/agents/schemas.ts')).toBeLessThan(2_000);
    // Its response schema goes too (the RESPONSES blocks are dropped), while a body it validates stays.
    expect(bytesOf('getAgent', 'shared/domain/agents/schemas.ts')).toBe(0);
    expect(bytesOf('createAgentTest', 'shared/domain/agent-tests/schemas.ts')).toBeGreaterThan(2_000);
  });

  it('knowledge-base functions load the S3 client only on a path that touches S3', () => {
    expect(atStart('getKnowledgeBase').filter(pkg('@aws-sdk/client-s3'))).toEqual([]);
    expect(atStart('createKbUpload').filter(pkg('@aws-sdk/client-s3'))).toEqual([]);
    expect(atStart('createKbUpload').filter(pkg('@aws-sdk/s3-request-presigner'))).toEqual([]);
    expect(anywhere('createKbUpload').filter(pkg('@aws-sdk/client-s3'))).not.toEqual([]);
  });

  it('Powertools Logger is a chunk a function starts loading at init without waiting for it (shared/logger.ts)', () => {
    for (const name of ['getAgent', 'createContact', 'job-api-key-usage']) {
      expect(atStart(name).filter(pkg('@aws-lambda-powertools/logger'))).toEqual([]);
      expect(atStart(name)).toContain('shared/logger.ts');
      expect(anywhere(name).filter(pkg('@aws-lambda-powertools/logger'))).not.toEqual([]);
    }
  });

  it('libphonenumber-js loads only when a phone number is checked', () => {
    expect(anywhere('getAgent').filter(pkg('libphonenumber-js'))).toEqual([]);
    for (const name of ['getContact', 'createContact', 'getCall']) expect(atStart(name).filter(pkg('libphonenumber-js'))).toEqual([]);
    expect(anywhere('createContact').filter(pkg('libphonenumber-js'))).not.toEqual([]);
  });

  it('luxon is not loaded by functions that only check a time zone or an instant', () => {
    for (const name of ['getAgent', 'getContact', 'createContact', 'getEvent']) expect(anywhere(name).filter(pkg('luxon'))).toEqual([]);
    // Appointments: loaded on first use, except where every request needs it (at start there).
    expect(atStart('getAppointment').filter(pkg('luxon'))).toEqual([]);
    expect(anywhere('getAppointment').filter(pkg('luxon'))).not.toEqual([]);
    expect(atStart('getAvailability').filter(pkg('luxon'))).not.toEqual([]);
  });

  it('the crawler\'s HTML parsers and the carrier adapters\' phone rules load on first use', () => {
    expect(atStart('discoverUrls').filter(pkg('linkedom'))).toEqual([]);
    expect(anywhere('discoverUrls').filter(pkg('linkedom'))).not.toEqual([]);
    expect(atStart('buyPhoneNumber').filter(pkg('libphonenumber-js'))).toEqual([]);
    expect(anywhere('buyPhoneNumber').filter(pkg('libphonenumber-js'))).not.toEqual([]);
  });

  it('the bundle entry (what every function loads first, and the bench\'s floor with it) loads no logger: the trace export extension and the after-answer queue only', () => {
    const entry = [...reachable('shared/telemetry/lambda-extension.ts', false)];
    expect(entry).toContain('shared/after-answer.ts');
    expect(entry.filter((m) => m.startsWith('shared/') && !/^shared\/(telemetry\/(lambda-extension|tracing)|after-answer)\.ts$/.test(m))).toEqual([]);
    expect(entry.filter(pkg('@aws-lambda-powertools/logger'))).toEqual([]);
    // The logger comes in only when work after an answer fails (behind its import).
    expect([...reachable('shared/after-answer.ts', true)]).toContain('shared/logger.ts');
  });

  it("a function carries its own operation's module, not the registry or other areas' operations", () => {
    for (const { name } of entries) {
      const modules = anywhere(name);
      expect(modules).not.toContain('shared/http/registry.ts');
      expect(modules).not.toContain('shared/jobs/registry.ts');
      const operationModules = modules.filter((m) => /^shared\/domain\/[^/]+\/operations\.ts$/.test(m));
      expect(operationModules).toHaveLength(name.startsWith('job-') ? 0 : 1);
    }
  });
});

describe('the output files a function reads at cold start (split per function, AWS SDK bundled)', () => {
  const outputKey = (file: string) => path.relative(ROOT_DIR, file).split(path.sep).join('/');
  const dirKey = (name: string) => outputKey(path.join(splitDir, name));
  /** The bundled packages' inputs inside the given output files. */
  const packagesIn = (files: string[], name: string) => files.flatMap((file) => Object.keys(split.outputs[file]!.inputs)).filter(pkg(name));
  const loadedAtStart = (name: string) => staticallyLoaded(split, `${dirKey(name)}/index.mjs`);
  const inDirectory = (name: string) => Object.keys(split.outputs).filter((file) => file.startsWith(`${dirKey(name)}/`) && file.endsWith('.mjs'));

  it('index.mjs and its statically imported chunks hold no phone rules, S3 client or SQS client', () => {
    for (const name of splitNames) {
      expect(loadedAtStart(name).length).toBeGreaterThan(0);
      for (const lazy of ['libphonenumber-js', '@aws-sdk/client-s3', '@aws-sdk/client-sqs']) expect([name, packagesIn(loadedAtStart(name), lazy)]).toEqual([name, []]);
    }
    // They are in the directory, in chunks behind a dynamic import (or the test would prove nothing).
    for (const name of splitNames) expect(packagesIn(inDirectory(name), '@aws-sdk/client-sqs')).not.toEqual([]);
    expect(packagesIn(inDirectory('createKbUpload'), '@aws-sdk/client-s3')).not.toEqual([]);
    expect(packagesIn(inDirectory('getContact'), 'libphonenumber-js')).not.toEqual([]);
  });

  it("a campaign function does not load the S3 client's stream code at start", () => {
    // esbuild splits by file: a file reachable from index.mjs (here through the SDK's serde
    // barrel) and used by a dynamic import's target (the engine, which reaches S3 through the
    // calls service) lands in a chunk index.mjs loads. cancelCampaign no longer imports the engine.
    const streamCode = (files: string[]) => files.flatMap((file) => Object.keys(split.outputs[file]!.inputs)).filter((input) => input.includes('/util-stream/checksum/'));
    expect(streamCode(loadedAtStart('cancelCampaign'))).toEqual([]);
    expect(streamCode(inDirectory('createKbUpload'))).not.toEqual([]); // the code the guard looks for exists where S3 is used
  });

  it("a chat turn carries no chunk for code it cannot run: esbuild makes one even for an import() in code it drops, and splits the start's code by it", () => {
    // Node pays about 0.3 ms for each file it loads (docs/benchmarks.md (b)), and code a function
    // shares with a lazily loaded module goes to a chunk per set of such modules. The chat-analysis
    // job's analyzer and analytics (chats/analysis.ts) and the presigner (adapters/presigned-urls.ts)
    // used to sit in modules the turns import, dead there, and split their start into more files.
    const chunksFor = inDirectory('sendWidgetChatMessage').map((file) => split.outputs[file]!.entryPoint).filter((entry): entry is string => !!entry);
    for (const unreachable of ['shared/adapters/analysis/index.ts', 'shared/domain/analytics/settings.ts', 'shared/domain/analytics/counters.ts']) expect(chunksFor).not.toContain(unreachable);
    expect(chunksFor.filter(pkg('@aws-sdk/s3-request-presigner'))).toEqual([]);
    expect(chunksFor).toContain('shared/domain/conversations/tools/executor.ts'); // its own lazily loaded parts are chunks (or this proves nothing)
    // The budget measured on 2026-11-30 (36 files before, the floor 10): a new lazy import that splits the start further must be weighed.
    expect(loadedAtStart('sendWidgetChatMessage').length).toBeLessThanOrEqual(30);
  });

  it('each function directory holds only index.mjs, its map and chunks/, and imports nothing outside it', () => {
    for (const name of splitNames) {
      const dir = path.join(splitDir, name);
      expect(readdirSync(dir).sort()).toEqual(['chunks', 'index.mjs', 'index.mjs.map']);
      expect(readdirSync(path.join(dir, 'chunks')).filter((file) => !/\.mjs(\.map)?$/.test(file))).toEqual([]);
      for (const file of inDirectory(name)) {
        for (const imported of split.outputs[file]!.imports) {
          if (!imported.external) expect(imported.path.startsWith(`${dirKey(name)}/chunks/`)).toBe(true);
        }
      }
    }
  });
});
