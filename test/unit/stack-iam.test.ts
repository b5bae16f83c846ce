import { evaluatePolicy, isAllowed, unsupportedConditionOperators, type ResolvedStatement } from '../../shared/local/stack/iam';

const TABLE = 'arn:aws:dynamodb:us-east-1:000000000000:table/vap';
const BUCKET = 'arn:aws:s3:::vap-bucket';

const allow = (Action: string | string[], Resource: string | string[], Condition?: ResolvedStatement['Condition']): ResolvedStatement => ({
  Effect: 'Allow',
  Action,
  Resource,
  ...(Condition ? { Condition } : {}),
});

describe('evaluatePolicy', () => {
  it('allows a listed action on a listed resource and denies anything else implicitly', () => {
    const statements = [allow(['dynamodb:GetItem', 'dynamodb:Query'], [TABLE, `${TABLE}/index/*`])];

    expect(evaluatePolicy(statements, 'dynamodb:GetItem', TABLE)).toBe('Allowed');
    expect(evaluatePolicy(statements, 'dynamodb:Query', `${TABLE}/index/gsi1`)).toBe('Allowed');
    expect(evaluatePolicy(statements, 'dynamodb:PutItem', TABLE)).toBe('ImplicitDeny');
    expect(evaluatePolicy(statements, 'dynamodb:GetItem', `${TABLE}-other`)).toBe('ImplicitDeny');
    expect(evaluatePolicy([], 'dynamodb:GetItem', TABLE)).toBe('ImplicitDeny');
  });

  it('matches actions case-insensitively with * and ?, resources case-sensitively', () => {
    const statements = [allow(['DynamoDB:Batch*', 's3:?etObject'], [TABLE, `${BUCKET}/calls/*`])];

    expect(isAllowed(statements, 'dynamodb:BatchWriteItem', TABLE)).toBe(true);
    expect(isAllowed(statements, 's3:GetObject', `${BUCKET}/calls/a/b.wav`)).toBe(true);
    expect(isAllowed(statements, 's3:PutObject', `${BUCKET}/calls/x`)).toBe(false);
    expect(isAllowed(statements, 's3:GetObject', `${BUCKET}/Calls/x`)).toBe(false);
    expect(isAllowed(statements, 's3:GetObjectAcl', `${BUCKET}/calls/x`)).toBe(false);
  });

  it('lets an explicit Deny win over any Allow', () => {
    const statements: ResolvedStatement[] = [allow('*', '*'), { Effect: 'Deny', Action: 'dynamodb:DeleteItem', Resource: TABLE }];

    expect(evaluatePolicy(statements, 'dynamodb:DeleteItem', TABLE)).toBe('ExplicitDeny');
    expect(evaluatePolicy(statements, 'dynamodb:PutItem', TABLE)).toBe('Allowed');
  });

  it('supports NotAction and NotResource', () => {
    const statements: ResolvedStatement[] = [{ Effect: 'Allow', NotAction: 'dynamodb:Delete*', NotResource: `${BUCKET}/*` }];

    expect(isAllowed(statements, 'dynamodb:PutItem', TABLE)).toBe(true);
    expect(isAllowed(statements, 'dynamodb:DeleteItem', TABLE)).toBe(false);
    expect(isAllowed(statements, 's3:GetObject', `${BUCKET}/k`)).toBe(false);
  });
});

