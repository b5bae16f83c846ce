import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * HTTPS in front of the plain-HTTP stand-ins, on `localhost`: production refuses a tool's or a
 * webhook endpoint's URL that is not https (shared/domain/tools/service.ts, webhooks/url.ts), so
 * the stack tier gives them one. `https://localhost:<port>/<target port>/path` reaches
 * `http://127.0.0.1:<target port>/path` (the stand-in sees its own path). The certificate is
 * self-signed for localhost: the functions accept it through the tier's network settings
 * (NODE_TLS_REJECT_UNAUTHORIZED=0), the one thing of production's TLS the tier does not exercise.
 */
export interface TlsFront {
  /** The https URL that reaches `httpUrl` (http://127.0.0.1:PORT[/path]). */
  secure(httpUrl: string): string;
  close(): Promise<void>;
}

export async function startTlsFront(): Promise<TlsFront> {
  const dir = mkdtempSync(join(tmpdir(), 'vap-tls-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=localhost', '-days', '1', '-addext', 'subjectAltName=DNS:localhost', '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem')], { stdio: 'ignore' });
    const key = readFileSync(join(dir, 'key.pem'));
    const cert = readFileSync(join(dir, 'cert.pem'));
    const server = createServer({ key, cert }, (req, res) => {
      const m = /^\/(\d+)(\/.*)?$/.exec(req.url ?? '/');
      if (!m) return void res.writeHead(404).end('no target port');
      const upstream = httpRequest({ host: '127.0.0.1', port: Number(m[1]), path: m[2] ?? '/', method: req.method, headers: { ...req.headers, host: `127.0.0.1:${m[1]}` } }, (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      });
      upstream.on('error', (err) => res.headersSent ? res.destroy() : res.writeHead(502).end(err.message));
      req.pipe(upstream);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    return {
      secure(httpUrl: string) {
        const u = new URL(httpUrl);
        return `https://localhost:${port}/${u.port}${u.pathname === '/' ? '' : u.pathname}${u.search}`;
      },
      close: () => new Promise<void>((r) => server.close(() => r())),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
