import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';

/**
 * The contract check of the acceptance tier (issue 36.3): every response a test receives through
 * the shared request helper (platform.ts `api`) is held against `docs/openapi.json` — the status
 * must be one the operation declares (or its `default`), and a JSON body must match the schema
 * declared for that status. ajv compiles the document's own schemas (JSON Schema 2020-12, as
 * OpenAPI 3.1 says), so what the reader of the document is promised is what is checked; nothing
 * here restates a shape.
 *
 * Paths outside the API's roots (the local runtime's demo page, its favicon) are not the API and
 * are not checked. A path under them that the document does not have can only answer the
 * platform's 404 (no such route) or 405;
 * bodies of other media types (HTML, JavaScript, TwiML, event streams) are checked for their
 * status and declared media type only.
 */

/** What a response is checked with. */
export interface ObservedResponse {
  method: string;
  /** The request path, query string allowed. */
  path: string;
  status: number;
  contentType: string | null;
  /** The body's text (parsed here when JSON). */
  text: string;
  /** The body was not read (an event stream): status and media type are checked. */
  bodyUnread?: boolean;
}

/** A response the document does not describe. */
export class ContractViolation extends Error {
  override readonly name = 'ContractViolation';
}

interface Operation {
  operationId?: string;
  responses: Record<string, ResponseObject | { $ref: string }>;
}
interface ResponseObject {
  content?: Record<string, { schema?: unknown }>;
}
interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components: { responses?: Record<string, ResponseObject> };
}

const DOCUMENT_ID = 'openapi.json';
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'];

interface Route {
  template: string;
  pattern: RegExp;
  /** Literal segments: a literal path wins over a template that also matches (`/rag/uploads` over `/rag/{x}`). */
  literals: number;
  methods: Record<string, Operation>;
}

export interface Contract {
  /** The mismatches of one response with the document (empty: it is as documented). */
  check(response: ObservedResponse): string[];
}

/** The contract of a document (default: the repository's docs/openapi.json, read once). */
export function loadContract(document?: unknown): Contract {
  const doc = (document ?? JSON.parse(readFileSync(resolve(__dirname, '..', '..', 'docs', 'openapi.json'), 'utf8'))) as OpenApiDocument;
  // Non-strict: the document carries OpenAPI's own keywords (example, discriminator, …) beside JSON Schema's.
  const ajv = new Ajv2020({ strict: false, allErrors: true, validateSchema: false });
  addFormats(ajv);
  ajv.addSchema(doc as object, DOCUMENT_ID);
  const compiled = new Map<string, ValidateFunction>();
  const validator = (pointer: string): ValidateFunction => {
    let fn = compiled.get(pointer);
    if (!fn) {
      fn = ajv.compile({ $ref: `${DOCUMENT_ID}#${pointer}` });
      compiled.set(pointer, fn);
    }
    return fn;
  };
  const routes: Route[] = Object.entries(doc.paths).map(([template, methods]) => {
    const segments = template.split('/');
    const source = segments.map((s) => (/^\{[^}]+\}$/.test(s) ? '[^/]+' : s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))).join('/');
    return { template, pattern: new RegExp(`^${source}/?$`), literals: segments.filter((s) => !s.startsWith('{')).length, methods };
  });

  // The API's roots (`/api/v1/`, `/openai/v1/`): other paths are the local runtime's own pages (the demo, the favicon), not the API.
  const roots = new Set(Object.keys(doc.paths).map((p) => p.split('/').slice(0, 3).join('/') + '/'));
  const inApi = (path: string) => [...roots].some((root) => `${path}/`.startsWith(root));
  const routeOf = (path: string) =>
    routes.filter((r) => r.pattern.test(path)).sort((a, b) => b.literals - a.literals)[0];

  return {
    check(response) {
      const path = response.path.split('?')[0]!;
      const method = response.method.toLowerCase();
      if (!inApi(path)) return [];
      const route = routeOf(path);
      const where = `${response.method.toUpperCase()} ${path} answered ${response.status}`;
      if (!route) return [404, 405].includes(response.status) ? [] : [`${where}, but the document has no path ${path}`];
      const operation = route.methods[method];
      if (!operation || !METHODS.includes(method)) {
        return response.status === 405 ? [] : [`${where}, but the document has no ${response.method.toUpperCase()} on ${route.template}`];
      }
      const name = `${operation.operationId ?? `${method} ${route.template}`}`;
      const statusKey = [String(response.status), `${String(response.status)[0]}XX`, 'default'].find((k) => operation.responses[k]);
      if (!statusKey) {
        return [`${where}: status ${response.status} is not declared for ${name} (declared: ${Object.keys(operation.responses).join(', ')}); body: ${response.text.slice(0, 300)}`];
      }
      let declared = operation.responses[statusKey]!;
      let pointer = `/paths/${escape(route.template)}/${method}/responses/${statusKey}`;
      if ('$ref' in declared) {
        const ref = (declared as { $ref: string }).$ref;
        pointer = ref.slice(1);
        declared = doc.components.responses?.[ref.split('/').pop()!] ?? {};
      }
      const content = (declared as ResponseObject).content;
      const mediaType = (response.contentType ?? '').split(';')[0]!.trim().toLowerCase();
      if (!content) {
        if (response.bodyUnread) return [];
        return response.text.length ? [`${where}: ${name} declares no body for ${statusKey}, but one came (${mediaType}): ${response.text.slice(0, 200)}`] : [];
      }
      // A HEAD answer and a 304 carry headers only.
      if (method === 'head' || (!response.text.length && response.status === 304)) return [];
      const declaredType = Object.keys(content).find((t) => t.toLowerCase() === mediaType);
      if (!declaredType) return [`${where}: ${name} declares ${Object.keys(content).join(', ')} for ${statusKey}, not "${mediaType}"`];
      if (response.bodyUnread || !/json/.test(declaredType) || !content[declaredType]!.schema) return [];
      let body: unknown;
      try {
        body = JSON.parse(response.text);
      } catch {
        return [`${where}: ${name}'s body is not JSON: ${response.text.slice(0, 200)}`];
      }
      const validate = validator(`${pointer}/content/${escape(declaredType)}/schema`);
      if (validate(body)) return [];
      return [
        `${where}: the body does not match ${name}'s ${statusKey} schema:\n` +
          (validate.errors ?? [])
            .slice(0, 10)
            .map((e) => `  ${e.instancePath || '(body)'} ${e.message}${e.params && 'additionalProperty' in e.params ? ` "${String(e.params.additionalProperty)}"` : ''}${e.params && 'allowedValues' in e.params ? ` ${JSON.stringify(e.params.allowedValues)}` : ''}`)
            .join('\n') +
          `\n  body: ${response.text.slice(0, 500)}`,
      ];
    },
  };
}

/** A JSON pointer segment. */
const escape = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

let shared: Contract | undefined;
/** The repository document's contract, loaded on first use. */
export function contract(): Contract {
  shared ??= loadContract();
  return shared;
}