describe('conditions', () => {
  const rates = [allow('dynamodb:UpdateItem', TABLE, { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': 'RATE#*' } })];

  it('ForAllValues:StringLike dynamodb:LeadingKeys allows only keys that all match', () => {
    expect(isAllowed(rates, 'dynamodb:UpdateItem', TABLE, { 'dynamodb:LeadingKeys': ['RATE#org-1'] })).toBe(true);
    expect(isAllowed(rates, 'dynamodb:UpdateItem', TABLE, { 'dynamodb:LeadingKeys': ['ORG#org-1'] })).toBe(false);
    expect(isAllowed(rates, 'dynamodb:UpdateItem', TABLE, { 'dynamodb:LeadingKeys': ['RATE#a', 'ORG#b'] })).toBe(false);
  });

  it('ForAllValues holds for a missing key, ForAnyValue does not', () => {
    const any = [allow('dynamodb:UpdateItem', TABLE, { 'ForAnyValue:StringLike': { 'dynamodb:LeadingKeys': 'RATE#*' } })];

    expect(isAllowed(rates, 'dynamodb:UpdateItem', TABLE, {})).toBe(true);
    expect(isAllowed(any, 'dynamodb:UpdateItem', TABLE, {})).toBe(false);
    expect(isAllowed(any, 'dynamodb:UpdateItem', TABLE, { 'dynamodb:LeadingKeys': ['RATE#a', 'ORG#b'] })).toBe(true);
  });

  it('s3:prefix with StringLike; a missing key fails a plain operator unless IfExists', () => {
    const list = [allow('s3:ListBucket', BUCKET, { StringLike: { 's3:prefix': ['calls/*', ''] } })];
    const ifExists = [allow('s3:ListBucket', BUCKET, { StringLikeIfExists: { 's3:prefix': 'calls/*' } })];

    expect(isAllowed(list, 's3:ListBucket', BUCKET, { 's3:prefix': 'calls/2024/' })).toBe(true);
    expect(isAllowed(list, 's3:ListBucket', BUCKET, { 's3:prefix': '' })).toBe(true);
    expect(isAllowed(list, 's3:ListBucket', BUCKET, { 's3:prefix': 'secrets/' })).toBe(false);
    expect(isAllowed(list, 's3:ListBucket', BUCKET, {})).toBe(false);
    expect(isAllowed(ifExists, 's3:ListBucket', BUCKET, {})).toBe(true);
    expect(isAllowed(ifExists, 's3:ListBucket', BUCKET, { 's3:prefix': 'other/' })).toBe(false);
  });

  it('negated operators hold for a missing key and fail on a matching value', () => {
    const statements = [allow('s3:GetObject', '*', { StringNotEquals: { 'aws:RequestTag/env': 'prod' } })];

    expect(isAllowed(statements, 's3:GetObject', BUCKET, {})).toBe(true);
    expect(isAllowed(statements, 's3:GetObject', BUCKET, { 'aws:RequestTag/env': 'dev' })).toBe(true);
    expect(isAllowed(statements, 's3:GetObject', BUCKET, { 'aws:RequestTag/env': 'prod' })).toBe(false);
  });

  it('evaluates Bool, Numeric, ArnLike and condition key names case-insensitively', () => {
    const statements = [
      allow('kms:Decrypt', '*', {
        Bool: { 'aws:SecureTransport': 'true' },
        NumericLessThanEquals: { 's3:max-keys': '100' },
        ArnLike: { 'aws:SourceArn': 'arn:aws:lambda:*:000000000000:function:vap-*' },
      }),
    ];
    const context = { 'AWS:securetransport': 'true', 's3:max-keys': '10', 'aws:SourceArn': 'arn:aws:lambda:us-east-1:000000000000:function:vap-calls' };

    expect(isAllowed(statements, 'kms:Decrypt', 'k', context)).toBe(true);
    expect(isAllowed(statements, 'kms:Decrypt', 'k', { ...context, 's3:max-keys': '1000' })).toBe(false);
    expect(isAllowed(statements, 'kms:Decrypt', 'k', { ...context, 'aws:SecureTransport': 'false' })).toBe(false);
    expect(isAllowed(statements, 'kms:Decrypt', 'k', { ...context, 'aws:SourceArn': 'arn:aws:lambda:us-east-1:111111111111:function:vap-calls' })).toBe(false);
  });

  it('requires every operator and every key of a Condition block', () => {
    const statements = [allow('s3:ListBucket', BUCKET, { StringEquals: { 's3:prefix': 'a/', 's3:delimiter': '/' } })];

    expect(isAllowed(statements, 's3:ListBucket', BUCKET, { 's3:prefix': 'a/', 's3:delimiter': '/' })).toBe(true);
    expect(isAllowed(statements, 's3:ListBucket', BUCKET, { 's3:prefix': 'a/' })).toBe(false);
  });
});

describe('unsupported operators', () => {
  const statements = [allow('s3:GetObject', '*', { IpAddress: { 'aws:SourceIp': '10.0.0.0/8' } }), allow('s3:PutObject', '*', { 'ForAnyValue:BinaryEquals': { k: 'AA==' } })];

  it('are listed for the start-up check', () => {
    expect(unsupportedConditionOperators(statements)).toEqual(['IpAddress', 'ForAnyValue:BinaryEquals']);
    expect(unsupportedConditionOperators([allow('*', '*', { 'ForAllValues:StringLikeIfExists': { k: 'v' } })])).toEqual([]);
  });

  it('make evaluation throw an error naming the operator', () => {
    expect(() => evaluatePolicy(statements, 's3:GetObject', BUCKET, {})).toThrow(/Unsupported IAM condition operator "IpAddress"/);
  });
});
