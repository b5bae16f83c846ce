/**
 * README's "Configuration" table lists every setting the runtime reads (shared/, voice/,
 * bin/local.ts), except those the stack or the local runtime sets for itself (SET_FOR_ITSELF,
 * each with its reason), and lists nothing the code does not read.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const root = join(__dirname, '../../..');

/** Set by the CDK stack, the local runtime or the test set-up, never by a user. */
const SET_FOR_ITSELF: Record<string, string> = {
  TABLE_NAME: 'the stack and the runtime',
  BUCKET_NAME: 'the stack and the runtime',
  DYNAMODB_ENDPOINT: 'the local runtime (DynamoDB Local)',
  S3_ENDPOINT: 'the local runtime (the S3 emulator)',
  RUNTIME: '`local` in the local runtime',
  AWS_REGION: 'Lambda, and the local runtime',
  AWS_ACCESS_KEY_ID: 'the local runtime (dummy credentials)',
  AWS_SECRET_ACCESS_KEY: 'the local runtime (dummy credentials)',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'the local runtime and the tests',
  LAMBDA_TASK_ROOT: 'Lambda',
  AWS_EXECUTION_ENV: 'Lambda (a real one exports its spans before it is frozen)',
  AWS_LAMBDA_RUNTIME_API: 'Lambda (the Runtime API the trace export extension registers with)',
  POWERTOOLS_SERVICE_NAME: 'the stack',
  POWERTOOLS_LOG_LEVEL: 'the stack; LOG_LEVEL is the documented one',
  APP_VERSION: 'the stack',
  SECRETS_KEY_ID: 'the stack (KMS key)',
  SECRETS_LOCAL_KEY_FILE: 'the local runtime (in DATA_DIR)',
  TOKEN_SECRET_ARN: 'the stack',
  TWILIO_SECRET_ARN: 'the stack',
  TWILIO_SECRET_NAME: 'the stack',
  LLM_SECRET_ARN: 'the stack',
  LLM_SECRET_NAME: 'the stack',
  ANALYSIS_SECRET_ARN: 'the stack',
  ANALYSIS_SECRET_NAME: 'the stack',
  VOICE_DRAIN_SECONDS: 'the stack (the voice container; docs/api.md, "Voice runtime")',
  VAP_LAZY_MODULES: 'the test set-up',
};

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return name === 'node_modules' ? [] : sourceFiles(path);
    return /\.ts$/.test(name) && !/\.d\.ts$/.test(name) ? [path] : [];
  });
}

const NAME = '[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[A-Z]{3,}';

/** The environment variables a source file reads, by every way the code reads them. */
function settingsRead(source: string): string[] {
  const found = new Set<string>();
  const add = (re: RegExp) => {
    for (const m of source.matchAll(re)) found.add(m[1]!);
  };
  add(new RegExp(`process\\.env\\.(${NAME})\\b`, 'g'));
  add(new RegExp(`process\\.env\\[['"\`](${NAME})['"\`]\\]`, 'g'));
  add(new RegExp(`\\benv\\.(${NAME})\\b`, 'g')); // const env = process.env
  add(new RegExp(`\\w+Variable: '(${NAME})'`, 'g')); // the adapters' key settings
  add(new RegExp(`\\w+_SETTING = '(${NAME})'`, 'g')); // a setting named once (DYNAMODB_START_TIMEOUT_SETTING)
  // Helpers that take the variable's name (`int('API_KEY_CACHE_SECONDS', 10)`), in files that read process.env[name].
  if (/process\.env\[name\]/.test(source)) add(new RegExp(`\\b(?:int|oneOf|required|setting|positiveNumber|limit)\\('(${NAME})'`, 'g'));
  // `${prefix}_MODEL` with the prefixes the file passes (`modelSettings('LLM')`).
  const templates = [...source.matchAll(/\$\{prefix\}_([A-Z0-9_]+)/g)].map((m) => m[1]!);
  if (templates.length) {
    const prefixes = [...source.matchAll(/\w+\('([A-Z]{2,})'\)/g)].map((m) => m[1]!);
    for (const prefix of prefixes) for (const suffix of templates) found.add(`${prefix}_${suffix}`);
  }
  return [...found];
}

function readmeNames(): string[] {
  const readme = readFileSync(join(root, 'README.md'), 'utf8');
  const section = readme.split(/^## /m).find((s) => s.startsWith('Configuration\n'))!;
  const names = section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .flatMap((line) => [...line.split('|')[1]!.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]!));
  return names;
}

const readmeTable = () => new Set(readmeNames());

describe("README's configuration table", () => {
  const files = [...sourceFiles(join(root, 'shared')), ...sourceFiles(join(root, 'voice')), join(root, 'bin/local.ts')];
  const read = new Map<string, string[]>();
  for (const file of files) {
    for (const name of settingsRead(readFileSync(file, 'utf8'))) read.set(name, [...(read.get(name) ?? []), relative(root, file)]);
  }

  it('finds the settings however the code reads them', () => {
    expect(settingsRead("process.env.PORT; process.env['A_B']; env.REALTIME_MODEL; arnVariable: 'X_ARN'; const C_SETTING = 'C_D'")).toEqual(expect.arrayContaining(['PORT', 'A_B', 'REALTIME_MODEL', 'X_ARN', 'C_D']));
    expect(settingsRead("const raw = process.env[name]; int('API_KEY_CACHE_SECONDS', 10)")).toContain('API_KEY_CACHE_SECONDS');
    expect(settingsRead("process.env[`${prefix}_MODEL`]; modelSettings('LLM')")).toContain('LLM_MODEL');
    // The ones this table must have are found in the code.
    expect([...read.keys()]).toEqual(expect.arrayContaining(['PORT', 'VOICE_PORT', 'DYNAMODB_START_TIMEOUT_SECONDS', 'LLM_CONTEXT_TOKENS', 'REALTIME_API_KEY', 'LLM_MODEL', 'ANALYSIS_TIMEOUT_MS']));
  });

  it('lists every setting the runtime reads', () => {
    const table = readmeTable();
    const missing = [...read].filter(([name]) => !table.has(name) && !(name in SET_FOR_ITSELF)).map(([name, where]) => `${name} (read in ${where.join(', ')})`);
    expect(missing).toEqual([]);
  });

  it('lists each setting once', () => {
    const names = readmeNames();
    expect(names.filter((name, i) => names.indexOf(name) !== i)).toEqual([]);
  });

  it('lists nothing the runtime does not read', () => {
    const stale = [...readmeTable()].filter((name) => !read.has(name));
    expect(stale).toEqual([]);
  });
});
