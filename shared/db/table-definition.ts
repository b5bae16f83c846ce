/**
 * The one table's shape, shared by the CDK stack and the local runtime so both build the
 * same keys and indexes. Every attribute is a string; `ttl` (epoch seconds) expires items
 * such as stored idempotent answers.
 */
export const tableDefinition = {
  partitionKey: 'pk',
  sortKey: 'sk',
  ttlAttribute: 'ttl',
  indexes: [
    { name: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk' },
    { name: 'gsi2', partitionKey: 'gsi2pk', sortKey: 'gsi2sk' },
  ],
} as const;
