import { lookup as dnsLookup } from 'node:dns/promises';
import * as http from 'node:http';
import * as https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { config } from '../config';
import { inSpan, SpanKind, tracingActive, withTraceHeaders } from '../telemetry/tracing';

/**
 * The egress guard for every fetch the platform makes on a user's behalf (the crawler, document
 * ingestion). A host is resolved first and every address it resolves to must be public; the
 * connection is then pinned to the checked address (a custom `lookup`), so a second DNS answer
 * (DNS rebinding) cannot swap it. Redirects are followed by hand and every hop is checked again.
 * In the local runtime `ALLOW_LOOPBACK_FETCH=true` opens loopback, and only loopback.
 */

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'metadata'
  | 'unspecified'
  | 'multicast'
  | 'reserved';

/** Why a target was refused; `url` is the URL (or hop) refused. */
export class EgressRefusedError extends Error {
  constructor(readonly url: string, readonly reason: string) {
    super(`${url} is refused: ${reason}`);
    this.name = 'EgressRefusedError';
  }
}

/** A fetch that failed (network, timeout, status); the message is safe to show to the caller. */
export class FetchFailedError extends Error {
  constructor(readonly url: string, message: string, readonly status?: number) {
    super(message);
    this.name = 'FetchFailedError';
  }
}

type V4Range = [base: number, bits: number, cls: AddressClass];

const v4 = (a: string) => a.split('.').reduce((n, p) => n * 256 + Number(p), 0);

// Order matters: the first match wins (the metadata address sits inside link-local).
const V4_RANGES: V4Range[] = (
  [
    ['169.254.169.254', 32, 'metadata'],
    ['0.0.0.0', 8, 'unspecified'],
    ['10.0.0.0', 8, 'private'],
    ['100.64.0.0', 10, 'private'], // carrier-grade NAT
    ['127.0.0.0', 8, 'loopback'],
    ['169.254.0.0', 16, 'link-local'],
    ['172.16.0.0', 12, 'private'],
    ['192.0.0.0', 24, 'reserved'], // IETF protocol assignments
    ['192.0.2.0', 24, 'reserved'], // documentation
    ['192.88.99.0', 24, 'reserved'], // 6to4 relay anycast
    ['192.168.0.0', 16, 'private'],
    ['198.18.0.0', 15, 'reserved'], // benchmarking
    ['198.51.100.0', 24, 'reserved'],
    ['203.0.113.0', 24, 'reserved'],
    ['224.0.0.0', 4, 'multicast'],
    ['240.0.0.0', 4, 'reserved'], // includes 255.255.255.255
  ] as const
).map(([a, bits, cls]) => [v4(a), bits, cls]);

function classifyV4(address: string): AddressClass {
  const n = v4(address);
  for (const [base, bits, cls] of V4_RANGES) {
    const size = 2 ** (32 - bits);
    if (n >= base && n < base + size) return cls;
  }
  return 'public';
}

