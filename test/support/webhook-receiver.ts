import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request the receiver got: the raw body exactly as sent, and its headers. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface WebhookReceiver {
  /** Base URL on loopback, e.g. http://127.0.0.1:40123 (any path is accepted). */
  url: string;
  received: Received[];
  /** Statuses to answer next, one per request; then 200. */
  answer(...statuses: number[]): void;
  /** Statuses to answer next on one path only (other endpoints may be receiving the same events). */
  answerOn(path: string, ...statuses: number[]): void;
  /** Forgets the statuses not yet answered. */
  clearAnswers(): void;
  /** Resolves once `count` requests matching `match` arrived (rejects after `timeoutMs`). */
  waitFor(count: number, match?: (r: Received) => boolean, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

/** A receiver on loopback that records every request and answers scripted statuses (200 by default). */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: Received[] = [];
  const script: number[] = [];
  const scriptOf = new Map<string, number[]>();
  const waiters = new Set<() => void>();
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => {
      received.push({ path: req.url ?? '/', headers: req.headers, body: Buffer.concat(parts).toString('utf8'), at: Date.now() });
      const status = scriptOf.get(req.url ?? '/')?.shift() ?? script.shift() ?? 200;
      res.writeHead(status, status >= 300 && status < 400 ? { location: 'http://127.0.0.1:1/elsewhere' } : {});
      res.end('ok');
      for (const w of waiters) w();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    answer: (...statuses) => script.push(...statuses),
    answerOn: (path, ...statuses) => scriptOf.set(path, [...(scriptOf.get(path) ?? []), ...statuses]),
    clearAnswers: () => {
      script.splice(0);
      scriptOf.clear();
    },
    waitFor(count, match = () => true, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const hits = received.filter(match);
          if (hits.length < count) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(hits);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`receiver: ${received.filter(match).length} of ${count} requests after ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Verifies a received delivery with the Standard Webhooks library itself; returns the parsed body. */
export function verifyDelivery(secret: string, r: Received): unknown {
  return new Webhook(secret).verify(r.body, r.headers as Record<string, string>);
}
