import type { Access, Operation } from '../../shared/http/operation';
import { getReadiness } from '../../shared/domain/health/operations';
import { operations } from '../../shared/http/registry';
import { jobs } from '../../shared/jobs/registry';
import { actionsOf, functionFor, jobFunction, synth, type FoundResource, type Synthesized } from './synth';

type Statement = { Action: string | string[]; Resource: unknown; Effect: string; Condition?: Record<string, Record<string, unknown>> };

/**
 * Least privilege over every IAM policy of the synthesized stack (parent and area stacks), not
 * only the functions a test names: a grant added anywhere later is held to the same rules.
 */
describe('least privilege in every role', () => {
  let s: Synthesized;
  let policies: FoundResource[];
  let statements: Statement[];
  let functions: { name: string; access: Access; fn: FoundResource }[];
  beforeAll(() => {
    s = synth();
    policies = s.resources('AWS::IAM::Policy');
    statements = policies.flatMap((p) => p.Properties.PolicyDocument.Statement as Statement[]);
    functions = [
      ...operations.map((op: Operation) => ({ name: op.operationId, access: op.access, fn: functionFor(s, op) })),
      ...jobs.map((job) => ({ name: job.name, access: job.access, fn: jobFunction(s, job) })),
    ];
  });
  const actions = (list: Statement[]) => list.flatMap(actionsOf);

  it('never grants dynamodb:Scan (or DynamoDB action wildcards)', () => {
    expect(statements.length).toBeGreaterThan(100);
    expect(actions(statements).filter((a) => a === 'dynamodb:Scan' || (a.startsWith('dynamodb:') && a.includes('*')))).toEqual([]);
  });

  it('lets KMS users generate data keys and decrypt them, nothing else', () => {
    const kms = actions(statements).filter((a) => a.startsWith('kms:'));
    expect(kms.length).toBeGreaterThan(0);
    expect([...new Set(kms)].sort()).toEqual(['kms:Decrypt', 'kms:GenerateDataKey']);
  });

  it('names exact S3 actions, and lists only where a listing is made, narrowed by s3:prefix', () => {
    const s3 = actions(statements).filter((a) => a.startsWith('s3:'));
    expect(s3.filter((a) => a.includes('*'))).toEqual([]);
    for (const { name, access, fn } of functions) {
      const list = s.statementsOf(fn).filter((st) => actionsOf(st).includes('s3:ListBucket')) as Statement[];
      const lists = access.bucket === 'head' || (!!access.bucket && !!access.bucketList);
      expect({ name, lists: list.length > 0 }).toEqual({ name, lists });
      for (const st of list) {
        if (access.bucket === 'head') expect(st.Condition).toBeUndefined();
        else expect(st.Condition).toEqual({ StringLike: { 's3:prefix': access.bucketPrefixes } });
      }
    }
  });

  it('gives readiness s3:ListBucket (for HeadBucket) on the bucket and no object access', () => {
    const ready = s.statementsOf(functionFor(s, getReadiness));
    expect(actions(ready as Statement[]).filter((a) => a.startsWith('s3:'))).toEqual(['s3:ListBucket']);
    expect(actions(ready as Statement[]).filter((a) => a.startsWith('dynamodb:'))).toContain('dynamodb:GetItem');
  });

  it('lets only telephony functions read the carrier secret, and only token functions the token key', () => {
    // Each secret by its construct's name in the reference; the access flag that grants it.
    const secrets: [RegExp, keyof Access][] = [[/TwilioCredentials/, 'telephony'], [/TokenSigningKey/, 'tokens']];
    const reads = (list: Statement[], secret: RegExp) =>
      list.some((st) => actionsOf(st).some((a) => a.startsWith('secretsmanager:')) && secret.test(JSON.stringify(st.Resource)));
    for (const [secret, flag] of secrets) {
      const readers = functions.filter(({ fn }) => reads(s.statementsOf(fn) as Statement[], secret));
      expect([flag, readers.map((r) => r.name).sort()]).toEqual([flag, functions.filter((f) => f.access[flag]).map((f) => f.name).sort()]);
      expect(readers.length).toBeGreaterThan(0);
    }
    // Every Secrets Manager grant names its secrets: never a wildcard.
    const grants = statements.filter((st) => actionsOf(st).some((a) => a.startsWith('secretsmanager:')));
    expect(grants.filter((st) => JSON.stringify(st.Resource).includes('"*"'))).toEqual([]);
  });

  it('gives every authenticated function UpdateItem on RATE# counters only, through a LeadingKeys condition', () => {
    for (const op of operations) {
      const counters = (s.statementsOf(functionFor(s, op)) as Statement[]).filter((st) => st.Condition?.['ForAllValues:StringLike']);
      if (!op.auth) {
        expect(counters).toEqual([]);
        continue;
      }
      expect(counters).toEqual([
        expect.objectContaining({ Action: 'dynamodb:UpdateItem', Condition: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['RATE#*'] } } }),
      ]);
    }
  });
});
