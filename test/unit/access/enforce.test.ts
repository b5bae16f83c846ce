import { AccessDeniedException, checkDynamo, checkS3, iamLike, runAs } from '../../../shared/access/enforce';
import type { Access } from '../../../shared/http/operation';

const as = (access: Access, work: () => void) => () => runAs({ name: 'fn', access }, work);

describe('IAM pattern matching', () => {
  it.each([
    ['orgs/*/kb/*', 'orgs/o1/kb/k1/docs/a/original', true],
    ['orgs/*/kb/*', 'orgs/o1/recordings/r.wav', false],
    ['uploads/*', 'uploads/o1/u1', true],
    ['uploads/?', 'uploads/ab', false],
    ['a.b*', 'aXb', false],
  ])('%s matches %s: %s', (pattern, value, expected) => {
    expect(iamLike(pattern, value)).toBe(expected);
  });
});

describe('checks outside and inside a function', () => {
  it('checks nothing outside a function', () => {
    expect(() => checkDynamo('ScanCommand', { TableName: 't' }, 't')).not.toThrow();
  });

  it('never allows Scan, even with read and write', () => {
    expect(as({ table: 'RW' }, () => checkDynamo('ScanCommand', { TableName: 't' }, 't'))).toThrow(AccessDeniedException);
  });

  it('names the index a query reads in the refused resource', () => {
    expect(as({}, () => checkDynamo('QueryCommand', { TableName: 't', IndexName: 'gsi1' }, 't'))).toThrow(/dynamodb:Query on resource: table\/t\/index\/gsi1/);
  });

  it('checks every key of a DeleteObjects and both sides of a CopyObject', () => {
    const access: Access = { bucket: 'RW', bucketPrefixes: ['orgs/*/kb/*'] };
    const del = (keys: string[]) => checkS3('DeleteObjectsCommand', { Bucket: 'b', Delete: { Objects: keys.map((Key) => ({ Key })) } }, 'b');
    expect(as(access, () => del(['orgs/o/kb/k/a']))).not.toThrow();
    expect(as(access, () => del(['orgs/o/kb/k/a', 'orgs/o/calls/c.wav']))).toThrow(/s3:DeleteObject on resource: b\/orgs\/o\/calls\/c.wav/);
    const copy = (source: string) => checkS3('CopyObjectCommand', { Bucket: 'b', CopySource: `b/${source}`, Key: 'orgs/o/kb/k/b' }, 'b');
    expect(as(access, () => copy('orgs/o/kb/k/a'))).not.toThrow();
    expect(as(access, () => copy('secret/x'))).toThrow(/s3:GetObject/);
    expect(as(access, () => checkS3('GetObjectCommand', { Bucket: 'other', Key: 'orgs/o/kb/k/a' }, 'b'))).toThrow(/other\/orgs/);
  });
});
