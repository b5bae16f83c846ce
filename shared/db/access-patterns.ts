/**
 * Every access pattern of the table, named, with its key condition. docs/data-model.md is
 * generated from this list (`npm run docs:data-model`) and a test keeps the two in step, so
 * a new pattern cannot ship undocumented. `ORG` stands for `ORG#<organizationId>`.
 */
export interface AccessPattern {
  name: string;
  operation: 'GetItem' | 'ConditionCheck' | 'Query' | 'TransactWriteItems' | 'PutItem' | 'UpdateItem' | 'DeleteItem';
  index: 'table' | 'gsi1' | 'gsi2';
  key: string;
  notes: string;
}

export const accessPatterns: AccessPattern[] = [
  { name: 'Authenticate an API key', operation: 'GetItem', index: 'table', key: 'pk = KEYHASH#<sha256(key)>, sk = KEYHASH', notes: 'the only global item read per request; cached in memory for API_KEY_CACHE_SECONDS' },
  { name: 'Get an organization', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = ORG', notes: '' },
  { name: 'List organizations (admin)', operation: 'Query', index: 'table', key: 'pk = DIRECTORY#ORGS', notes: 'admin command only' },
  { name: 'Count a collection', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = COUNT#<collection>', notes: 'counter `n`, written in the same transaction as the items it counts' },
  { name: 'List API keys', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, APIKEY#)', notes: 'never returns the hash' },
  { name: 'Get an agent', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = AGENT#<id>', notes: '' },
  { name: 'List agents', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, AGENT#)', notes: 'UUID v7 ids sort by creation time' },
  { name: 'List agents by status', operation: 'Query', index: 'gsi1', key: 'gsi1pk = ORG#AGENT#STATUS#<status>', notes: 'total from COUNT#agents#status#<status>' },
  { name: 'Agents selecting a tool (tool delete)', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, AGENT#)', notes: 'projected to id, selected_tools, version; only on tool deletion' },
  { name: 'Get a tool', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = TOOL#<id>', notes: '' },
  { name: 'List tools', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, TOOL#)', notes: '' },
  { name: 'Get widget settings', operation: 'GetItem', index: 'table', key: 'pk = ORG, sk = WIDGET#<id>', notes: '' },
  { name: 'List widget settings', operation: 'Query', index: 'table', key: 'pk = ORG, begins_with(sk, WIDGET#)', notes: '' },
  { name: 'Public widget config', operation: 'Query', index: 'gsi2', key: 'gsi2pk = WIDGET#<id>', notes: 'the widget item (gsi2sk = WIDGET) and its agents (gsi2sk = AGENT#<id>) in one query, no API key' },
  { name: 'Referenced knowledge base exists', operation: 'ConditionCheck', index: 'table', key: 'pk = ORG, sk = KB#<id>', notes: 'inside the agent write that references it' },
  { name: 'Claim / replay an Idempotency-Key', operation: 'PutItem', index: 'table', key: 'pk = ORG, sk = IDEM#<operationId>#<key>', notes: 'conditional put; expires through `ttl` after 24 h' },
];

/** The markdown table of the access patterns. */
export function accessPatternTable(): string {
  const rows = accessPatterns.map((p) => `| ${p.name} | ${p.operation} | ${p.index} | \`${p.key}\` | ${p.notes} |`);
  return ['| access pattern | operation | index | key condition | notes |', '|---|---|---|---|---|', ...rows].join('\n');
}
