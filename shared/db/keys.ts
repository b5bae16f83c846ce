/**
 * Every key string of the table is built here and nowhere else. Tenant data always lives
 * under `ORG#<orgId>`, so a query can only ever reach the caller's own organization.
 * docs/data-model.md lists every access pattern built from these keys; a unit test pins it.
 */
export type Key = { pk: string; sk: string };

const org = (orgId: string) => `ORG#${orgId}`;

/** Entity prefixes of sort keys inside an organization's partition. */
export const Prefix = {
  agent: 'AGENT#',
  tool: 'TOOL#',
  widget: 'WIDGET#',
  knowledgeBase: 'KB#',
  apiKey: 'APIKEY#',
  idempotency: 'IDEM#',
  counter: 'COUNT#',
} as const;

export const keys = {
  /** The organization record. */
  organization: (orgId: string): Key => ({ pk: org(orgId), sk: 'ORG' }),
  /** The admin directory of organizations: one fixed partition, read only by the admin command. */
  organizationDirectory: (orgId: string): Key => ({ pk: 'DIRECTORY#ORGS', sk: org(orgId) }),
  directoryPartition: 'DIRECTORY#ORGS',
  /** An exact count of one collection (optionally one status within it). */
  counter: (orgId: string, collection: string): Key => ({ pk: org(orgId), sk: `${Prefix.counter}${collection}` }),
  /** An API key's record inside its organization (name, prefix, dates; never the secret). */
  apiKey: (orgId: string, keyId: string): Key => ({ pk: org(orgId), sk: `${Prefix.apiKey}${keyId}` }),
  /** The global lookup of a key by the SHA-256 of its secret: the one item authentication reads. */
  apiKeyByHash: (hash: string): Key => ({ pk: `KEYHASH#${hash}`, sk: 'KEYHASH' }),
  agent: (orgId: string, id: string): Key => ({ pk: org(orgId), sk: `${Prefix.agent}${id}` }),
  tool: (orgId: string, id: string): Key => ({ pk: org(orgId), sk: `${Prefix.tool}${id}` }),
  widget: (orgId: string, id: string): Key => ({ pk: org(orgId), sk: `${Prefix.widget}${id}` }),
  knowledgeBase: (orgId: string, id: string): Key => ({ pk: org(orgId), sk: `${Prefix.knowledgeBase}${id}` }),
  /** A stored answer to a POST sent with an Idempotency-Key. */
  idempotency: (orgId: string, operationId: string, idempotencyKey: string): Key => ({
    pk: org(orgId),
    sk: `${Prefix.idempotency}${operationId}#${idempotencyKey}`,
  }),
  /** The partition of one organization, for collection queries. */
  partition: org,
};

/** GSI1: a collection filtered by status, `ORG#<org>#<ENTITY>#<status>` → id. */
export const gsi1 = {
  name: 'gsi1',
  byStatus: (orgId: string, entity: string, status: string) => `${org(orgId)}#${entity}#STATUS#${status}`,
};

/**
 * GSI2: what a public widget needs without an API key. A widget item and every agent tied
 * to it share `WIDGET#<widgetId>`, so the public config is one Query.
 */
export const gsi2 = {
  name: 'gsi2',
  widget: (widgetId: string) => `WIDGET#${widgetId}`,
  widgetSelf: 'WIDGET',
  agentOfWidget: (agentId: string) => `AGENT#${agentId}`,
};

/** Counter collection names. */
export const collections = {
  agents: 'agents',
  agentsByStatus: (status: string) => `agents#status#${status}`,
  tools: 'tools',
  widgets: 'widgets',
  apiKeys: 'api-keys',
};