/** The eight 16-bit groups of an IPv6 address (handles `::` and a dotted IPv4 tail). */
function v6Groups(address: string): number[] {
  let text = address.toLowerCase().replace(/^\[|\]$/g, '').split('%')[0]!;
  const dotted = text.match(/(\d+\.\d+\.\d+\.\d+)$/);
  if (dotted) {
    const n = v4(dotted[1]!);
    text = text.slice(0, -dotted[1]!.length) + `${(n >>> 16).toString(16)}:${(n & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.split('::') as [string, string | undefined];
  const parse = (s: string) => (s ? s.split(':').map((g) => parseInt(g, 16)) : []);
  const h = parse(head);
  const t = tail === undefined ? [] : parse(tail);
  const fill = tail === undefined ? [] : new Array(8 - h.length - t.length).fill(0);
  return [...h, ...fill, ...t];
}

const embeddedV4 = (g: number[]) => `${g[6]! >> 8}.${g[6]! & 255}.${g[7]! >> 8}.${g[7]! & 255}`;

function classifyV6(address: string): AddressClass {
  const g = v6Groups(address);
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (g.every((x) => x === 0)) return 'unspecified';
  if (zeroUpTo(7) && g[7] === 1) return 'loopback';
  // IPv4-mapped (::ffff:a.b.c.d) and the deprecated IPv4-compatible (::a.b.c.d): judge the IPv4 inside.
  if (zeroUpTo(5) && g[5] === 0xffff) return classifyV4(embeddedV4(g));
  if (zeroUpTo(6)) return classifyV4(embeddedV4(g));
  // NAT64 (64:ff9b::/96) reaches the IPv4 inside.
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) return classifyV4(embeddedV4(g));
  // The EC2 instance metadata service over IPv6.
  if (g[0] === 0xfd00 && g[1] === 0x0ec2 && g.slice(2, 7).every((x) => x === 0) && g[7] === 0x254) return 'metadata';
  if ((g[0]! & 0xffc0) === 0xfe80) return 'link-local';
  if ((g[0]! & 0xfe00) === 0xfc00) return 'private'; // unique local fc00::/7
  if ((g[0]! & 0xff00) === 0xff00) return 'multicast';
  // Only global unicast (2000::/3) is public, minus documentation, Teredo, 6to4 and ORCHID ranges.
  if ((g[0]! & 0xe000) !== 0x2000) return 'reserved';
  if (g[0] === 0x2001 && g[1] === 0x0db8) return 'reserved';
  if (g[0] === 0x2001 && g[1]! < 0x0200) return 'reserved'; // 2001::/23 IETF protocol assignments (Teredo, ORCHID…)
  if (g[0] === 0x2002) return classifyV4(`${g[1]! >> 8}.${g[1]! & 255}.${g[2]! >> 8}.${g[2]! & 255}`); // 6to4
  return 'public';
}

/** What kind of address this is (IPv4 or IPv6, IPv4-mapped IPv6 judged by its IPv4). */
export function classifyAddress(address: string): AddressClass {
  const bare = address.replace(/^\[|\]$/g, '');
  const family = isIP(bare.split('%')[0]!);
  if (family === 4) return classifyV4(bare);
  if (family === 6) return classifyV6(bare);
  throw new Error(`${address} is not an IP address`);
}

/** What every refusal of a loopback target adds: how to open loopback on the local runtime. */
export const LOOPBACK_HINT = 'set ALLOW_LOOPBACK_FETCH=true to allow loopback locally';

/** Whether a host names loopback without resolving it: `localhost` (and `*.localhost`, RFC 6761), 127.0.0.0/8, ::1. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  if (bare === 'localhost' || bare.endsWith('.localhost')) return true;
  return isIP(bare.split('%')[0]!) !== 0 && classifyAddress(bare) === 'loopback';
}

/** Why an address of class `cls` is refused, `what` saying which host or address; a loopback one names ALLOW_LOOPBACK_FETCH. */
const refusedReason = (what: string, cls: AddressClass) => `${what} ${cls === 'loopback' ? `(${LOOPBACK_HINT})` : ''}`.trimEnd();

/** Whether a fetch may connect to an address of this class. */
export function addressAllowed(cls: AddressClass, allowLoopback = config().allowLoopbackFetch): boolean {
  return cls === 'public' || (cls === 'loopback' && allowLoopback);
}

export interface ResolvedTarget {
  address: string;
  family: 4 | 6;
}

/**
 * Resolves a host and checks every address it resolves to (one bad answer refuses the host:
 * a rebinding server could hand out the bad one next). Returns the address to pin.
 */
export async function resolveAllowed(url: string, host: string): Promise<ResolvedTarget> {
  const bare = host.replace(/^\[|\]$/g, '');
  const literal = isIP(bare);
  const answers = literal
    ? [{ address: bare, family: literal }]
    : await dnsLookup(bare, { all: true, verbatim: true }).catch((err: NodeJS.ErrnoException) => {
        throw new FetchFailedError(url, `cannot resolve ${bare} (${err.code ?? err.message})`);
      });
  if (!answers.length) throw new FetchFailedError(url, `cannot resolve ${bare}`);
  for (const a of answers) {
    const cls = classifyAddress(a.address);
    if (!addressAllowed(cls)) throw new EgressRefusedError(url, refusedReason(`${bare} resolves to a ${cls} address (${a.address})`, cls));
  }
  return { address: answers[0]!.address, family: answers[0]!.family as 4 | 6 };
}

/** Checks a URL without resolving names: scheme, literal IP hosts and loopback names (`localhost`). Throws EgressRefusedError. */
export function checkUrlShape(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new EgressRefusedError(raw, 'not an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new EgressRefusedError(raw, `scheme ${url.protocol} is not allowed`);
  if (url.username || url.password) throw new EgressRefusedError(raw, 'credentials in URLs are not allowed');
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    const cls = classifyAddress(host);
    if (!addressAllowed(cls)) throw new EgressRefusedError(raw, refusedReason(`${host} is a ${cls} address`, cls));
  } else if (isLoopbackHost(host) && !addressAllowed('loopback')) {
    // Refused before any lookup: `localhost` is loopback whatever the resolver answers.
    throw new EgressRefusedError(raw, refusedReason(`${host} is a loopback host`, 'loopback'));
  }
  return url;
}

export interface SafeFetchOptions {
  /** Whole request (connect, headers, body) in milliseconds. Default 10 s. */
  timeoutMs?: number;
  /** Body bytes kept; more is cut off and `truncated` set. Default 5 MB. */
  maxBytes?: number;
  /** Redirect hops followed. Default 5. */
  maxRedirects?: number;
  accept?: string;
  /** Stops the request (an overall crawl deadline). */
  signal?: AbortSignal;
}

export interface SafeResponse {
  /** The URL finally answered (after redirects). */
  url: string;
  status: number;
  contentType: string;
  body: Buffer;
  truncated: boolean;
}

export const USER_AGENT = 'VoiceAgentPlatformBot/1.0 (+knowledge-base crawler)';

/** GETs a URL through the egress guard: every hop resolved, checked and pinned. */
export async function safeFetch(raw: string, options: SafeFetchOptions = {}): Promise<SafeResponse> {
  const { timeoutMs = 10_000, maxBytes = 5 * 1024 * 1024, maxRedirects = 5 } = options;
  let current = raw;
  for (let hop = 0; hop <= maxRedirects; hop++) {
    const url = checkUrlShape(current);
    const target = await resolveAllowed(current, url.hostname);
    const res = await requestPinned(url, target, { timeoutMs, maxBytes, accept: options.accept, signal: options.signal });
    if (res.status >= 300 && res.status < 400 && res.location) {
      current = new URL(res.location, url).toString();
      continue;
    }
    return { url: url.toString(), status: res.status, contentType: res.contentType, body: res.body, truncated: res.truncated };
  }
  throw new FetchFailedError(raw, `more than ${maxRedirects} redirects`);
}

interface RawResponse {
  status: number;
  location?: string;
  contentType: string;
  body: Buffer;
  truncated: boolean;
}

/**
 * POSTs once through the egress guard (webhook delivery): the URL checked, its host resolved,
 * checked and pinned; redirects are NOT followed (a 3xx is answered as it is). `timeoutMs`
 * bounds the whole attempt, name resolution included. At most 4 KB of the answer is read.
 */
export async function safePost(raw: string, body: string, headers: Record<string, string>, options: { timeoutMs: number }): Promise<{ status: number }> {
  const { status } = await safeRequest(raw, { method: 'POST', headers, body, timeoutMs: options.timeoutMs, maxBytes: 4096 });
  return { status };
}

/**
 * One request of any method through the egress guard (webhook deliveries and tools): the URL
 * checked, its host resolved, checked and pinned; redirects are NOT followed (a 3xx is answered
 * as it is); `timeoutMs` bounds the whole request, name resolution included; at most `maxBytes`
 * of the answer is kept; an aborted `signal` closes the connection (a tool cancelled at a turn's deadline).
 */
export async function safeRequest(
  raw: string,
  options: { method: string; headers: Record<string, string>; body?: string; timeoutMs: number; maxBytes: number; accept?: string; signal?: AbortSignal },
): Promise<{ status: number; contentType: string; body: Buffer; truncated: boolean }> {
  if (!tracingActive()) return guardedRequest(raw, options);
  // A client span, and its `traceparent` on the request, so a customer's own tracing joins ours.
  const url = checkUrlShape(raw);
  const attributes = { 'http.request.method': options.method, 'server.address': url.hostname, 'url.full': `${url.origin}${url.pathname}` };
  return inSpan(options.method, { kind: SpanKind.CLIENT, attributes }, async (span) => {
    const answer = await guardedRequest(raw, { ...options, headers: withTraceHeaders(options.headers) });
    span?.setAttribute('http.response.status_code', answer.status);
    return answer;
  });
}

async function guardedRequest(
  raw: string,
  options: { method: string; headers: Record<string, string>; body?: string; timeoutMs: number; maxBytes: number; accept?: string; signal?: AbortSignal },
): Promise<{ status: number; contentType: string; body: Buffer; truncated: boolean }> {
  const deadline = Date.now() + options.timeoutMs;
  const url = checkUrlShape(raw);
  let timer: NodeJS.Timeout | undefined;
  const dnsTimeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new FetchFailedError(raw, `timed out after ${options.timeoutMs} ms resolving ${url.hostname}`)), options.timeoutMs);
  });
  const target = await Promise.race([resolveAllowed(raw, url.hostname), dnsTimeout]).finally(() => clearTimeout(timer));
  const res = await requestPinned(url, target, { timeoutMs: Math.max(1, deadline - Date.now()), maxBytes: options.maxBytes, method: options.method, headers: options.headers, body: options.body, accept: options.accept, signal: options.signal });
  return { status: res.status, contentType: res.contentType, body: res.body, truncated: res.truncated };
}

function requestPinned(
  url: URL,
  target: ResolvedTarget,
  opts: { timeoutMs: number; maxBytes: number; accept?: string; signal?: AbortSignal; method?: string; headers?: Record<string, string>; body?: string },
): Promise<RawResponse> {
  // The socket connects to the address checked above, whatever DNS answers now; TLS still
  // verifies the certificate against the host name (servername is the URL's host).
  const pinned: LookupFunction = (_host, options, callback) => {
    if ((options as { all?: boolean }).all) (callback as (e: null, a: { address: string; family: number }[]) => void)(null, [target]);
    else callback(null, target.address, target.family);
  };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<RawResponse>((resolve, reject) => {
    const req = client.request(
      url,
      {
        method: opts.method ?? 'GET',
        lookup: pinned,
        agent: false,
        headers: {
          'user-agent': USER_AGENT,
          accept: opts.accept ?? '*/*',
          'accept-encoding': 'identity',
          ...opts.headers,
          ...(opts.body !== undefined ? { 'content-length': String(Buffer.byteLength(opts.body)) } : {}),
        },
        signal: opts.signal,
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const contentType = String(res.headers['content-type'] ?? '');
        const location = typeof res.headers.location === 'string' ? res.headers.location : undefined;
        if (status >= 300 && status < 400) {
          res.resume();
          resolve({ status, location, contentType, body: Buffer.alloc(0), truncated: false });
          return;
        }
        const parts: Buffer[] = [];
        let size = 0;
        let truncated = false;
        res.on('data', (chunk: Buffer) => {
          if (truncated) return;
          const room = opts.maxBytes - size;
          if (chunk.length > room) {
            parts.push(chunk.subarray(0, room));
            size = opts.maxBytes;
            truncated = true;
            resolve({ status, contentType, body: Buffer.concat(parts), truncated });
            req.destroy();
            return;
          }
          parts.push(chunk);
          size += chunk.length;
        });
        res.on('end', () => resolve({ status, contentType, body: Buffer.concat(parts), truncated }));
        res.on('error', (err) => reject(new FetchFailedError(url.toString(), `reading the response failed: ${err.message}`)));
      },
    );
    const timer = setTimeout(() => req.destroy(new Error(`timed out after ${opts.timeoutMs} ms`)), opts.timeoutMs);
    req.on('close', () => clearTimeout(timer));
    req.on('error', (err) => reject(new FetchFailedError(url.toString(), `request failed: ${err.message}`)));
    req.end(opts.body);
  });
}
