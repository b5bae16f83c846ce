/**
 * The README's `npm start`, as a user runs it: a child process on a port of its own, answering
 * HTTP with the key it was given, keeping data across a restart, and stopping cleanly on Ctrl-C
 * without leaving a Java process behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateApiKey } from '../../shared/domain/api-keys/secret';

const root = join(__dirname, '..', '..');

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function start(env: Record<string, string>, viaNpm = false): Promise<{ child: ChildProcess; output: () => string }> {
  const child = viaNpm
    ? spawn('npm', ['start'], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, ['--import', 'tsx', 'bin/local.ts'], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`npm start did not become ready:\n${output}`)), 150_000);
    const check = setInterval(() => {
      if (/ready in/.test(output)) {
        clearInterval(check);
        clearTimeout(timer);
        resolve({ child, output: () => output });
      }
    }, 100);
    child.once('exit', (code) => {
      clearInterval(check);
      clearTimeout(timer);
      reject(new Error(`npm start exited with ${code}:\n${output}`));
    });
  });
}

/** Runs `npm start`'s script to its end (a start-up that fails): its exit code and output. */
function runToExit(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'bin/local.ts'], { cwd: root, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  return new Promise((resolve) => child.once('close', (code) => resolve({ code, output })));
}

/** A port some other program holds for the duration of `use`. */
async function withTakenPort<T>(use: (port: number) => Promise<T>): Promise<T> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    return await use((server.address() as { port: number }).port);
  } finally {
    await new Promise((r) => server.close(r));
  }
}

function stop(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.kill('SIGINT');
  });
}

/** Waits (bounded) for a process to be gone; false when it is still there at the end. */
async function gone(pid: number, withinMs = 15_000): Promise<boolean> {
  for (const until = Date.now() + withinMs; Date.now() < until; await new Promise((r) => setTimeout(r, 100))) {
    if (!alive(pid)) return true;
  }
  return !alive(pid);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('npm start', () => {
  it('serves the API with the given key, keeps data across a restart and stops cleanly on SIGINT', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vap-npm-start-'));
    const key = generateApiKey();
    const port = await freePort();
    const env = { PORT: String(port), DATA_DIR: dataDir, LOCAL_API_KEYS: key, LOG_LEVEL: 'WARN' };
    const base = `http://127.0.0.1:${port}/api/v1`;

    // The first start with a language model configured (never called here), the second with none.
    const first = await start({ ...env, LLM_PROVIDER: 'openai', LLM_BASE_URL: 'http://127.0.0.1:11434/v1', LLM_MODEL: 'llama3.2', LLM_API_KEY: '' });
    expect(first.output()).toContain(`http://127.0.0.1:${port}/api/v1`);
    expect(first.output()).toContain(key);
    // The start-up lines say which models answer.
    expect(first.output()).toMatch(/Conversation: llama3\.2 at http:\/\/127\.0\.0\.1:11434\/v1/);
    expect(first.output()).toMatch(/Speech: +gpt-realtime at wss:\/\/api\.openai\.com\/v1\/realtime; REALTIME_API_KEY is not set/);
    expect(first.output()).toMatch(/Analyzer: +local rules, not a language model/);
    expect(first.output()).not.toMatch(/answered by the local rules/);
    const created = await fetch(`${base}/agents/`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'survives restarts' }) });
    expect(created.status).toBe(200);
    const { id } = ((await created.json()) as { data: { id: string } }).data;
    const javaPid = (JSON.parse(readFileSync(join(dataDir, 'runtime.json'), 'utf8')) as { dynamoPid?: number; pid: number }).dynamoPid;
    expect(await stop(first.child)).toBe(0);
    expect(javaPid).toEqual(expect.any(Number));
    expect(alive(javaPid!)).toBe(false);

    const second = await start(env);
    expect(second.output()).toMatch(/Conversation: local rules, not a language model/);
    expect(second.output()).toMatch(/answered by the local rules/);
    const again = await fetch(`${base}/agents/${id}`, { headers: { 'x-api-key': key } });
    expect(again.status).toBe(200);
    expect(((await again.json()) as { data: { name: string } }).data.name).toBe('survives restarts');
    expect(await stop(second.child)).toBe(0);
  }, 360_000);

  it('stops the runtime and its DynamoDB Local when npm itself gets SIGTERM (npm start, as a process manager stops it)', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vap-npm-start-'));
    const port = await freePort();
    const npm = await start({ PORT: String(port), DATA_DIR: dataDir, LOCAL_API_KEYS: generateApiKey(), LOG_LEVEL: 'WARN' }, true);
    const runtime = JSON.parse(readFileSync(join(dataDir, 'runtime.json'), 'utf8')) as { dynamoPid: number; pid: number };
    expect(runtime.pid).not.toBe(npm.child.pid);
    const exited = new Promise((resolve) => npm.child.once('exit', resolve));
    process.kill(npm.child.pid!, 'SIGTERM');
    await exited;
    const runtimeGone = await gone(runtime.pid);
    const javaGone = await gone(runtime.dynamoPid);
    // Never leave them behind, even when the test fails.
    for (const pid of [runtime.pid, runtime.dynamoPid]) if (alive(pid)) process.kill(pid, 'SIGKILL');
    expect({ runtimeGone, javaGone }).toEqual({ runtimeGone: true, javaGone: true });
  }, 360_000);

  it.each(['PORT', 'VOICE_PORT'])('reports a taken %s at once, naming it, before DynamoDB Local starts', async (setting) => {
    const dataDir = mkdtempSync(join(tmpdir(), 'vap-npm-start-'));
    const { code, output } = await withTakenPort(async (taken) => {
      const other: Record<string, string> = setting === 'PORT' ? { VOICE_PORT: '' } : { PORT: String(await freePort()) };
      return runToExit({ [setting]: String(taken), ...other, DATA_DIR: dataDir, LOCAL_API_KEYS: generateApiKey(), LOG_LEVEL: 'WARN' });
    });
    expect(code).toBe(1);
    expect(output).toMatch(new RegExp(`Port \\d+ \\(${setting}\\) is already in use`));
    expect(output).toMatch(new RegExp(`choose another port, e\\.g\\. ${setting}=\\d+ npm start`));
    expect(output).not.toMatch(/local runtime \(ready in/);
    // Nothing slow was started: DynamoDB Local never created its folder.
    expect(existsSync(join(dataDir, 'dynamodb'))).toBe(false);
  }, 60_000);
});
