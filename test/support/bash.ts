import { spawn } from 'node:child_process';

/** Runs a documentation example's script with bash in its own process group, killed (with whatever it started in the background) when it ends or after `timeoutMs`. */
export function runBash(script: string, cwd: string, timeoutMs: number): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', script], { cwd, detached: true, env: { ...process.env, LC_ALL: 'C.UTF-8' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const kill = () => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      stderr += `\n(killed after ${timeoutMs} ms)`;
      kill();
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      kill();
      resolve({ code, stdout, stderr });
    });
  });
}
