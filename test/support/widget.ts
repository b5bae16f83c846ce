import { createServer, request, type IncomingHttpHeaders, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ContractViolation, contract } from './contract';
import type { TestPlatform } from './platform';
import { until } from './until';

/** The page the knowledge base is built from (a url document, so answers carry a source link). */
export const FAQ_HTML =
  '<html><head><title>Harbor Street FAQ</title></head><body><main><h1>Opening hours</h1><p>The Harbor Street store opens at 9 am and closes at 6 pm on weekdays. On Saturdays the store opens at 10 am. Parking is free behind the building.</p></main></body></html>';

/** A tiny HTTP server on 127.0.0.1 (a page's site, a knowledge-base page). */
export async function startSite(listener: RequestListener): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const server = createServer(listener);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    server,
    url,
    close: () =>
      new Promise<void>((r) => {
        server.close(() => r());
        server.closeAllConnections();
      }),
  };
}

export interface WidgetSetup {
  widgetId: string;
  agentId: string;
  kbId: string;
}

/**
 * A widget tied to one active agent whose knowledge base holds `faqUrl` (indexed before this
 * returns), and optionally a `function` tool the page answers, other tools (`toolIds`) and
 * agent fields (`agent`) over the defaults.
 */
export async function setUpWidget(
  local: TestPlatform,
  input: { faqUrl: string; allowedOrigins: string[]; functionTool?: string; widget?: Record<string, unknown>; agent?: Record<string, unknown>; toolIds?: string[] },
): Promise<WidgetSetup> {
  const api = local.api;
  const kb = await api('POST', '/api/v1/rag/knowledge-bases', { body: { name: 'Harbor Street FAQ' } });
  if (kb.status !== 200) throw new Error(`knowledge base: ${JSON.stringify(kb.body)}`);
  const kbId = kb.body.data.id as string;
  const ingest = await api('POST', '/api/v1/rag/ingest', { body: { kb_id: kbId, url: input.faqUrl } });
  const docId = ingest.body.data.documents[0].doc_id as string;
  const org = local.platform.keys[0]!.organizationId;
  await until(() => api('GET', `/api/v1/rag/document?org_id=${org}&doc_id=${encodeURIComponent(docId)}`), (r) => r.body.data?.status === 'indexed', 'indexing');
  const widget = await api('POST', '/api/v1/widget-settings', {
    body: { name: 'Site widget', title: 'Harbor Street', greeting: 'Welcome to Harbor Street!', allowed_origins: input.allowedOrigins, ...input.widget },
  });
  if (widget.status !== 200) throw new Error(`widget: ${JSON.stringify(widget.body)}`);
  const tools: unknown[] = (input.toolIds ?? []).map((id) => ({ tool_id: id }));
  if (input.functionTool) {
    const tool = await api('POST', '/api/v1/tools', {
      body: { name: 'Cart', type: 'function', definition: { name: input.functionTool, description: 'The visitor\'s cart total', parameters: { type: 'object', properties: { currency: { type: 'string' } }, required: [] } } },
    });
    if (tool.status !== 200) throw new Error(`tool: ${JSON.stringify(tool.body)}`);
    tools.push({ tool_id: tool.body.data.id });
  }
  const agent = await api('POST', '/api/v1/agents', {
    body: {
      name: 'Front desk', agent_name: 'Ava', prompt: 'You are {{agent_name}}, the front desk of Harbor Street.',
      begin_message: 'Hi, I am {{agent_name}}. Ask me anything about the store.', knowledge_base: kbId,
      widget_settings_id: widget.body.data.id, selected_tools: tools, ...input.agent,
    },
  });
  if (agent.status !== 200) throw new Error(`agent: ${JSON.stringify(agent.body)}`);
  return { widgetId: widget.body.data.id, agentId: agent.body.data.id, kbId };
}

export interface RawReply {
  status: number;
  headers: IncomingHttpHeaders;
  body: any;
}

/**
 * One request from a chosen local address (the loopback network is a /8: 127.0.0.2 is another
 * client to the server), as a browser page would send it.
 */
export function send(url: string, options: { method?: string; headers?: Record<string, string>; body?: unknown; from?: string } = {}): Promise<RawReply> {
  const payload = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        localAddress: options.from,
        headers: { ...(payload ? { 'content-type': 'application/json' } : {}), ...options.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown = text;
          if (/json/.test(String(res.headers['content-type']))) body = text ? JSON.parse(text) : undefined;
          // Held against docs/openapi.json as every answer of the acceptance tier (test/support/contract.ts).
          const { pathname, search } = new URL(url);
          const found = contract().check({ method: options.method ?? 'GET', path: `${pathname}${search}`, status: res.statusCode!, contentType: res.headers['content-type'] ?? null, text });
          if (found.length) reject(new ContractViolation(`The response is not as docs/openapi.json says:\n${found.join('\n')}`));
          else resolve({ status: res.statusCode!, headers: res.headers, body });
        });
      },
    );
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}
