/**
 * The README's `npm start`, as a user runs it: a child process on a port of its own, answering
 * HTTP with the key it was given, keeping data across a restart, and stopping cleanly on Ctrl-C
 * without leaving a Java process behind.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
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
    const timer = setTimeout(() => reject(new Error(`npm start did not become ready:\n${output}`)), 60_000);
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

    const first = await start(env);
    expect(first.output()).toContain(`http://127.0.0.1:${port}/api/v1`);
    expect(first.output()).toContain(key);
    const created = await fetch(`${base}/agents/`, { method: 'POST', headers: { 'x-api-key': key, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'survives restarts' }) });
    expect(created.status).toBe(200);
    const { id } = ((await created.json()) as { data: { id: string } }).data;
    const javaPid = (JSON.parse(readFileSync(join(dataDir, 'runtime.json'), 'utf8')) as { dynamoPid?: number; pid: number }).dynamoPid;
    expect(await stop(first.child)).toBe(0);
    expect(javaPid).toEqual(expect.any(Number));
    expect(alive(javaPid!)).toBe(false);

    const second = await start(env);
    const again = await fetch(`${base}/agents/${id}`, { headers: { 'x-api-key': key } });
    expect(again.status).toBe(200);
    expect(((await again.json()) as { data: { name: string } }).data.name).toBe('survives restarts');
    expect(await stop(second.child)).toBe(0);
  }, 120_000);

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
  }, 120_000);
});
