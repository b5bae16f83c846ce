import { signV4 } from '../../../shared/telemetry/sigv4';

// AWS's Signature Version 4 test suite, "get-vanilla" and "post-x-www-form-urlencoded"-like vectors.
const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' };
const now = new Date('2015-08-30T12:36:00Z');

it('signs as the SigV4 test suite says (get-vanilla)', () => {
  // Prepare
  const request = { method: 'GET', url: new URL('https://example.amazonaws.com/'), headers: {}, body: '' };
  // Act
  const headers = signV4(request, { service: 'service', region: 'us-east-1', credentials, now });
  // Assess
  expect(headers['x-amz-date']).toBe('20150830T123600Z');
  expect(headers.authorization).toBe(
    'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
  );
});

it('signs the session token and the body', () => {
  const request = { method: 'POST', url: new URL('https://xray.us-east-1.amazonaws.com/v1/traces'), headers: { 'Content-Type': 'application/x-protobuf' }, body: new Uint8Array([1, 2, 3]) };
  const headers = signV4(request, { service: 'xray', region: 'us-east-1', credentials: { ...credentials, sessionToken: 'token' }, now });
  expect(headers['x-amz-security-token']).toBe('token');
  expect(headers.authorization).toMatch(/SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature=[0-9a-f]{64}$/);
  const other = signV4({ ...request, body: new Uint8Array([1, 2, 4]) }, { service: 'xray', region: 'us-east-1', credentials: { ...credentials, sessionToken: 'token' }, now });
  expect(other.authorization).not.toBe(headers.authorization);
});
